"""The inference study's parameter space (stable raw paths, the paper's gaps never jobs, labels), the
start-up checks that name the bad key, and the plans: the full cluster matrix (n+1 with --gres on the
server node) and the local one, with the study switched on by an overlay."""

from __future__ import annotations

import re

import inference_study_testlib as tl
import pytest
import yaml
from studies.inference import layout

from repro import config as rc


def test_local_paths_are_stable_and_complete():
    cfg = tl.section()
    exp = layout.expected_raw(cfg)
    assert len(exp) == len(set(exp))
    assert "results/inference/raw/experiment~serve/server~triton-tensorflow/model~resnet50/users~4/rep~0.json" in exp
    assert "results/inference/raw/experiment~raw_rate/model~bart/framework~torch/rep~0.json" in exp
    assert "results/inference/raw/experiment~ceiling/users~10/rep~0.json" in exp
    assert not any("model~bart/framework~tf" in p for p in exp)  # BART has no TF side
    jobs = layout.job_outputs(cfg)
    gaps = set(exp) - set(jobs)
    assert gaps and all("model~bart" in p and "server~torchserve" not in p for p in gaps)
    assert len(layout.serve_jobs(cfg)) == 4 * 2 + 1  # 1 repeat locally
    kinds = {layout.system_kind_of_path(cfg, p) for p in exp}
    assert kinds == {"real", "stand-in:tritonserver-python-backend", "stand-in:tfserving-rest-on-tf-python"}
    assert cfg["weights"] == "random-from-config" and cfg["threads"] == 1


def test_full_matrix_is_the_papers():
    cfg = tl.section(local=False)
    assert cfg["repeats"] == 5 and cfg["users"] == [1, 10, 25, 50, 75, 100]
    assert cfg["sizes"]["image_size"] == 224 and cfg["sizes"]["audio_samples"] == 50000
    assert len(layout.serve_pairs(cfg)) == 16
    # TF Serving x full Wav2Vec2 and BART off TorchServe: in the matrix, never jobs
    assert len(layout.serve_jobs(cfg)) == (16 - 4) * 5
    assert layout.by_design("tfserving", "wav2vec2").startswith("not run (as in the paper)")
    assert layout.by_design("triton-pytorch", "bart").startswith("not servable (as in the paper)")
    assert len(layout.rawrate_jobs(cfg)) == 7 * 5
    assert {layout.system_kind_of_path(cfg, p) for p in layout.expected_raw(cfg)} == {"real"}
    assert cfg["usability"]["scores"]["torchserve"] == [5, 5, 5, 4, 4]
    full = yaml.safe_load((tl.REPO / "config/config.yaml").read_text())
    assert full["inference"]["enabled"] is True  # the paper-scale run measures it (a GPU per server node)


@pytest.mark.parametrize("over, key", [
    ({"kinds": {"tfserving": "triton-python-tf"}}, "inference.kinds.tfserving"),
    ({"users": [0]}, "inference.users[0]"),
    ({"modles": ["resnet50"]}, "inference.modles"),
    ({"sizes": {"image_size": "big"}}, "inference.sizes.image_size"),
])
def test_bad_config_names_the_key(over, key):
    with pytest.raises(rc.ConfigError, match=re.escape(key)):
        rc.validate(tl.full_config(**over))


def test_start_up_checks_name_the_key():
    with pytest.raises(layout.LayoutError, match=r"inference\.kick"):
        layout.check(tl.section(kick={"server": "tfserving", "model": "bart"}))
    with pytest.raises(layout.LayoutError, match=r"inference\.usability\.scores\.triton"):
        layout.check(tl.section(usability={"scores": {"triton": [1, 2]}}))


def _counts(out):
    return {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE)}


def test_plans(snake, workspace):
    on = workspace / "inference-on.yaml"
    on.write_text("inference: {enabled: true}\n")
    full = snake("-n", "-p", "inference", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                 str(on), timeout=300).stdout
    c = _counts(full)
    assert c.get("inference_serve") == 60, full[-3000:]
    assert c.get("inference_raw_rate") == 35 and c.get("inference_ceiling") == 5 and c.get("inference_prepare") == 1
    assert "--gres=gpu:1" in full and "nodes=2" in full  # n+1: driver + server node with its GPU
    for image in ("torchserve", "triton", "tfserving", "inference-tf", "locust"):
        assert f"containers/sif/{image}.sif" in full, image
    # every GPU step: the server's / framework's image with --nv, the job with --gres, the config with cuda
    serve = [ln for ln in full.splitlines() if "studies.inference.run serve " in ln]
    raw = [ln for ln in full.splitlines() if "studies.inference.run raw_rate " in ln]
    assert len(serve) == 60 and len(raw) == 35
    for ln in serve + raw:
        assert "apptainer exec --nv" in ln and '"device": "cuda"' in ln, ln[:400]
    for ln in serve:  # Locust's image (the driver) is not a GPU step
        assert '"driver_exec": "apptainer exec --bind' in ln, ln[:400]
    assert not [ln for ln in full.splitlines() if "studies.inference.run ceiling " in ln and "--nv" in ln]
    local = snake("-n", "inference", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(on),
                  timeout=300).stdout
    c = _counts(local)
    assert c.get("inference_serve") == 9 and c.get("inference_raw_rate") == 5, local[-3000:]
    assert c.get("inference_claims") == 1 and c.get("inference_figure") == 4 and c.get("inference_table") == 2
    assert "--gres" not in local and "--nv" not in local
    bad = workspace / "inference-bad.yaml"
    bad.write_text("inference: {kinds: {triton-pytorch: triton-python-tf}}\n")
    out = snake("-n", "inference", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(bad),
                timeout=300, check=False)
    assert out.returncode != 0 and "inference.kinds.triton-pytorch" in out.stdout + out.stderr
    # the preparation asks what the configured models need, from the config, not a fixed 8 GB
    prep = full.split("rule inference_prepare:", 1)[1].split("\n\n", 1)[0]
    want = layout.prepare_mem_mb(tl.section(local=False), 24000)
    assert f"mem_mb={want}," in prep and want != 8000, prep
    small = workspace / "inference-small-node.yaml"
    small.write_text("inference: {enabled: true}\ncluster: {mem_mb_per_node: 3000}\n")
    out = snake("-n", "inference", "--profile", "profiles/slurm", "--configfile", "config/config.yaml", str(small),
                timeout=300, check=False)
    assert out.returncode != 0 and "cluster.mem_mb_per_node: 3000 MB" in out.stdout + out.stderr


def test_prepare_memory_follows_the_models_and_weights_and_refuses_a_small_node():
    small = tl.section(models=["resnet50"], kick={"server": "torchserve", "model": "resnet50"},
                       weights="random-from-config")
    big = tl.section(local=False)  # every model, pretrained weights
    assert layout.prepare_mem_mb(small, 100_000) < layout.prepare_mem_mb(big, 100_000)
    assert layout.prepare_mem_mb(small, 100_000) >= layout.PREPARE_PEAK_MB["resnet50"]
    pre = tl.section(local=False, models=["bart"], kick={"server": "torchserve", "model": "bart"})
    rnd = tl.section(local=False, models=["bart"], kick={"server": "torchserve", "model": "bart"},
                     weights="random-from-config")
    assert layout.prepare_mem_mb(pre, 100_000) >= 2 * layout.WEIGHTS_MB["bart"] > layout.prepare_mem_mb(rnd, 100_000)
    need = layout.prepare_mem_mb(big, 100_000)
    assert layout.prepare_mem_mb(big, need) == need
    with pytest.raises(layout.LayoutError, match=r"cluster\.mem_mb_per_node: 2000 MB.*inference\.models"):
        layout.prepare_mem_mb(big, 2000)
    assert layout.prepare_mem_mb(big, 2000, refuse=False) == need  # switched off: planned, not refused


def test_each_generated_analysis_rule_runs_its_own_command(snake, workspace):
    """inference_table and inference_figure come from one loop: each job must run its own script with
    its own outputs (a loop variable in `shell:` would be read again at run time, with the last values)."""
    meas = workspace / "results/inference/measurements.csv"
    meas.parent.mkdir(parents=True)
    tl.tidy_df(tl.paper_like()).to_csv(meas, index=False)
    on = workspace / "inference-on.yaml"
    on.write_text("inference: {enabled: true}\n")
    outs = ["results/inference/tables/table2.csv", "results/inference/tables/figure2.csv",
            "results/inference/figures/figure2.png"]
    snake(*outs, "--profile", "profiles/local", "--configfile", "config/local.yaml", str(on),
          "--allowed-rules", "inference_table", "inference_figure", "--rerun-triggers", "mtime", timeout=300)
    for out in outs:
        assert (workspace / out).stat().st_size > 0, out
    t2, f2 = ((workspace / f"results/inference/tables/{n}.csv").read_text() for n in ("table2", "figure2"))
    assert "usability" in t2.lower() or "criteri" in t2.lower(), t2[:300]  # table2.py's own table
    assert "resnet50" in f2 and t2.splitlines()[0] != f2.splitlines()[0]
