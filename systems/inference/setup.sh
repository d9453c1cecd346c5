#!/usr/bin/env bash
# Heavy, cached Python stacks of the inference system (issue 9).
#
#   systems/inference/setup.sh [torch|tf|all]     (default: all)
#
# Builds one pinned venv per stack under ${REPRO_CACHE:-$HOME/.cache/repro}/inference-<stack>-<hash>/,
# where <hash> covers the requirements file and the interpreter version. The marker `.complete`
# is written last, so an interrupted build is redone from scratch; a warm call is a no-op in
# well under a second. Prints the venv's path on the last line of each stack (`VENV <stack> <path>`).
# torch and TensorFlow live in separate venvs: they must never share a process (MACHINE-FACTS).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${REPRO_CACHE:-$HOME/.cache/repro}"
python="${REPRO_PYTHON:-python3}"
which="${1:-all}"

venv_dir() {  # stack -> cache path (no side effects)
    local req="$here/venvs/$1.txt"
    local pyver
    pyver="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
    local h
    h="$( { cat "$req"; echo "python=$pyver"; } | sha256sum | cut -c1-12)"
    echo "$cache/inference-$1-$h"
}

build() {
    local stack="$1" dir
    dir="$(venv_dir "$stack")"
    if [[ -f "$dir/.complete" ]]; then
        echo "inference setup: $stack venv warm: $dir"
        echo "VENV $stack $dir"
        return 0
    fi
    local t0=$SECONDS
    echo "inference setup: building the $stack venv in $dir (cold; torch alone is ~5 GB)"
    rm -rf "$dir"
    mkdir -p "$cache"
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --upgrade pip==24.3.1
    # --progress-bar off keeps CI logs short; pip still prints what it collects.
    "$dir/bin/python" -m pip install --no-cache-dir --progress-bar off -r "$here/venvs/$stack.txt"
    "$dir/bin/python" -m pip freeze > "$dir/freeze.txt"
    echo "$((SECONDS - t0))" > "$dir/build-seconds"
    touch "$dir/.complete"
    echo "inference setup: $stack venv built in $((SECONDS - t0)) s ($(du -sh "$dir" | cut -f1))"
    echo "VENV $stack $dir"
}

case "$which" in
    torch|tf) build "$which" ;;
    all) build torch; build tf ;;
    path-torch|path-tf) venv_dir "${which#path-}" ;;
    *) echo "usage: $0 [torch|tf|all|path-torch|path-tf]" >&2; exit 2 ;;
esac
