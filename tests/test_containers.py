"""The analysis image is built by its rule and the aggregation runs inside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pandas as pd
import pytest

from repro.testing import REPO, only_studies, project_env


@pytest.fixture()
def apptainer():
    env = project_env()
    path = shutil.which("apptainer", path=env["PATH"])
    if not path:
        pytest.skip("apptainer is not built (./repro setup builds it)")
    return path


def test_analysis_image_rule_and_sdm_apptainer(snake, workspace, apptainer):
    shutil.rmtree(workspace / "containers" / "sif", ignore_errors=True)
    # the analysis image and the two benchmark images this test has always covered (a study's own
    # image is tested with its study)
    snake(*(f"containers/sif/{n}.sif" for n in ("analysis", "mpifuse", "memfs")), "--profile", "profiles/local",
          timeout=1800)
    sif = workspace / "containers/sif/analysis.sif"
    labels = subprocess.run([apptainer, "inspect", "--labels", str(sif)], capture_output=True, text=True,
                            check=True).stdout
    assert "org.repro.image: analysis" in labels
    # the image's own %test: pandas, seaborn, weasyprint import
    subprocess.run([apptainer, "test", str(sif)], check=True, capture_output=True, timeout=300)

    # the cost models and the report (benchmark studies have their own container paths)
    overlay = workspace / "overlay.yaml"
    overlay.write_text(only_studies("tco", "cloudcost"))
    snake("--profile", "profiles/local", "--sdm", "apptainer", "--configfile", "config/local.yaml", str(overlay),
          timeout=1200)
    for study in ("tco", "cloudcost"):
        raw = json.loads((workspace / f"results/{study}/raw/model.json").read_text())
        assert raw["tool_versions"]["container"] == "analysis.sif", study  # it ran inside the image
    cl = pd.read_csv(workspace / "paper/claims.csv", dtype=str, keep_default_na=False)
    tco = cl[cl.study == "tco"]
    # every judged claim reproduces; the numbers taken from the paper are input rows (issue 28)
    assert len(tco) >= 13 and set(tco.verdict) == {"reproduced", "informative"}
    assert (tco.verdict == "reproduced").sum() >= 11
    assert tco[tco.verdict == "informative"].note.str.startswith("taken from the paper").all()
    assert (workspace / "paper/report.pdf").read_bytes()[:5] == b"%PDF-"


def _files_sources(deffile):
    """The source side of every %files line of a .def (build-sif hashes the same list)."""
    out, on = [], False
    for line in deffile.read_text().splitlines():
        if line.startswith("%"):
            on = line.strip() == "%files"
            continue
        if on and line.split():
            out.append(line.split()[0])
    return out


def test_every_def_files_entry_exists_and_covers_its_systems_sources():
    """A %files entry that names a missing file fails the image build only on a cluster or in the slow
    image test; here it fails at once. A systems/<x>/src the image copies from must be copied whole
    (a split source file left out of the list built a stale image -- caught by this test)."""
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    generated = {"containers/.build/host-ca.crt"}  # written by build-sif.sh before the build
    problems = []
    for deffile in sorted((repo / "containers").glob("*.def")):
        srcs = [s for s in _files_sources(deffile) if s not in generated]
        matched = set()
        for s in srcs:
            hits = sorted(repo.glob(s)) if any(c in s for c in "*?[") else ([repo / s] if (repo / s).exists() else [])
            if not hits:
                problems.append(f"{deffile.name}: %files names {s}, which does not exist")
            matched.update(h.resolve() for h in hits)
        for src_dir in sorted({Path(s).parts[:3] for s in srcs if s.startswith("systems/") and "/src/" in s}):
            for f in sorted((repo.joinpath(*src_dir)).glob("*")):
                if f.is_file() and f.suffix in (".c", ".h", ".rs", ".go", ".py") and f.resolve() not in matched:
                    problems.append(f"{deffile.name}: {f.relative_to(repo)} is not copied into the image")
    assert not problems, "\n".join(problems)


def test_a_changed_file_inside_a_files_directory_changes_the_image_key(tmp_path):
    """build-sif.sh's cache key covers every file of a %files directory (issue 27: sha256sum of a
    directory hashed nothing, so torchserve.sif kept a stale repro_inference/servers.py): a change
    inside the directory gives a new key, a Python cache file does not."""
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    (src / "a.py").write_text("A = 1\n")
    (src / "sub" / "b.py").write_text("B = 2\n")
    d = tmp_path / "x.def"
    d.write_text(f"Bootstrap: localimage\nFrom: base.sif\n%files\n    {src} /opt/pkg\n%post\n    true\n")
    script = REPO / "workflow" / "scripts" / "setup" / "build-sif.sh"

    def key():
        r = subprocess.run([str(script), str(d), str(tmp_path / "x.sif"), "--mirror", "http://m", "--cache",
                            str(tmp_path / "cache")], capture_output=True, text=True, check=True, timeout=60,
                           env={**os.environ, "REPRO_SIF_KEY_ONLY": "1"}, cwd=tmp_path)
        return r.stdout.strip().splitlines()[-1]

    k0 = key()
    assert len(k0) == 16 and key() == k0
    (src / "sub" / "b.py").write_text("B = 3\n")
    k1 = key()
    assert k1 != k0
    (src / "sub" / "__pycache__").mkdir()
    (src / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"\0")
    assert key() == k1
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())  # nothing built


def test_images_and_their_binds_follow_repro_cache(snake, workspace, tmp_path):
    """REPRO_CACHE moves every cache: the built images' (build-sif.sh --cache) and the prepared inputs a
    side in its image reads (the inference models) -- bound into the image. Found by a rehearsal with
    REPRO_CACHE=/work/cacheA: the images came from ~/.cache/repro/sif (a fixed default) and every
    inference job in its image failed 'No such file .../cacheA/inference-models-.../manifest-...'
    (Apptainer binds $HOME, so under ~/.cache/repro it had never shown)."""
    cache = tmp_path / "elsewhere-cache"
    cache.mkdir()
    snake.env["REPRO_CACHE"] = str(cache)
    on = workspace / "inference-on.yaml"
    on.write_text("inference: {enabled: true}\n")
    plan = snake("-n", "-p", "-F", "containers/sif/locust.sif", "results/inference/raw/experiment~raw_rate/"
                 "model~resnet50/framework~torch/rep~0.json", "--profile", "profiles/slurm",
                 "--configfile", "config/config.yaml", str(on), timeout=300).stdout
    assert f"--cache {cache}/sif" in plan, plan[-3000:]
    runs = [ln for ln in plan.splitlines() if "apptainer exec" in ln and "studies.inference.run raw_rate" in ln]
    assert runs, plan[-3000:]
    for ln in runs:
        binds = ln.split("--bind ", 1)[1].split()[0].split(",")
        assert str(cache) in binds, ln[:500]
