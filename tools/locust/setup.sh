#!/usr/bin/env bash
# Locust, pinned, in a cached venv of its own: ${REPRO_CACHE:-$HOME/.cache/repro}/locust-<hash>/
# (hash of requirements.lock.txt and the interpreter version; `.complete` written last; warm = no-op).
#   tools/locust/setup.sh          build if needed, print "VENV locust <path>"
#   tools/locust/setup.sh path     print the path only (builds nothing)
set -euo pipefail
lock="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/requirements.lock.txt"
py="${REPRO_PYTHON:-python3}"
key="$( (cat "$lock"; "$py" -V) | sha256sum | cut -c1-12)"
target="${REPRO_CACHE:-$HOME/.cache/repro}/locust-$key"
if [[ "${1:-}" == path ]]; then echo "$target"; exit 0; fi
if [[ ! -f "$target/.complete" ]]; then
    start=$SECONDS
    echo "locust setup: building $target"
    rm -rf "$target" && mkdir -p "$(dirname "$target")"
    "$py" -m venv "$target"
    "$target/bin/pip" install --quiet --no-cache-dir -r "$lock"
    "$target/bin/pip" freeze > "$target/freeze.txt"
    touch "$target/.complete"
    echo "locust setup: done in $((SECONDS - start)) s"
fi
echo "VENV locust $target"
