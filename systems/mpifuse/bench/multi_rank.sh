#!/usr/bin/env bash
# Every mode with N ranks on this host: all ranks run sha256sum on a fresh
# file through their own mount at the same time (the paper's benchmark, one
# host). Reports the median wall time of the slowest rank, the source traffic
# summed over ranks and a few Figure-4 timers (summed over ranks).
#
#   bash systems/mpifuse/bench/multi_rank.sh [N=3] [SIZE_MIB=128] [REPEATS=3] [DIR=/dev/shm]
# Env: UCX over TCP only (workflow/scripts/mpi-env.sh with REPRO_SINGLE_HOST=1), MPIFUSE_OPTS (extra -o options),
#      MODES (default "osr osr-refined bcast passthrough").
set -euo pipefail
N=${1:-3}
SIZE_MIB=${2:-128}
REPEATS=${3:-3}
DIR=${4:-/dev/shm}
MODES=${MODES:-osr osr-refined bcast passthrough}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=$HERE/build/mpifuse
REPRO_SINGLE_HOST=1 . "$HERE/../../workflow/scripts/mpi-env.sh"   # UCX over TCP only: separate nodes
[ -x "$BIN" ] || make -C "$HERE" -j2 >/dev/null
WORK=$(mktemp -d "$DIR/mpifuse-mr.XXXXXX")
mkdir -p "$WORK/src"
MP=
cleanup() {
    if [ -n "$MP" ] && kill -0 "$MP" 2>/dev/null; then fusermount3 -u "$WORK/mnt0" 2>/dev/null || true; sleep 2; kill "$MP" 2>/dev/null || true; fi
    for m in "$WORK"/mnt*; do mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
echo "# N=$N size=${SIZE_MIB}MiB repeats=$REPEATS UCX_TLS=${UCX_TLS:-default} opts=${MPIFUSE_OPTS:-defaults}"
for mode in $MODES; do
    log=$WORK/log-$mode
    mpirun -n "$N" --oversubscribe "$BIN" --mode "$mode" -o "linger=0${MPIFUSE_OPTS:+,$MPIFUSE_OPTS}" "$WORK/src" "$WORK/mnt{rank}" > "$log" 2>&1 &
    MP=$!
    for _ in $(seq 300); do [ "$(grep -c ' mounted ' "$log")" = "$N" ] && break; sleep 0.05; done
    times=()
    for rep in $(seq "$REPEATS"); do
        f=file-$rep.bin
        head -c $((SIZE_MIB * 1048576)) /dev/urandom > "$WORK/src/$f"
        for r in $(seq 0 $((N - 1))); do cat "$WORK/mnt$r/.mpifuse-stats-reset" > /dev/null; done
        t0=$(date +%s.%N)
        for r in $(seq 0 $((N - 1))); do sha256sum "$WORK/mnt$r/$f" > /dev/null & done
        wait $(jobs -p | grep -v "^$MP\$")
        t1=$(date +%s.%N)
        times+=("$(echo "$t1 - $t0" | bc -l)")
        stats=$(python3 - "$WORK" "$N" <<'PY'
import json, sys
w, n = sys.argv[1], int(sys.argv[2])
s = [json.load(open(f"{w}/mnt{r}/.mpifuse-stats")) for r in range(n)]
t = lambda k: sum(x[k] for x in s)
print(f"src={t('bytes_read_source') / 2**20:.1f}MiB open={t('open_time_s'):.2f}s read={t('read_time_s'):.2f}s "
      f"get={t('mpi_get_time_s'):.2f}s meta={t('meta_time_s'):.2f}s bcast={t('bcast_time_s'):.2f}s "
      f"reads={t('read_calls')} gets={t('mpi_get_calls')}")
PY
)
        rm -f "$WORK/src/$f"
    done
    med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
    printf '%-12s median %.3f s  runs: %s  last: %s\n' "$mode" "$med" "$(printf '%.3f ' "${times[@]}")" "$stats"
    fusermount3 -u "$WORK/mnt0"
    wait "$MP" || echo "# $mode: mpirun exited $?"
    MP=
done
t0=$(date +%s.%N)
head -c $((SIZE_MIB * 1048576)) /dev/urandom > "$WORK/src/native.bin"
t0=$(date +%s.%N)
for r in $(seq 1 "$N"); do sha256sum "$WORK/src/native.bin" > /dev/null & done
wait
printf '%-12s %.3f s (N concurrent sha256sum on the source, page cache)\n' native "$(echo "$(date +%s.%N) - $t0" | bc -l)"
