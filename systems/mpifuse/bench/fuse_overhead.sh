#!/usr/bin/env bash
# FUSE overhead of mpifuse on one rank: time of `sha256sum FILE` natively vs
# through passthrough, osr (n=1) and osr-refined (n=1) mounts.
#
#   bash systems/mpifuse/bench/fuse_overhead.sh [SIZE_MIB=512] [REPEATS=5] [DIR=/dev/shm]
#
# Env: MPIFUSE_OPTS (extra -o options for every mount, default none),
#      MPIFUSE_BENCH_READER (default: sha256sum; e.g. "cat" or "dd bs=1M of=/dev/null if=").
# Each repeat opens the file anew; kernel_cache is off (default) so every
# repeat reads through the file system. For osr/osr-refined linger=0, so
# every repeat includes open() with the read of the part from the source
# (the paper's open), i.e. the full cost of the design.
# Prints per-repeat times, the median per variant and the ratio to native.
set -euo pipefail
SIZE_MIB=${1:-512}
REPEATS=${2:-5}
DIR=${3:-/dev/shm}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=$HERE/build/mpifuse
READER=${MPIFUSE_BENCH_READER:-sha256sum}
REPRO_SINGLE_HOST=1 REPRO_MPI_SHM=1 . "$HERE/../../workflow/scripts/mpi-env.sh"   # one host, UCX may use shared memory
[ -x "$BIN" ] || make -C "$HERE" -j2 >/dev/null

WORK=$(mktemp -d "$DIR/mpifuse-bench.XXXXXX")
SRC=$WORK/src
mkdir -p "$SRC"
VARIANTS=(passthrough osr osr-refined)
declare -A PID
cleanup() {
    for v in "${VARIANTS[@]}"; do
        local m=$WORK/mnt-$v
        if [ -n "${PID[$v]:-}" ] && kill -0 "${PID[$v]}" 2>/dev/null; then
            fusermount3 -u "$m" 2>/dev/null || true
        fi
    done
    sleep 1
    for v in "${VARIANTS[@]}"; do
        [ -n "${PID[$v]:-}" ] && kill "${PID[$v]}" 2>/dev/null || true
        mountpoint -q "$WORK/mnt-$v" 2>/dev/null && fusermount3 -u -z "$WORK/mnt-$v"
    done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "# creating ${SIZE_MIB} MiB test file in $SRC"
head -c $((SIZE_MIB * 1048576)) /dev/urandom > "$SRC/file.bin"

TICK=$(getconf CLK_TCK)
daemon_cpu() { # CPU seconds (user+sys) used so far by the daemon of variant $1 (0 for native)
    local p=${DPID[$1]:-}
    [ -n "$p" ] || { echo 0; return; }
    awk -v t="$TICK" '{print ($14 + $15) / t}' "/proc/$p/stat"
}
run_reader() { # variant file -> "wall reader_cpu daemon_cpu" (seconds)
    local v=$1 f=$2 t0 t1 d0 d1 rc
    d0=$(daemon_cpu "$v")
    t0=$(date +%s.%N)
    if [ "$READER" = sha256sum ]; then
        rc=$( { /usr/bin/time -f "%U %S" sha256sum "$f" > /dev/null; } 2>&1 | tail -1)
    else
        rc=$( { /usr/bin/time -f "%U %S" $READER"$f" > /dev/null 2>/dev/null; } 2>&1 | tail -1)
    fi
    t1=$(date +%s.%N)
    d1=$(daemon_cpu "$v")
    echo "$(echo "$t1 - $t0" | bc -l) $(echo "$rc" | awk '{print $1 + $2}') $(echo "$d1 - $d0" | bc -l)"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# one single-rank file system per variant, all mounted at once
for v in "${VARIANTS[@]}"; do
    log=$WORK/log-$v
    mpirun -n 1 "$BIN" --mode "$v" -o "linger=0${MPIFUSE_OPTS:+,$MPIFUSE_OPTS}" "$SRC" "$WORK/mnt-$v" > "$log" 2>&1 &
    PID[$v]=$!
    for _ in $(seq 200); do grep -q mounted "$log" && break; sleep 0.05; done
    grep -q mounted "$log" || { cat "$log"; exit 1; }
done
declare -A DPID
for v in "${VARIANTS[@]}"; do DPID[$v]=$(pgrep -P "${PID[$v]}" -x mpifuse | head -1); done

declare -A FILE=([native]=$SRC/file.bin)
for v in "${VARIANTS[@]}"; do FILE[$v]=$WORK/mnt-$v/file.bin; done
ALL=(native "${VARIANTS[@]}")
echo "# reader: $READER; repeats: $REPEATS (variants interleaved per repeat); defaults: max_read=1MiB," \
     "threads=on, readahead 4 MiB, pread (splice=off), kernel_cache=off, linger=0 ${MPIFUSE_OPTS:+; extra: $MPIFUSE_OPTS}"
for v in "${ALL[@]}"; do run_reader "$v" "${FILE[$v]}" > /dev/null; done  # warm-up
declare -A TIMES RCPU DCPU
for _ in $(seq "$REPEATS"); do
    for v in "${ALL[@]}"; do
        read -r w rc dc < <(run_reader "$v" "${FILE[$v]}")
        TIMES[$v]+="$w "; RCPU[$v]+="$rc "; DCPU[$v]+="$dc "
    done
done
declare -A MED MRC MDC
echo "# wall = elapsed time of the reader; cpu = reader user+sys + file system daemon user+sys (medians)"
for v in "${ALL[@]}"; do
    MED[$v]=$(printf '%s\n' ${TIMES[$v]} | median)
    MRC[$v]=$(printf '%s\n' ${RCPU[$v]} | median)
    MDC[$v]=$(printf '%s\n' ${DCPU[$v]} | median)
    printf '%-13s wall median %.3f s  cpu %.2f + %.2f s   wall runs: %s\n' "$v" "${MED[$v]}" "${MRC[$v]}" "${MDC[$v]}" \
        "$(printf '%.3f ' ${TIMES[$v]})"
done
echo "# ratios to native (medians): wall, cpu (reader + daemon)"
for v in "${VARIANTS[@]}"; do
    printf '%-13s wall %.3f   cpu %.3f\n' "$v" "$(echo "${MED[$v]} / ${MED[native]}" | bc -l)" \
        "$(echo "(${MRC[$v]} + ${MDC[$v]}) / (${MRC[native]} + ${MDC[native]})" | bc -l)"
done
cat "$WORK/mnt-osr-refined/.mpifuse-stats" > "$WORK/stats.json" 2>/dev/null || true
