#!/usr/bin/env bash
# The inference study's cluster path on one lent GPU, short (issue 20). Run from the repository root:
#
#   workflow/studies/inference/gpu_check.sh raw   cuda OUTDIR   # every model's raw rate on the device
#   workflow/studies/inference/gpu_check.sh serve cuda OUTDIR   # TorchServe x ResNet50 on the GPU under Locust
#   workflow/studies/inference/gpu_check.sh raw   cpu  OUTDIR   # the CPU rehearsal (small sizes, 1 thread)
#
# Everything goes through the project's own code: the config is config/config.yaml's inference section
# (device cuda, threads 0, the paper's sizes; shortened by gpu_check.py config), models prepared by
# repro_inference.prepare_torch, measured by studies.inference.run (raw_rate / serve jobs), which
# writes the study's raw and failure records under results/inference/ (in a scratch dir), each with
# the device it measured and the GPU samples. OUTDIR gets gpu.csv (gpu_check.py summary), the records
# as a tarball, the log, and nvidia-smi's view.
#
# On the lent GPU machine (no Java, no registry; python3 has torch 2.11 + transformers 5): the carried
# wheels of the project's pins (.gpu1/whl: transformers 4.57.6 and its tokenizers/hub;
# .gpu2/whl: torchserve 0.12, torch-model-archiver, locust 2.47 and its needs) go into /tmp/repro-site,
# a jlink'd JRE (.gpu1/jre.tar.xz) into /opt/jre, and /tmp/repro-vt/bin holds wrappers (python,
# torchserve, locust) that put /tmp/repro-site first, so servers.py's venv-based launch works
# (REPRO_VENV_TORCH, REPRO_LOCUST_BIN). Without .gpu1/.gpu2 (here) the project's cached venvs are used.
set -uo pipefail
phase=${1:?raw|serve}
device=${2:-cuda}
out=${3:?OUTDIR}
repo=$(pwd)
mkdir -p "$out"
log="$out/gpu_check-$phase.log"
exec > >(tee -a "$log") 2>&1
echo "gpu_check: phase $phase device $device at $(date -u +%FT%TZ) on $(hostname)"

site=/tmp/repro-site vt=/tmp/repro-vt
if compgen -G ".gpu[123]/*" > /dev/null; then
    py=$(command -v python3)
    mkdir -p "$site" "$vt/bin"
    for d in .gpu1 .gpu2 .gpu3; do
        if compgen -G "$d/whl/*.whl" > /dev/null && [[ ! -f $site/.$d ]]; then
            "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
                "$d"/whl/*.whl && touch "$site/.$d" || { echo "gpu_check: pip install of $d failed"; exit 2; }
        fi
        # torchserve in two parts (its 42 MB wheel and the JRE do not fit one call's 64 MiB): the Python
        # package, and the frontend jar's contents xz-compressed, zipped back into ts/frontend/ here
        if [[ -f $d/ts-py.tar.xz && ! -d $site/ts ]]; then tar -C "$site" -xJf "$d/ts-py.tar.xz"; fi
        if [[ -f $d/ts-jar.tar.xz && ! -f $site/ts/frontend/model-server.jar ]]; then
            rm -rf /tmp/repro-tsjar && mkdir -p /tmp/repro-tsjar "$site/ts/frontend"
            tar -C /tmp/repro-tsjar -xJf "$d/ts-jar.tar.xz"
            (cd /tmp/repro-tsjar && "$py" -m zipfile -c "$site/ts/frontend/model-server.jar" ./*)
        fi
        if [[ -f $d/jre.tar.xz && ! -x /opt/jre/bin/java ]]; then tar -C /opt -xJf "$d/jre.tar.xz"; fi
        if [[ -f $d/config-$device.json ]]; then cp "$d/config-$device.json" /tmp/repro-config-$device.json; fi
    done
    printf '#!/bin/sh\nexport PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}\nexec %s "$@"\n' "$site" "$py" > "$vt/bin/python"
    chmod +x "$vt/bin/python"
    ln -sf python "$vt/bin/python3"
    printf '#!/bin/sh\nexec %s/bin/python -c "import sys; from ts.model_server import start; sys.argv[0] = \\"torchserve\\"; sys.exit(start())" "$@"\n' "$vt" > "$vt/bin/torchserve"
    printf '#!/bin/sh\nexec %s/bin/python -m locust "$@"\n' "$vt" > "$vt/bin/locust"
    chmod +x "$vt/bin/torchserve" "$vt/bin/locust"
    touch "$vt/.complete"
    export REPRO_VENV_TORCH=$vt REPRO_LOCUST_BIN=$vt/bin/locust
    [[ -x /opt/jre/bin/java ]] && export JAVA_HOME=/opt/jre PATH=/opt/jre/bin:$PATH
    PY=$vt/bin/python
else
    PY=$("$repo/systems/inference/setup.sh" path-torch)/bin/python
fi
# the project's Python path (workflow/pythonpath.txt), as ./repro exports it
eval "$(env -u PYTHONPATH "$repo/repro" env | grep '^export PYTHONPATH=')"
export PYTHONUNBUFFERED=1
work=${REPRO_GPU_CHECK_WORK:-/tmp/repro-gpu-check-$device}
mkdir -p "$work"
cd "$work" || exit 2
(nvidia-smi 2>&1 || echo "no nvidia-smi") > "$out/nvidia-smi-$phase.txt"
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-", "transformers", transformers.__version__)'

cfg=$work/config.json
if [[ -f /tmp/repro-config-$device.json ]]; then  # made here beforehand (the GPU machine has no jsonschema)
    cp "/tmp/repro-config-$device.json" "$cfg"
elif [[ ! -f $cfg ]]; then
    "$repo/.venv/bin/python" -m studies.inference.gpu_check config --device "$device" --out "$cfg" || exit 2
fi
cp "$cfg" "$out/config-$device.json"
models=$work/models
mj=results/inference/models.json
rc=0
prep_models=(resnet50 wav2vec2 wav2vec2_truncated bart)
[[ $phase == serve ]] && prep_models=(resnet50)
if [[ ! -f $mj ]]; then
    for m in "${prep_models[@]}"; do
        args=$("$PY" -c "import json,sys; c=json.load(open('$cfg')); s=c['sizes']; print(f\"--image-size {s['image_size']} --audio-samples {s['audio_samples']} --audio-samples-full {s['audio_samples_full']} --max-new-tokens {s['max_new_tokens']} --num-beams {s['num_beams']} --weights {c['weights']}\")")
        # shellcheck disable=SC2086
        "$PY" -m repro_inference.prepare_torch --out "$models" --model $m --formats torchserve $args || rc=1
    done
    "$PY" -m studies.inference.gpu_check models --dir "$models" --out "$mj" || exit 2
fi
# one job through the run contract (repro.runner), --out the layout's raw files of the job: inf_run EXPERIMENT PARAMS
inf_run() {
    local outs
    outs=$("$PY" -c 'import json, sys
from studies.inference import layout as lo
c, p = json.load(open(sys.argv[1])), json.loads(sys.argv[3])
print(" ".join(lo.serve_outputs(c, p["server"], p["model"], 0) if sys.argv[2] == "serve"
               else [lo.raw_path(lo.rawrate_params(p["model"], p["framework"]), 0)]))' "$cfg" "$1" "$2") || return 2
    # shellcheck disable=SC2086  # the layout's paths: no spaces
    "$PY" -m studies.inference.run "$1" --config "@$cfg" --params "$2" --rep 0 --out $outs --input "models=$mj"
}
if [[ $phase == raw ]]; then
    for m in resnet50 wav2vec2_truncated wav2vec2 bart; do
        t0=$SECONDS
        inf_run raw_rate "{\"model\": \"$m\", \"framework\": \"torch\"}" || rc=1
        echo "gpu_check: raw rate $m took $((SECONDS - t0)) s"
    done
elif [[ $phase == serve ]]; then
    t0=$SECONDS
    # the served model's raw rate on the same machine first (served / raw), then TorchServe under Locust
    inf_run raw_rate '{"model": "resnet50", "framework": "torch"}' || rc=1
    echo "gpu_check: raw rate resnet50 took $((SECONDS - t0)) s"
    t0=$SECONDS
    inf_run serve '{"server": "torchserve", "model": "resnet50"}' || rc=1
    echo "gpu_check: serve took $((SECONDS - t0)) s"
fi
"$PY" -m studies.inference.gpu_check summary --results results/inference --out "$out"
tar -czf "$out/records.tar.gz" results/inference/raw results/inference/failed results/inference/rawrate \
    results/inference/locust 2> /dev/null
echo "gpu_check: phase $phase done, exit $rc"
exit $rc
