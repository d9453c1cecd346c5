#!/usr/bin/env bash
# N MPI start-ups launched exactly as the benchmark rules launch their ranks on a cluster, counted.
#
#   mpi-startup-loop.sh [N] [IMAGE]
#
#   N       start-ups (default 20); each one is a Slurm job step of NODES ranks, one per node
#   IMAGE   the .sif the ranks run in (default containers/sif/mpifuse.sif), or "host": the ranks
#           run the host's python3 (REPRO_PYTHON) instead of an image
#
# Each start-up is the rules' launch line (workflow/rules/common.smk: MPI_ENV, mpi_launch,
# system_exec): `source workflow/scripts/mpi-env.sh; srun --mpi=pmix --nodes=NODES --ntasks=NODES
# --ntasks-per-node=1 --kill-on-bad-exit=1 apptainer exec --bind <repo> IMAGE
# workflow/scripts/in-image.sh python3 workflow/scripts/slurm/mpi_startup_probe.py`, which
# does what a benchmark rank does before its first use case (MPI_Init_thread, a split, barriers,
# a forked child, a one-sided MPI_Get between nodes) and prints the UCX_*/OMPI_MCA_*/SLURM_PMIX_*
# variables the rank sees. One difference: the ranks start in this run's own directory (srun
# --chdir), so that a core lands there. A start-up counts as a crash when a rank died of a signal,
# UCX caught one ("Caught signal"), srun failed, or a rank did not report; the output of every
# crash is kept and its backtraces printed: UCX's (it stops at UCX's signal handler: the handler is
# UCX's, the fault need not be), Open MPI's, and gdb's from the core.
#
# The fix it measures: workflow/scripts/mpi-env.sh sets SLURM_PMIX_FENCE=ring (Slurm 22.05's default
# fence without data synchronises nothing on fewer nodes than TreeWidth; a fast rank then sends to
# one still inside MPI_Init, which dies of SIGSEGV). A value set before wins, so the state before the
# fix is measured with `SLURM_PMIX_FENCE=mixed mpi-startup-loop.sh N` (Slurm's own default).
#
# Settings (environment): NODES (default: every node of the partition, at most 4), SLURM_CONF (the
# cluster's; ./repro cluster env --multihost prints it), REPRO_SINGLE_HOST (default 0: several
# hosts, as config/rehearsal.yaml), LOOP_DIR (where each crash's output is kept, default
# /var/tmp/mpi-startup-loop), LOOP_TIMEOUT (s per start-up, default 120), REPRO_PYTHON (host mode),
# PROBE_ARGS (extra arguments of mpi_startup_probe.py, e.g. "--fence-check 2"), LOOP_SYSROOT (the
# image as a directory, `apptainer build --sandbox DIR IMAGE`: gdb reads an image rank's core with it).
# Cores: `ulimit -c unlimited` is passed to the ranks (srun propagates limits); with a core_pattern
# that is a plain name (Debian's "core") a core lands in LOOP_DIR/<this run>/.
#
# Output: one line per start-up ("startup 17/200 ok 1.4 s" / "startup 18/200 CRASH ..."), then
#   RESULT startups=N ok=K crashes=C (signal=S ucx_caught=U srun_failed=F missing_rank=M) image=...
#   RANKS <ranks> in_image=<how many ran in the image> nodes=<their nodes>   (the first ok start-up)
#   ENV <the UCX_*/OMPI_MCA_*/SLURM_PMIX_* variables its ranks saw, union over the ranks>
#   FENCE_WAIT_S <rank>=<s> ...   (with PROBE_ARGS="--fence-check S")
# Exit status: 0 when every start-up was ok, 1 when any crashed, 2 on a usage or set-up error.
set -uo pipefail

# all of it in one function, called on the last line: bash reads the whole file before running
# any of it, so editing this file while a loop runs cannot change what the loop does
main() {

    N=${1:-20}
    REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
    IMAGE=${2:-$REPO/containers/sif/mpifuse.sif}
    [ "$IMAGE" = host ] || IMAGE=$(realpath -m "$IMAGE")   # the ranks start in a directory of their own
    LOOP_DIR=${LOOP_DIR:-/var/tmp/mpi-startup-loop}
    TIMEOUT=${LOOP_TIMEOUT:-120}
    PROBE=$REPO/workflow/scripts/slurm/mpi_startup_probe.py

    die() { echo "mpi-startup-loop: $*" >&2; exit 2; }
    # resolve_in ROOT PATH: PATH with its symbolic links followed inside ROOT (an image's sandbox)
    resolve_in() {
        local root=$1 p=$2 t n=0
        while [ -L "$root$p" ] && [ $n -lt 20 ]; do
            t=$(readlink "$root$p")
            case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
            n=$((n + 1))
        done
        echo "$root$p"
    }
    [[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] || die "N must be a positive integer, not '$N'"
    command -v srun >/dev/null || die "srun is not on PATH"
    if [ -z "${NODES:-}" ]; then
        NODES=$(sinfo -h -o %D 2>/dev/null | awk '{s += $1} END {print s + 0}')
        [ "$NODES" -ge 1 ] 2>/dev/null || die "no Slurm partition answers (SLURM_CONF=${SLURM_CONF:-unset})"
        [ "$NODES" -le 4 ] || NODES=4
    fi

    cd "$REPO" || die "cannot cd to $REPO"
    # the rules' MPI environment (MPI_ENV in workflow/rules/common.smk)
    export REPRO_SINGLE_HOST=${REPRO_SINGLE_HOST:-0}
    # shellcheck source=../mpi-env.sh
    source "$REPO/workflow/scripts/mpi-env.sh"
    export UCX_HANDLE_ERRORS=${UCX_HANDLE_ERRORS:-bt}
    ulimit -c unlimited 2>/dev/null || true

    if [ "$IMAGE" = host ]; then
        # in-image.sh appends the project's Python path (workflow/pythonpath.txt) here on the host too
        EXEC=(env -u PYTHONPATH "$REPO/workflow/scripts/in-image.sh" "${REPRO_PYTHON:-python3}")
    else
        [ -s "$IMAGE" ] || die "no image $IMAGE (build it: ./repro snakemake containers/sif/mpifuse.sif --cores 2)"
        command -v apptainer >/dev/null || die "apptainer is not on PATH"
        # system_exec("mpifuse") in workflow/rules/common.smk, word for word
        EXEC=(apptainer exec --bind "$REPO" "$IMAGE" "$REPO/workflow/scripts/in-image.sh" python3)
    fi
    run_dir=$LOOP_DIR/$(date +%Y%m%d-%H%M%S)-$$
    mkdir -p "$run_dir" || die "cannot create $run_dir"
    # the ranks work in run_dir (a rule's ranks work in the workflow's directory): a crashed rank's core
    # lands there, not in the repository
    LAUNCH=(srun --mpi=pmix "--nodes=$NODES" "--ntasks=$NODES" --ntasks-per-node=1 --kill-on-bad-exit=1
            "--chdir=$run_dir")
    echo "mpi-startup-loop: $N start-ups of $NODES ranks, image $IMAGE, SLURM_PMIX_FENCE=$SLURM_PMIX_FENCE; load $(cut -d' ' -f1-3 /proc/loadavg); output of crashes in $run_dir"

    ok=0 sig=0 caught=0 failed=0 missing=0 env_line=""
    # PROBE lines -> "RANKS n in_image=k nodes=...", "ENV k=v ..." (union over the ranks) and, with
    # --fence-check, "FENCE_WAIT_S rank=s ..."
    SUMMARY='import json, sys
rows = [json.loads(line) for line in sys.stdin]
in_image = sum(r["in_image"] for r in rows)
print(f"RANKS {len(rows)} in_image={in_image} nodes=" + ",".join(sorted(r["node"] for r in rows)))
env = {}
for r in rows:
    env.update(r["env"])
print("ENV " + " ".join(f"{k}={v}" for k, v in sorted(env.items())))
waits = {r["rank"]: r.get("fence_wait_s") for r in rows}
if any(w is not None for w in waits.values()):
    print("FENCE_WAIT_S " + " ".join(f"{k}={waits[k]}" for k in sorted(waits)))'
    for ((i = 1; i <= N; i++)); do
        out=$run_dir/startup-$i.log
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086  # PROBE_ARGS: several words
        timeout -k 10 "$TIMEOUT" "${LAUNCH[@]}" "${EXEC[@]}" "$PROBE" ${PROBE_ARGS:-} >"$out" 2>&1
        rc=$?
        dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
        reported=$(grep -c '^PROBE {.*"ok": true' "$out")
        why=()
        if grep -q -E 'Caught signal|==== backtrace' "$out"; then why+=(ucx_caught); caught=$((caught + 1)); fi
        if grep -q -E 'Segmentation fault|signal 11|Bus error|Aborted|core dumped|[Kk]illed by signal|exited on signal' "$out"; then
            why+=(signal); sig=$((sig + 1))
        fi
        if [ "$rc" != 0 ]; then why+=("srun_rc=$rc"); failed=$((failed + 1)); fi
        if [ "$reported" != "$NODES" ]; then why+=("ranks_ok=$reported/$NODES"); missing=$((missing + 1)); fi
        if [ ${#why[@]} -eq 0 ]; then
            ok=$((ok + 1))
            # the first ok start-up: what its ranks saw (the environment, the fence check's waits)
            [ -n "$env_line" ] || env_line=$(grep '^PROBE ' "$out" | sed 's/^PROBE //' | python3 -c "$SUMMARY")
            echo "startup $i/$N ok $dt s"
            rm -f "$out"
        else
            echo "startup $i/$N CRASH ${why[*]} $dt s (output: $out)"
            # the backtrace (UCX's, or Open MPI's "Process received signal" block), else the tail
            if grep -q -E 'Caught signal|Process received signal' "$out"; then
                grep -E -A40 'Caught signal|Process received signal' "$out" | head -60 | sed 's/^/    /'
            else
                tail -20 "$out" | sed 's/^/    /'
            fi
            # the faulting frame from the core (UCX's own backtrace stops at its signal handler)
            for core in "$run_dir"/core*; do
                [ -f "$core" ] || continue
                mv "$core" "$run_dir/startup-$i.core"
                exe=$(file "$run_dir/startup-$i.core" | sed -n "s/.*execfn: '\\([^']*\\)'.*/\\1/p")
                root=${LOOP_SYSROOT:-}   # an image's files (apptainer build --sandbox DIR IMAGE)
                [ -z "$root" ] && [ "$IMAGE" != host ] && [ ! -x "$exe" ] && {
                    echo "    core: $run_dir/startup-$i.core (ran in the image: for its frames, run again with"
                    echo "    LOOP_SYSROOT=DIR after 'apptainer build --sandbox DIR $IMAGE')"
                    continue
                }
                if command -v gdb >/dev/null; then
                    echo "    core: $run_dir/startup-$i.core, gdb backtrace:"
                    gdb -q -batch ${root:+-ex "set sysroot $root"} -ex "bt 12" "$(resolve_in "$root" "$exe")" \
                        "$run_dir/startup-$i.core" 2>/dev/null |
                        grep -E '^#' | awk '!seen[$0]++' | sed 's/^/      /'
                fi
            done
        fi
    done
    crashes=$((N - ok))
    echo "RESULT startups=$N ok=$ok crashes=$crashes (signal=$sig ucx_caught=$caught srun_failed=$failed missing_rank=$missing) image=$IMAGE nodes=$NODES fence=$SLURM_PMIX_FENCE load=$(cut -d' ' -f1 /proc/loadavg)"
    echo "$env_line"
    [ "$crashes" -eq 0 ] && rmdir "$run_dir" 2>/dev/null
    [ "$crashes" -eq 0 ]
}

main "$@"; exit $?
