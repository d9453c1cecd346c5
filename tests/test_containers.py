"""The analysis image is built by its rule and the aggregation runs inside it."""

from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest

from repro.testing import only_studies, project_env


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
    assert len(tco) >= 13 and (tco.verdict == "reproduced").all()
    assert (workspace / "paper/report.pdf").read_bytes()[:5] == b"%PDF-"
