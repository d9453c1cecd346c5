"""The selfcheck engine (repro.selfcheck, issue 28): a study's claims on the paper's own numbers at
cluster scale, each perturbed input flipping its verdict. Each failure kind is named and fails the
run (exit 1): a claim not reproduced without a declared contradiction, a declared contradiction that
reproduces, a claim not run without a reason, a reproduced claim no perturbation moves, a perturbation
that does not flip or names no claim, a module that raises. The tco study's selfcheck passes, and
fails when its paper's numbers contradict it; the report page lists failures first."""

from __future__ import annotations

import copy
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

from repro import claims as C
from repro import pythonpath, report_selfcheck, selfcheck
from repro.testing import REPO
from studies.tco import selfcheck as tco_sc


def _claim(cid, value, published=1.0, rel=0.1, verdict=None):
    c = C.Claim("fake", cid, f"claim {cid}", "Table 1", "t", "o")
    if verdict is not None:
        c.verdict, c.kind = verdict, "value"
        return c
    return C.value_claim(c, value, published, rel_tol=rel)


def fake(**over):
    """A selfcheck module whose inputs are {claim id: value}; each claim is value within 10 % of 1.0."""
    def claims(inputs, cfg):
        assert cfg["judging_scale"] == "cluster"
        return [_claim(cid, v) if v != "not run" else _claim(cid, None, verdict=C.NOT_RUN)
                for cid, v in inputs.items()]
    mod = dict(paper_inputs=lambda pub, cfg: {"a": 1.0, "b": 1.05}, claims=claims,
               PERTURB=[("a", "a 1.0 -> 2.0", lambda i: {**i, "a": 2.0}),
                        ("b", "b 1.05 -> 1.5", lambda i: {**i, "b": 1.5})])
    mod.update(over)
    return SimpleNamespace(**mod)


def rows(mod) -> pd.DataFrame:
    return pd.DataFrame([r.__dict__ for r in selfcheck.check_study("fake", mod, pd.DataFrame(), {})])


def fails(df):
    return df[df.status == selfcheck.FAIL]


def test_a_study_that_reproduces_and_flips_passes():
    df = rows(fake())
    assert fails(df).empty, df
    assert df.claim.tolist() == ["a", "b", "a", "b"] and set(df.scale) == {"cluster"}
    pert = df[df.perturbation != ""]
    assert pert.flipped.tolist() == ["yes", "yes"] and set(pert.verdict_perturbed) == {C.NOT_REPRODUCED}


@pytest.mark.parametrize("over, claim, why", [
    ({"paper_inputs": lambda pub, cfg: {"a": 1.0, "b": 1.5},
      "PERTURB": [("a", "a", lambda i: {**i, "a": 2.0}), ("b", "b", lambda i: {**i, "b": 1.0})]},
     "b", "not reproduced on the paper's own numbers, and no"),
    ({"EXPECTED_CONTRADICTIONS": {"a": "Table 1 says 1, the text 2"}}, "a", "declared a contradiction of the paper"),
    ({"paper_inputs": lambda pub, cfg: {"a": 1.0, "b": 1.05, "c": "not run"}}, "c",
     "not run on the paper's own numbers and not in UNCHECKED"),
    ({"PERTURB": [("a", "a 1.0 -> 2.0", lambda i: {**i, "a": 2.0})]}, "b", "no perturbation moves it"),
    ({"PERTURB": [("a", "a 1.0 -> 1.05", lambda i: {**i, "a": 1.05}),
                  ("b", "b 1.05 -> 1.5", lambda i: {**i, "b": 1.5})]}, "a", "does not flip: reproduced -> reproduced"),
    ({"PERTURB": [("a", "a", lambda i: {**i, "a": 2.0}), ("b", "b", lambda i: {**i, "b": 1.5}),
                  ("zz", "nothing", lambda i: i)]}, "zz", "perturbation names a claim"),
])
def test_each_failure_is_named(over, claim, why):
    bad = fails(rows(fake(**over)))
    assert len(bad) == 1 and bad.claim.iloc[0] == claim and why in bad.why.iloc[0], bad.to_dict("records")


def test_declared_contradictions_and_unchecked_claims_pass_with_their_reason():
    df = rows(fake(paper_inputs=lambda pub, cfg: {"a": 1.0, "b": 1.5, "c": "not run"},
                   EXPECTED_CONTRADICTIONS={"b": "the text says 1.5 to 2, Table I 1.46"},
                   UNCHECKED={"c*": "the paper gives no value for c"},
                   PERTURB=[("a", "a", lambda i: {**i, "a": 2.0}), ("b", "b back to 1.0", lambda i: {**i, "b": 1.0})]))
    assert fails(df).empty, df
    got = df[df.perturbation == ""].set_index("claim").why
    assert got["b"] == "the paper contradicts itself: the text says 1.5 to 2, Table I 1.46"
    assert got["c"] == "not checked: the paper gives no value for c"
    # a contradiction's perturbation flips the other way
    assert df[df.perturbation == "b back to 1.0"].verdict_perturbed.iloc[0] == C.REPRODUCED


def test_the_tco_selfcheck_passes_and_every_judged_claim_flips():
    from repro import published as pubvals
    pub = pubvals.load(REPO / "workflow/studies/tco/published.csv")
    df = pd.DataFrame([r.__dict__ for r in selfcheck.check_study("tco", tco_sc, pub, tco_sc_cfg())])
    assert fails(df).empty, fails(df)
    claims = df[df.perturbation == ""]
    assert len(claims) == 15 and (claims.verdict == C.REPRODUCED).sum() == 11
    assert set(claims[claims.verdict == C.INFO].claim) == {"table1-vehicle-C_depl", "table1-vehicle-C_exe",
                                                           "table1-cloud-C_depl", "cloud-csp-per-vehicle-month"}
    pert = df[df.perturbation != ""]
    assert set(pert.claim) == set(claims[claims.verdict == C.REPRODUCED].claim)
    assert (pert.flipped == "yes").all()


def test_the_tco_selfcheck_reads_the_published_values():
    """The model is built from published.csv: a software cost the paper did not state moves Table I,
    and a published TCO the model cannot reach fails the claim unless a contradiction is declared."""
    from repro import published as pubvals
    pub = pubvals.load(REPO / "workflow/studies/tco/published.csv")
    moved = pub.copy()
    moved.loc[(moved.quantity == "C_dev_software") & (moved.platform == "vehicle"), "value"] = "160000"
    bad = fails(pd.DataFrame([r.__dict__ for r in selfcheck.check_study("tco", tco_sc, moved, tco_sc_cfg())]))
    assert "table1-vehicle-C_dev" in set(bad.claim)
    wrong = pub.copy()
    wrong.loc[(wrong.quantity == "TCO") & (wrong.platform == "cloud"), "value"] = "180250.00"
    wrong["value_num"] = pd.to_numeric(wrong["value"], errors="coerce")
    bad = fails(pd.DataFrame([r.__dict__ for r in selfcheck.check_study("tco", tco_sc, wrong, tco_sc_cfg())]))
    assert set(bad[bad.perturbation == ""].claim) == {"tco-cloud"}
    declared = SimpleNamespace(**{k: getattr(tco_sc, k) for k in ("paper_inputs", "claims", "PERTURB")},
                               EXPECTED_CONTRADICTIONS={"tco-cloud": "test"})
    df = pd.DataFrame([r.__dict__ for r in selfcheck.check_study("tco", declared, wrong, tco_sc_cfg())])
    assert fails(df[df.perturbation == ""]).empty


def tco_sc_cfg():
    from repro import config as rc
    return copy.deepcopy(rc.load(REPO / "config/config.yaml")["tco"])


def _fake_package(tmp_path, body):
    pkg = tmp_path / "fakestudies"
    (pkg / "bad").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bad" / "__init__.py").write_text("")
    (pkg / "bad" / "rules.smk").write_text("")
    (pkg / "bad" / "published.csv").write_text("source,quantity,value\nTable 1,x,1\n")
    (pkg / "bad" / "selfcheck.py").write_text(body)
    return pkg


def test_the_command_exits_1_naming_each_failure_and_the_page_lists_them_first(tmp_path):
    pkg = _fake_package(tmp_path, "from repro import claims as C\n"
                        "def paper_inputs(pub, cfg):\n    return float(pub.value_num.iloc[0])\n"
                        "def claims(x, cfg):\n"
                        "    return [C.value_claim(C.Claim('bad', 'x', 'x', 'T1', 't', 'o'), x, 2.0, rel_tol=0.1)]\n"
                        "PERTURB = [('x', 'x 1 -> 2', lambda x: 2.0)]\n")
    out = tmp_path / "selfcheck.csv"
    env = {"PYTHONPATH": f"{tmp_path}:{pythonpath.value(REPO, '')}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "repro.selfcheck", "--studies-dir", str(pkg), "--package",
                           "fakestudies", "--config", str(REPO / "config/config.yaml"), "--out", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL bad x: not reproduced on the paper's own numbers" in proc.stdout
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(df.columns) == selfcheck.COLUMNS
    assert df.status.tolist() == ["FAIL", "ok"]   # the claim fails; its perturbation flips it (to reproduced)
    html = "\n".join(report_selfcheck.body(out))
    assert "<b>1 failure(s)</b>" in html and html.index("FAIL") < html.index("x 1 -&gt; 2")
    # a module that raises is a failure row, named
    pkg = _fake_package(tmp_path / "2", "def paper_inputs(pub, cfg):\n    raise KeyError('no Table 9')\n")
    proc = subprocess.run([sys.executable, "-m", "repro.selfcheck", "--studies-dir", str(pkg), "--package",
                           "fakestudies", "--config", str(REPO / "config/config.yaml"), "--out", str(out)],
                          cwd=REPO, env={**env, "PYTHONPATH": f"{tmp_path / '2'}:{env['PYTHONPATH']}"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "selfcheck raised KeyError: 'no Table 9'" in proc.stdout, proc.stdout


def test_repro_selfcheck_on_the_repository(tmp_path):
    out = tmp_path / "selfcheck.csv"
    proc = subprocess.run(["./repro", "selfcheck", "tco", "cloudcost", "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "selfcheck: 15 claims, 12 perturbations, 0 failures" in proc.stdout
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert set(df.study) == {"tco", "cloudcost"} and (df.status == "ok").all()
    assert "no published inputs" in df[df.study == "cloudcost"].why.iloc[0]
    assert "no failures" in report_selfcheck.summary_line(out)
    assert "No selfcheck here" in "".join(report_selfcheck.body(tmp_path / "none.csv"))
