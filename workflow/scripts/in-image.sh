#!/bin/sh
# Runs a command inside a system's image with the project's Python path behind the image's own.
#
# Apptainer (1.4.2) does not let an image's %environment see the caller's PYTHONPATH, and
# APPTAINERENV_PYTHONPATH / --env PYTHONPATH would replace the image's path (its own packages)
# instead of extending it. So this script, run inside the image from the bound checkout
# (system_exec in workflow/rules/common.smk), appends the folders of that checkout's
# workflow/pythonpath.txt -- the one list ./repro and the engine put on PYTHONPATH on the host:
# `python3 -m studies.<study>.run` then finds the study code on the bound checkout and the
# image's own packages first.
root=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
[ -r "$root/workflow/pythonpath.txt" ] || {
    echo "in-image.sh: no $root/workflow/pythonpath.txt (is the checkout bound into the image?)" >&2
    exit 1
}
pp=
while read -r d _ || [ -n "$d" ]; do
    case $d in '' | '#'*) continue ;; .) d=$root ;; *) d=$root/$d ;; esac
    pp=${pp:+$pp:}$d
done <"$root/workflow/pythonpath.txt"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$pp"
exec "$@"
