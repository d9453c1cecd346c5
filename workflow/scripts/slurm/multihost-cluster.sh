#!/usr/bin/env bash
# A Slurm cluster whose nodes are hosts of their own, on this one machine.
#
#   multihost-cluster.sh up [NODES]      start (idempotent; default 4 nodes, 2 CPUs each)
#   multihost-cluster.sh down            stop every daemon and process of its nodes, remove the
#                                        namespaces, the bridge and (in the nodes) their mounts
#   multihost-cluster.sh status          sinfo + squeue (exit 3 when not up)
#   multihost-cluster.sh env             `export SLURM_CONF=...` for sbatch/srun/snakemake here
#   multihost-cluster.sh exec NODE CMD.. run CMD inside node NODE (its network, hostname, mounts)
#   multihost-cluster.sh kill NODE       SIGKILL the node's slurmd and every process on it (a fault)
#   multihost-cluster.sh leftovers       print what of the cluster still exists (namespaces, links,
#                                        daemons, mounts); empty output = nothing
#
# Node i ("node<i>") is a network namespace rsc-node<i> with its own address 10.79.0.<10+i>/24
# on the bridge rsc-br0 (the host side, 10.79.0.1, is the head: slurmctld and munged run there),
# its own hostname (UTS namespace) and its own mount namespace in which /tmp, /dev/shm (tmpfs)
# and Slurm's TmpFS (=/tmp) are private, /etc/hosts lists the cluster and /etc/slurm/slurm.conf
# is this cluster's configuration (Snakemake's job step strips SLURM_CONF). What the nodes share
# is what a cluster shares: the project directory and ~/.cache/repro (the shared file system),
# this cluster's state directory and the munge socket in it. Every process a job starts on a node
# (slurmstepd's children) inherits the node's namespaces.
#
# It lives beside the one-host cluster of local-cluster.sh (own ports, own munged, own state
# directory, no /etc/slurm/slurm.conf on the host), so both can be up at once. The prefix
# rsc-/rscn (REPRO_MH_TAG) and the range 10.79.0.0/24 (REPRO_MH_NET) are this script's alone (systems/mtc/netns.py uses
# rmc-/10.78.0.0/24, systems/homefs rmf-/10.77.0.0/24).
set -euo pipefail

DIR=${REPRO_MH_DIR:-/var/tmp/repro-slurm-mh}
NODES_DEFAULT=${REPRO_MH_NODES:-4}
CPUS=${REPRO_SLURM_CPUS:-2}
MEM=${REPRO_MH_MEM_MB:-8000}   # declared per node (not enforced: no cgroups); 24 GiB here
PARTITION=${REPRO_SLURM_PARTITION:-batch}
NET=${REPRO_MH_NET:-10.79.0}
FIRST_HOST=10
CTLD_PORT=${REPRO_MH_CTLD_PORT:-16827}
SLURMD_PORT=${REPRO_MH_SLURMD_PORT:-16828}
TMP_SIZE=${REPRO_MH_TMP_SIZE:-2g}
SLURMD_TIMEOUT=${REPRO_MH_SLURMD_TIMEOUT:-30}   # s until a silent node is declared DOWN
FUSE_DEV=${REPRO_MH_FUSE_DEV:-/dev/fuse}   # (a test points it elsewhere to see the refusal)
TAG=${REPRO_MH_TAG:-rsc}          # names of this instance's namespaces and links (a test runs a second one)
[[ "$TAG" =~ ^[a-z]{3}$ ]] || { echo "REPRO_MH_TAG must be 3 letters" >&2; exit 2; }
BRIDGE=$TAG-br0
IFS=. read -r _o1 _o2 _o3 <<<"$NET"
# fixed: a bridge without a set MAC takes its ports' lowest one, and it changes as nodes come and go
BRIDGE_MAC=$(printf '02:%02x:%02x:00:00:01' "$_o2" "$_o3")
HEAD_IP=$NET.1
NSP=$TAG-node                   # namespace <tag>-node<i>; veths <tag>n<i>h (host end) / <tag>n<i>p
CONF=$DIR/slurm.conf
SOCK_DIR=$DIR/munge
SOCK=$SOCK_DIR/munge.socket.2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

LOG_TAG=slurm-multihost
# shellcheck source=cluster-common.sh
source "$HERE/cluster-common.sh"
export SLURM_CONF=$CONF

node_count() { grep -c '^NodeName=' "$CONF" 2>/dev/null || echo 0; }

# ------------------------------------------------------------------ checks --
preflight() {
    local n=$1 missing=() b
    [ "$(id -u)" = 0 ] || die "network namespaces, tmpfs mounts and hostnames need root"
    for b in ip unshare nsenter mount umount hostname munged slurmctld slurmd sinfo scontrol; do
        command -v "$b" >/dev/null || missing+=("$b")
    done
    [ ${#missing[@]} -eq 0 ] || die "missing programs: ${missing[*]} (./repro setup installs slurm/munge; iproute2, util-linux)"
    [ -c "$FUSE_DEV" ] || die "no FUSE: $FUSE_DEV is missing (the studies' file systems need it on every node)"
    [ -d /proc/self/ns ] && [ -e /proc/self/ns/net ] && [ -e /proc/self/ns/uts ] && [ -e /proc/self/ns/mnt ] ||
        die "no namespaces: /proc/self/ns/{net,uts,mnt} missing (kernel without namespace support)"
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || die "node count '$n' is not a positive integer"
    [ $((FIRST_HOST + n - 1)) -le 254 ] ||
        die "too few addresses: $n nodes need $NET.$FIRST_HOST-$NET.$((FIRST_HOST + n - 1)), the /24 ends at .254 (at most $((255 - FIRST_HOST)) nodes)"
    # the head address must be ours or free
    local owner
    owner=$(ip -4 -o addr show | awk -v a="$HEAD_IP/" 'index($4, a) == 1 {print $2}' | head -1)
    [ -z "$owner" ] || [ "$owner" = "$BRIDGE" ] || die "address $HEAD_IP is already on interface $owner (set REPRO_MH_NET to another /24)"
    # a namespace can really be made (a container without CAP_SYS_ADMIN cannot)
    local err
    if ! err=$(ip netns add "$TAG-probe" 2>&1); then
        die "cannot create network namespaces: $err"
    fi
    ip netns del "$TAG-probe"
    if ! unshare --uts --mount --propagation private true 2>/dev/null; then
        die "cannot create UTS/mount namespaces (unshare --uts --mount failed)"
    fi
}

# ------------------------------------------------------------------ config --
write_conf() {
    local n=$1 i
    # shellcheck disable=SC2119  # no extra directories here
    make_state_dirs
    {
        echo "# generated by workflow/scripts/slurm/multihost-cluster.sh -- $n nodes, each a namespace host on $BRIDGE"
        echo "ClusterName=repromh"
        echo "SlurmctldHost=$(hostname -s)($HEAD_IP)"
        echo "SlurmctldPort=$CTLD_PORT"
        echo "SlurmdPort=$SLURMD_PORT"
        # each node's /tmp is its own tmpfs: PMIx step directories cannot collide. JobRequeue=0:
        # a job that loses a node fails (NODE_FAIL) instead of going back to the queue: the
        # workflow reports it and a re-run resumes it (Slurm's default would requeue it silently)
        # MinJobAge: the rehearsal judges from scontrol's job records after a study's run, which
        # takes up to ~20 min here; 600 s lost the first jobs' records (records_matched false)
        MIN_JOB_AGE=14400 conf_settings /tmp "$SLURMD_TIMEOUT" "JobRequeue=0"
        # every task's UCX over TCP on the node's own eth0: the nodes share one kernel (one boot_id),
        # so UCX would take them for one machine and move MPI data through shared memory
        echo "TaskProlog=$DIR/task-prolog.sh"
        for ((i = 0; i < n; i++)); do
            echo "NodeName=node$i NodeHostname=node$i NodeAddr=$NET.$((FIRST_HOST + i)) CPUs=$CPUS RealMemory=$MEM State=UNKNOWN"
        done
        echo "PartitionName=$PARTITION Nodes=node[0-$((n - 1))] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
    } >"$CONF"
    {
        echo "127.0.0.1 localhost"
        echo "$HEAD_IP $(hostname -s) head"
        for ((i = 0; i < n; i++)); do echo "$NET.$((FIRST_HOST + i)) node$i"; done
    } >"$DIR/hosts"
    for ((i = 0; i < n; i++)); do mkdir -p "$DIR/spool/node$i"; done
    cat >"$DIR/task-prolog.sh" <<'PROLOG'
#!/bin/sh
# Slurm TaskProlog of the multi-host cluster: each "export" line sets a variable of the task.
# The nodes are namespaces of one kernel (one boot_id), so UCX would judge ranks on different
# nodes to share a machine and move their MPI traffic through System V / POSIX shared memory
# (seen with UCX_LOG_LEVEL=info: rma(sysv/memory posix/memory) between node0 and node1), never
# over the nodes' links. Hold UCX and Open MPI's TCP to the node's own interface, as a real
# cluster's network would carry them; a value the job set already wins.
[ -n "$UCX_TLS" ] || echo "export UCX_TLS=tcp,self"
[ -n "$UCX_NET_DEVICES" ] || echo "export UCX_NET_DEVICES=eth0"
[ -n "$OMPI_MCA_btl_tcp_if_include" ] || echo "export OMPI_MCA_btl_tcp_if_include=eth0"
[ -n "$OMPI_MCA_oob_tcp_if_include" ] || echo "export OMPI_MCA_oob_tcp_if_include=eth0"
PROLOG
    chmod 755 "$DIR/task-prolog.sh"
    cp "$HERE/multihost-node.sh" "$DIR/node-init.sh"
    chmod 755 "$DIR/node-init.sh"
    echo "$n" >"$DIR/nodes"
}

# ------------------------------------------------------------------ network --
ensure_bridge() {
    if [ ! -e "/sys/class/net/$BRIDGE" ]; then
        ip link add "$BRIDGE" address "$BRIDGE_MAC" type bridge
    fi
    ip -4 -o addr show dev "$BRIDGE" | grep -q " $HEAD_IP/" || ip addr add "$HEAD_IP/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
}

make_node_net() {
    local i=$1 ns=$NSP$1 h=${TAG}n$1h p=${TAG}n$1p ip=$NET.$((FIRST_HOST + $1))
    # a dead node's namespace (deleting it also removes its veth pair, asynchronously: hence || true)
    if [ -e "/run/netns/$ns" ]; then ip netns del "$ns" 2>/dev/null || true; fi
    ip link del "$h" 2>/dev/null || true
    for _ in $(seq 20); do [ -e "/sys/class/net/$h" ] || break; sleep 0.1; done
    ip netns add "$ns"
    ip link add "$h" type veth peer name "$p"
    ip link set "$p" netns "$ns"
    ip link set "$h" master "$BRIDGE" up
    ip -n "$ns" link set "$p" name eth0
    ip -n "$ns" addr add "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip neigh flush to "$ip" 2>/dev/null || true
}

start_node() {
    local i=$1
    # nsenter --net: the node's network (not `ip netns exec`, which remounts /sys without the
    # cgroup hierarchy slurmd's start-up reads); unshare: its own hostname and mount namespace,
    # where multihost-node.sh mounts the private directories and execs slurmd (which daemonizes
    # inside them)
    nsenter --net="/run/netns/$NSP$i" unshare --uts --mount --propagation private -- \
        "$DIR/node-init.sh" "node$i" "$CONF" "$DIR" "$TMP_SIZE" "$TAG" >>"$DIR/log/node$i-init.log" 2>&1 ||
        die "slurmd node$i did not start (see $DIR/log/node$i-init.log, $DIR/log/slurmd-node$i.log)"
}

# ------------------------------------------------------------------ up/down --
up() {
    local n=${1:-$NODES_DEFAULT} i ok=1 t0=$SECONDS
    preflight "$n"
    local sig="nodes=$n cpus=$CPUS mem=$MEM net=$NET ports=$CTLD_PORT/$SLURMD_PORT partition=$PARTITION"
    if pid_alive "$DIR/pids/slurmctld.pid" && [ "$(node_count)" = "$n" ] &&
        [ "$(cat "$DIR/signature" 2>/dev/null)" = "$sig" ]; then
        for ((i = 0; i < n; i++)); do pid_alive "$DIR/pids/slurmd-node$i.pid" || ok=0; done
        if [ "$ok" = 1 ]; then
            log "already up ($n nodes)"
            wait_idle "$n" 300
            return
        fi
        # a node died (kill NODE, a crash): bring back only that node, the rest keeps running
        for ((i = 0; i < n; i++)); do
            pid_alive "$DIR/pids/slurmd-node$i.pid" && continue
            log "node$i is down: restarting it"
            kill_ns "$NSP$i" KILL
            sleep 0.2
            make_node_net "$i"
            start_node "$i"
        done
        # a node Slurm already marked DOWN (not responding) comes back when told to resume
        local down_nodes
        for _ in $(seq 60); do
            down_nodes=$(sinfo -h -N -t down,drain,fail -o '%N' 2>/dev/null | sort -u | paste -sd, -)
            [ -z "$down_nodes" ] && break
            scontrol update nodename="$down_nodes" state=resume >/dev/null 2>&1 || true
            sleep 0.5
        done
        wait_idle "$n" 300
        log "up: $n nodes (restarted the dead ones) in $((SECONDS - t0)) s"
        return
    fi
    down quiet
    write_conf "$n"
    [ -d /etc/slurm ] || mkdir -p /etc/slurm   # mount point of each node's own /etc/slurm
    start_munge
    ensure_bridge
    for ((i = 0; i < n; i++)); do make_node_net "$i"; done
    slurmctld -c -f "$CONF" || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
    for ((i = 0; i < n; i++)); do start_node "$i"; done
    wait_idle "$n" 300
    echo "$sig" >"$DIR/signature"
    log "up: $n nodes (node0..node$((n - 1)) = $NET.$FIRST_HOST..$NET.$((FIRST_HOST + n - 1)), head $HEAD_IP) in partition $PARTITION in $((SECONDS - t0)) s; export SLURM_CONF=$CONF"
}

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NSP}[0-9]+$" || true; }

# every process whose network namespace is node NS (slurmd, slurmstepd, the job's processes)
kill_ns() {
    local ns=$1 sig=$2 pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086  # one argument per PID
    [ -z "$pids" ] || kill "-$sig" $pids 2>/dev/null || true
}

down() {
    local ns f
    # every node at once: SIGTERM to all processes of its namespace (slurmd, steps, jobs)
    for ns in $(our_namespaces); do kill_ns "$ns" TERM; done
    for _ in $(seq 30); do
        local left=0
        for ns in $(our_namespaces); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] || left=1; done
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    for ns in $(our_namespaces); do kill_ns "$ns" KILL; done
    for f in "$DIR"/pids/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
    sleep 0.1
    for ns in $(our_namespaces); do ip netns del "$ns" 2>/dev/null || true; done
    for f in /sys/class/net/"${TAG}"n*; do [ -e "$f" ] && ip link del "$(basename "$f")" 2>/dev/null || true; done
    stop_pidfile "$DIR/pids/slurmctld.pid"
    stop_pidfile "$DIR/pids/munged.pid"
    [ -e "/sys/class/net/$BRIDGE" ] && ip link del "$BRIDGE" 2>/dev/null || true
    rm -f "$DIR/nodes" "$DIR/signature"
    [ "${1:-}" = quiet ] || log "down"
}

leftovers() {
    local ns f
    for ns in $(our_namespaces); do echo "namespace $ns"; done
    for f in /sys/class/net/"${TAG}"n* "/sys/class/net/$BRIDGE"; do [ -e "$f" ] && echo "link $(basename "$f")"; done
    for f in "$DIR"/pids/*.pid; do pid_alive "$f" && echo "daemon $(basename "$f" .pid) pid $(cat "$f")"; done
    grep -E " /run/netns/${NSP}[0-9]+ " /proc/self/mountinfo | awk '{print "mount " $5}' || true
    # a node's private mounts live as long as one process of its mount namespace does
    local p
    for p in /proc/[0-9]*; do
        grep -qsE " $TAG-(tmp|shm|etc)-node[0-9]+ " "$p/mountinfo" 2>/dev/null &&
            echo "process ${p#/proc/} holds node mounts ($(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-80))"
    done
    return 0
}

node_pid() {
    local f=$DIR/pids/slurmd-$1.pid
    pid_alive "$f" || die "node $1 is not up (no live slurmd pid in $f)"
    cat "$f"
}

case "${1:-}" in
    up) up "${2:-}" ;;
    down) down ;;
    status) status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    exec)
        [ $# -ge 3 ] || die "usage: $0 exec NODE CMD..."
        pid=$(node_pid "$2"); shift 2
        exec nsenter -t "$pid" --net --uts --mount --wd="$PWD" -- "$@" ;;
    kill)
        [ $# -ge 2 ] || die "usage: $0 kill NODE"
        i=${2#node}
        kill_ns "$NSP$i" KILL
        log "killed every process of node$i" ;;
    leftovers) leftovers ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
