# shellcheck shell=bash
# What the two clusters share (sourced by local-cluster.sh and multihost-cluster.sh; not run).
#
# The caller sets, before sourcing: LOG_TAG (the prefix of its messages), DIR (its state
# directory), CONF (its slurm.conf), SOCK_DIR and SOCK (its private munge socket).
# Settings learned the hard way are in ../shared/MACHINE-FACTS.md (Slurm section).

log() { echo "[$LOG_TAG] $*"; }
die() { echo "[$LOG_TAG] ERROR: $*" >&2; exit 1; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# the state directories (plus the caller's extra ones under $DIR) and the munge socket's (mode 711)
make_state_dirs() {
    local d
    mkdir -p "$DIR"/{state,log,spool,pids} "$SOCK_DIR"
    for d in "$@"; do mkdir -p "$DIR/$d"; done
    chmod 711 "$SOCK_DIR"
}

# slurm.conf lines from SlurmUser to MessageTimeout, the same in both clusters except
#   conf_settings TMPFS SLURMD_TIMEOUT [EXTRA_LINE...]   (the extra lines go before MessageTimeout)
conf_settings() {
    local tmpfs=$1 slurmd_timeout=$2 line
    shift 2
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$SOCK"
    echo "StateSaveLocation=$DIR/state"
    echo "SlurmdSpoolDir=$DIR/spool/%n"
    echo "TmpFS=$tmpfs"
    echo "SlurmctldPidFile=$DIR/pids/slurmctld.pid"
    echo "SlurmdPidFile=$DIR/pids/slurmd-%n.pid"
    echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
    echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "MpiDefault=pmix"
    echo "SwitchType=switch/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SchedulerType=sched/backfill"
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "MinJobAge=${MIN_JOB_AGE:-600}"
    echo "EnforcePartLimits=ALL"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "KillWait=5"
    echo "InactiveLimit=0"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=$slurmd_timeout"
    for line in "$@"; do echo "$line"; done
    echo "MessageTimeout=20"
}

start_munge() {
    if pid_alive "$DIR/pids/munged.pid"; then return; fi
    if [ ! -s "$DIR/munge.key" ]; then
        dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
        chmod 400 "$DIR/munge.key"
    fi
    munged --force --socket="$SOCK" --key-file="$DIR/munge.key" \
        --pid-file="$DIR/pids/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge.seed" >/dev/null 2>&1 || {
        cat "$DIR/log/munged.log" >&2 2>/dev/null
        die "munged did not start"
    }
    for _ in $(seq 50); do [ -S "$SOCK" ] && return; sleep 0.1; done
    die "munge socket $SOCK did not appear"
}

# wait until N nodes are usable (idle, mixed or allocated), polling every 0.2 s TRIES times
#   wait_idle N TRIES
wait_idle() {
    local n=$1 tries=$2 idle=0
    for _ in $(seq "$tries"); do
        idle=$(sinfo -h -N -t idle,mix,alloc -o '%N' 2>/dev/null | sort -u | wc -l || true)
        [ "$idle" -ge "$n" ] && return 0
        sleep 0.2
    done
    sinfo -N >&2 || true
    die "only $idle of $n nodes became available (logs in $DIR/log)"
}

# SIGTERM the daemon of a PID file, SIGKILL after 5 s, remove the file
stop_pidfile() {
    local f=$1 pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

# sinfo + squeue of this cluster; exit status 3 when it is not up
status() {
    if pid_alive "$DIR/pids/slurmctld.pid"; then
        SLURM_CONF=$CONF sinfo -N
        SLURM_CONF=$CONF squeue
    else
        log "not running"
        return 3
    fi
}
