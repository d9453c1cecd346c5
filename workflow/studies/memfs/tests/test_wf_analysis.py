"""Tables, figures and claims come from raw files only: numbers recomputed from the raw
files equal the tables; missing and failed runs show as such, never as zeros."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from repro import config as rc
from repro import rawio

REPO = Path(__file__).resolve().parents[4]
STUDY = REPO / "workflow" / "studies" / "memfs"

SWEEPS = {"vertical": {"nodes": [2], "tasks_per_node": [1, 2]}, "horizontal": {"nodes": [1, 2], "tasks_per_node": [1]}}
WF_CFG = {"applications": ["montage", "blast"], "designs": ["memfs", "locality", "local-disk"], "sweeps": SWEEPS,
          "repeats": 2}
TIDY_ARGS = ["--expected", "expected.txt", "--config", json.dumps(WF_CFG), "--out", "m.csv", "--summary", "s.csv"]
PUBLISHED = [str(STUDY / "published.csv"), str(STUDY / "published_workflows.csv")]


def _record(app, design, n, k, rep, data, stage_s):
    rec = rawio.new_record("memfs", f"workflow_{app}", {"workflow": app, "design": design, "nodes": n,
                                                        "tasks_per_node": k}, rep, "stand-in:network-namespaces")
    m = rawio.metric
    stages = ["mProjectPP", "mDiffFit", "mBackground"] if app == "montage" else ["formatdb", "blastall"]
    for s in stages:
        rec["metrics"].append(m("stage_time", stage_s, "s", stage=s, timed=True))
    rec["metrics"].append(m("stage_time", 0.1, "s", stage="mAdd" if app == "montage" else "merge", timed=False))
    rec["metrics"].append(m("parallel_time", stage_s * len(stages), "s"))
    for node, b in enumerate(data, start=1):
        role = "scheduler" if node == 1 else "other"
        rec["metrics"].append(m("data_bytes", b, "B", node=node, role=role))
        rec["metrics"].append(m("memory_bytes", b + 5e6, "B", node=node, role=role))
    rec["metrics"].append(m("aggregate_data_bytes", sum(data), "B"))
    rec["metrics"].append(m("aggregate_memory_bytes", sum(data) + 5e6 * len(data), "B"))
    return rawio.finish(rec)


@pytest.fixture()
def raw_tree(tmp_path, monkeypatch):
    """Raw files of a small matrix with known numbers (one run missing, one failed)."""
    monkeypatch.chdir(tmp_path)  # restored after the test: a bare os.chdir broke later tests' relative paths
    expected = []
    cfgs = sorted({(n, k) for s in SWEEPS.values() for n in s["nodes"] for k in s["tasks_per_node"]})
    for app in ("montage", "blast"):
        for design in ("memfs", "locality", "local-disk"):
            for n, k in cfgs:
                for rep in range(2):
                    path = (f"results/memfs/raw/workflow~{app}/design~{design}/nodes~{n}/tasks_per_node~{k}/"
                            f"rep~{rep}.json")
                    expected.append(path)
                    if (app, design, n, k, rep) == ("blast", "local-disk", 2, 2, 1):
                        continue  # not run
                    base = 10e6 * (rep + 1)
                    data = [base * (3 if design == "locality" else 1)] + [base] * (n - 1)
                    rec = _record(app, design, n, k, rep, data, stage_s=(2.0 if design == "memfs" else 3.0) / n)
                    if (app, design, n, k, rep) == ("blast", "memfs", 1, 1, 0):
                        rawio.write_failure(path, rec, "a task failed")
                        continue
                    rawio.write_json_atomic(path, rec)
    exp = tmp_path / "expected.txt"
    exp.write_text("\n".join(expected) + "\n")
    return tmp_path, expected


def _script(name, *args):
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, "-m", f"studies.memfs.{name}", *args], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


def test_memory_per_node_recomputed_from_raw_files_equals_table(raw_tree):
    _, expected = raw_tree
    _script("wf_tidy", *TIDY_ARGS)
    _script("wf_table2_3", "--measurements", "m.csv", "--config", json.dumps({"sweeps": SWEEPS}),
            "--published", *PUBLISHED, "--out", "t23.csv")
    tab = pd.read_csv("t23.csv")
    # recompute straight from the JSON documents
    for app in ("montage", "blast"):
        for design in ("memfs", "locality", "local-disk"):
            sched, other = [], []
            for rep in range(2):
                p = f"results/memfs/raw/workflow~{app}/design~{design}/nodes~2/tasks_per_node~1/rep~{rep}.json"
                if not os.path.exists(p):
                    continue
                with open(p) as fh:
                    rec = json.load(fh)
                d = {m["labels"]["node"]: m["value"] for m in rec["metrics"] if m["metric"] == "data_bytes"}
                sched.append(d[1])
                other.append(sum(v for k, v in d.items() if k != 1) / (len(d) - 1))
            row = tab[(tab.workflow == app) & (tab.design == design) & (tab.nodes == 2)].iloc[0]
            assert row.scheduler_node_MB == pytest.approx(sum(sched) / len(sched) / 1e6, abs=1e-3)
            assert row.other_nodes_MB == pytest.approx(sum(other) / len(other) / 1e6, abs=1e-3)
            assert row.ratio_scheduler_to_other == pytest.approx(3.0 if design == "locality" else 1.0, abs=1e-3)
    # the paper's rows sit beside ours, in their own rows
    paper = tab[tab.design == "AMFS (paper)"].set_index("nodes")
    assert paper.loc[8, "scheduler_node_MB"] == 19000 and paper.loc[64, "other_nodes_MB"] == 1800
    # failed and missing runs are counted, never filled in
    m = pd.read_csv("m.csv", low_memory=False)
    runs = m.drop_duplicates("raw_file").status.value_counts().to_dict()
    assert runs == {"ok": len(expected) - 2, "failed": 1, "not-run": 1}
    assert m[m.status != "ok"].value.isna().all()
    row = tab[(tab.workflow == "blast") & (tab.design == "memfs") & (tab.nodes == 1)].iloc[0]
    assert row.runs_failed == 1 and row.runs_ok == 1


def _wf_section() -> dict:
    """memfs.workflows as the rules hand it to the analysis (mwf_cfg): the schema's defaults, these
    sweeps, and the judging scale the claims' tolerances are read at."""
    wf = rc.study_schema("memfs")["properties"]["workflows"]
    claims = {k: v["default"] for k, v in wf["properties"]["claims"]["properties"].items()}
    return {"sweeps": SWEEPS, "claims": claims, "judging_scale": "local"}


def _analyse(min_figure_bytes: int) -> None:
    """Table 2.3, Figures 2.7-2.9 and the claims from m.csv (t23.csv, f7-9.png, claims.csv)."""
    sw = json.dumps(_wf_section())
    _script("wf_table2_3", "--measurements", "m.csv", "--config", sw, "--published", *PUBLISHED,
            "--out", "t23.csv")
    for fig in ("7", "8", "9"):
        _script(f"wf_figure2_{fig}", "--measurements", "m.csv", "--config", sw, "--out", f"f{fig}.png")
        assert os.path.getsize(f"f{fig}.png") > min_figure_bytes
    _script("wf_claims", "--measurements", "m.csv", "--config", sw, "--published", *PUBLISHED,
            "--table23", "t23.csv", "--out", "claims.csv")


def test_figures_and_claims_from_the_tidy_table(raw_tree):
    _script("wf_tidy", *TIDY_ARGS)
    _analyse(min_figure_bytes=10_000)
    cl = pd.read_csv("claims.csv", dtype=str, keep_default_na=False).set_index("claim_id")
    # the synthetic numbers: locality 3x on node 1, MemFS balanced, MemFS faster, both scale out
    assert cl.loc["W1", "verdict"] == "reproduced"
    assert cl.loc["W2", "verdict"] == "reproduced"
    assert cl.loc["W6", "verdict"] == "reproduced"
    assert cl.loc["W7-montage-memfs", "verdict"] == "reproduced"
    assert cl.loc["W3", "verdict"] == "not run"  # one node count > 1 only
    assert (cl[cl.kind == "info"].verdict == "informative").all()
    assert set(cl.system_kind) == {"stand-in:network-namespaces"}


def _tidy_fails(*args):
    r = subprocess.run([sys.executable, "-m", "studies.memfs.wf_tidy", *TIDY_ARGS, *args], capture_output=True,
                       text=True)
    assert r.returncode != 0, f"a disagreeing expected-run list was accepted: {r.stdout}"
    assert not os.path.exists("m.csv"), "the tidy table was written despite the disagreement"
    return r.stderr


def test_a_stale_expected_list_fails_naming_the_missing_runs(raw_tree):
    """--rerun-triggers mtime leaves a list written for an older, smaller config: the tidy step
    must fail naming the runs the config asks for, not show them as 'not run'."""
    _, expected = raw_tree
    stale = expected[:9]
    Path("expected.txt").write_text("\n".join(stale) + "\n")
    err = _tidy_fails()
    assert f"({len(expected) - 9})" in err
    for p in expected[9:9 + 30]:
        assert p in err
    # a list naming a run the config does not ask for
    extra = "results/memfs/raw/workflow~montage/design~memfs/nodes~8/tasks_per_node~1/rep~0.json"
    Path("expected.txt").write_text("\n".join([*expected, extra]) + "\n")
    err = _tidy_fails()
    assert "not expected by the config (1)" in err and extra in err


def test_a_raw_file_the_config_does_not_expect_fails(raw_tree):
    _, expected = raw_tree
    stray = "results/memfs/raw/workflow~blast/design~memfs/nodes~4/tasks_per_node~1/rep~0.json"
    Path(stray).parent.mkdir(parents=True)
    Path(stray).write_text(Path(expected[0]).read_text())
    err = _tidy_fails()
    assert "raw files on disk the config does not expect" in err and stray in err
    os.remove(stray)
    _script("wf_tidy", *TIDY_ARGS)


def test_no_workflow_run_at_all_is_not_run_not_a_crash(raw_tree):
    """A report built from what exists (allow_incomplete) before any workflow run finished: the tidy
    table has only not-run rows and no label columns; Table 2.3, the figures and the claims still come
    out, no claim judged (the readers crashed on the missing 'timed' column)."""
    _, expected = raw_tree
    for p in expected:
        if os.path.exists(p):
            os.remove(p)
    _script("wf_tidy", *TIDY_ARGS)
    assert set(pd.read_csv("m.csv").status) == {"not-run", "failed"}  # the fixture's failure record stays
    _analyse(min_figure_bytes=0)
    cl = pd.read_csv("claims.csv", dtype=str, keep_default_na=False)
    shape = cl[cl.kind != "info"]
    # nothing judged: not run, or a cluster-scale statement (cluster-only whatever the numbers)
    assert (shape.verdict == "not run").sum() > 5, shape[["claim_id", "verdict"]].to_string()
    assert set(shape.verdict) <= {"not run", "cluster-only"}, shape[["claim_id", "verdict"]].to_string()
