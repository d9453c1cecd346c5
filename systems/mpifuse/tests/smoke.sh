#!/usr/bin/env bash
# Quick end-to-end check of every mode with 2 ranks (UCX over TCP only):
# mount, sha256sum through both mounts, stats JSON, clean stop.
#   bash systems/mpifuse/tests/smoke.sh
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=$HERE/build/mpifuse
[ -e /dev/fuse ] || { echo "smoke: SKIP (no /dev/fuse)"; exit 0; }
command -v mpirun >/dev/null || { echo "smoke: SKIP (no mpirun)"; exit 0; }
[ -x "$BIN" ] || make -C "$HERE" -j2 >/dev/null || exit 1
REPRO_SINGLE_HOST=1 . "$HERE/../../workflow/scripts/mpi-env.sh"   # UCX over TCP only: separate nodes
WORK=$(mktemp -d /tmp/mpifuse-smoke.XXXXXX)
MP=
cleanup() {
    [ -n "$MP" ] && kill "$MP" 2>/dev/null
    for m in "$WORK"/mnt*; do mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/src"
head -c 5242883 /dev/urandom > "$WORK/src/data"
head -c 4097 /dev/urandom > "$WORK/src/small"
want=$(cd "$WORK/src" && sha256sum data small)
pass=0 fail=0
for mode in osr osr-refined bcast passthrough; do
    log=$WORK/log.$mode
    timeout 120 mpirun -n 2 --oversubscribe "$BIN" --mode "$mode" -o timeout=30 "$WORK/src" "$WORK/mnt{rank}" > "$log" 2>&1 &
    MP=$!
    for _ in $(seq 200); do [ "$(grep -c ' mounted ' "$log")" = 2 ] && break; sleep 0.05; done
    ok=1
    for r in 0 1; do
        got=$(cd "$WORK/mnt$r" && sha256sum data small) || ok=0
        [ "$got" = "$want" ] || ok=0
        python3 -c "import json,sys; d=json.load(open('$WORK/mnt$r/.mpifuse-stats')); sys.exit(d['rank']!=$r)" || ok=0
    done
    fusermount3 -u "$WORK/mnt0" || ok=0
    wait "$MP" || ok=0
    MP=
    if [ $ok = 1 ]; then pass=$((pass + 1)); echo "smoke: $mode ok"; else fail=$((fail + 1)); echo "smoke: $mode FAILED"; cat "$log"; fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
