#!/bin/sh
# Runs a command inside a system's image with the repository's Python path behind the image's own.
#
# Apptainer (1.4.2) does not let an image's %environment see the caller's PYTHONPATH, and
# APPTAINERENV_PYTHONPATH / --env PYTHONPATH would replace the image's path (its own packages)
# instead of extending it. So system_exec passes the repository's path as REPRO_PYTHONPATH and this
# script, run inside the image, appends it: `python3 -m studies.<study>.run` then finds the study
# code on the bound project directory and the image's packages first.
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}${REPRO_PYTHONPATH:?REPRO_PYTHONPATH is not set: run through system_exec}"
exec "$@"
