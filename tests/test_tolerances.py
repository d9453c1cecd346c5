"""Tolerances per judging scale (issue 28): repro.claims.tol reads the one of the section's scale with
its reason and refuses, naming the key, a tolerance missing a scale or a reason and a cluster reason
that cites the local machine; every per-scale tolerance the studies declare (schema defaults and the
config files) passes that check; the three config files each name their scale; claims.csv gains
`scale` and `tolerance_why` at the end and the report shows them beside the verdict."""

from __future__ import annotations

import pytest
import yaml

from repro import claims as C
from repro import config as rc
from repro import report
from repro.testing import REPO

GOOD = {
    "local": {"value": [0.5, 2.0], "why": "4 nodes on one host share 2 cores"},
    "rehearsal": {"value": [0.5, 2.0], "why": "namespace nodes share the same 2 cores"},
    "cluster": {"value": [0.8, 1.25], "why": "the paper's Table I: 1.00-1.04 s from 1 to 16 nodes"},
}


def section(node=GOOD, scale="cluster"):
    return {"judging_scale": scale, "claims": {"node_band": node}}


@pytest.mark.parametrize("scale, value", [("local", [0.5, 2.0]), ("rehearsal", [0.5, 2.0]),
                                          ("cluster", [0.8, 1.25])])
def test_tol_reads_the_sections_scale(scale, value):
    t = C.tol(section(scale=scale), "claims.node_band")
    assert (t.value, t.scale, t.key) == (value, scale, "claims.node_band")
    assert t.why == GOOD[scale]["why"]
    assert C.tol(section(scale="local"), "claims.node_band", scale=scale).value == value


@pytest.mark.parametrize("node, message", [
    ({k: v for k, v in GOOD.items() if k != "rehearsal"}, r"claims\.node_band\.rehearsal: missing"),
    ({**GOOD, "local": {"value": 1.0}}, r"claims\.node_band\.local\.why: missing"),
    ({**GOOD, "local": {"value": 1.0, "why": "  "}}, r"claims\.node_band\.local\.why: missing"),
    ({**GOOD, "cluster": {"why": "the paper"}}, r"claims\.node_band\.cluster: missing"),
    ({**GOOD, "cluster": {"value": 2, "why": "4 emulated nodes share 2 cores"}},
     r"claims\.node_band\.cluster\.why: cites the local machine \('2 cores', 'emulated'\)"),
    ({**GOOD, "cluster": {"value": 2, "why": "measured on this machine"}}, r"cluster\.why: cites the local machine"),
    ({**GOOD, "cluster": {"value": 2, "why": "four nodes on One Host"}}, r"cluster\.why: cites the local machine"),
    ({**GOOD, "huge": {"value": 2, "why": "x"}}, r"claims\.node_band: unknown scale\(s\) huge"),
    (0.05, r"claims\.node_band: not a per-scale tolerance"),
])
def test_tol_refuses_naming_the_key(node, message):
    with pytest.raises(C.ToleranceError, match=message):
        C.tol(section(node), "claims.node_band")


def test_a_paper_number_is_not_a_local_word():
    """Whole words only: the paper's "512 cores" is quoted, not the local machine ('2 cores' inside
    '512 cores' is no citation)."""
    t = C.tol(section({**GOOD, "cluster": {"value": 2, "why": "the paper's 512 cores of DAS-4"}}), "claims.node_band")
    assert t.value == 2
    with pytest.raises(C.ToleranceError, match=r"'2 cores'"):
        C.tol(section({**GOOD, "cluster": {"value": 2, "why": "measured on 2 cores"}}), "claims.node_band")


def test_tol_refuses_a_section_without_a_scale_and_a_missing_key():
    with pytest.raises(C.ToleranceError, match=r"claims\.node_band: no judging_scale"):
        C.tol({"claims": {"node_band": GOOD}}, "claims.node_band")
    with pytest.raises(C.ToleranceError, match=r"judging_scale: 'huge' is not one of"):
        C.tol(section(scale="huge"), "claims.node_band")
    with pytest.raises(C.ToleranceError, match=r"claims\.nope: no such tolerance"):
        C.tol(section(), "claims.nope")
    assert C.at_scale({"a": 1}, "rehearsal") == {"a": 1, "judging_scale": "rehearsal"}


def _per_scale_nodes(schema, value, path, out):
    """Every per-scale tolerance: a schema node $ref-ing tolerance.yaml (its required scales), with
    the value the config gives it or its default."""
    if not isinstance(schema, dict):
        return
    if schema.get("required") == ["local", "rehearsal", "cluster"]:
        out.append((".".join(path), value if value is not None else schema.get("default")))
        return
    for k, sub in (schema.get("properties") or {}).items():
        v = value.get(k) if isinstance(value, dict) else None
        if v is None and isinstance(sub, dict):
            v = sub.get("default")
        _per_scale_nodes(sub, v, path + [k], out)


@pytest.mark.parametrize("overlay", [[], ["config/local.yaml"], ["config/rehearsal.yaml"]])
def test_every_declared_tolerance_passes_the_check(overlay):
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for o in overlay:
        cfg = rc.deep_merge(cfg, yaml.safe_load((REPO / o).read_text()))
    cfg = rc.validate(cfg)
    found = []
    for study in rc.study_names():
        _per_scale_nodes(rc.study_schema(study), cfg.get(study), [study], found)
    for key, node in found:
        C.check_tolerance(key, node)   # raises, naming the key


@pytest.mark.parametrize("files, scale", [(["config/config.yaml"], "cluster"),
                                          (["config/config.yaml", "config/local.yaml"], "local"),
                                          (["config/config.yaml", "config/rehearsal.yaml"], "rehearsal")])
def test_each_config_file_names_its_judging_scale(files, scale):
    cfg = {}
    for f in files:
        cfg = rc.deep_merge(cfg, yaml.safe_load((REPO / f).read_text()))
    assert rc.validate(cfg)["judging_scale"] == scale
    with pytest.raises(rc.ConfigError, match="judging_scale"):
        rc.validate({**cfg, "judging_scale": "laptop"})


def test_claims_csv_gains_scale_and_why_at_the_end(tmp_path):
    assert C.COLUMNS[-2:] == ["scale", "tolerance_why"]
    assert C.COLUMNS[:14] == ["study", "claim_id", "claim", "paper_ref", "target", "output", "kind", "published",
                              "reproduced", "unit", "tolerance", "verdict", "system_kind", "note"]
    t = C.tol(section(scale="cluster"), "claims.node_band")
    judged = C.judge(C.shape_claim(C.Claim("s", "a", "x", "r", "t", "o"), True, "1.02", "same"), t,
                     text="ratio in [0.8, 1.25]")
    legacy = C.value_claim(C.Claim("s", "b", "y", "r", "t", "o"), 1.0, 1.0, rel_tol=0.1)
    C.write([judged, legacy], tmp_path / "claims.csv", scale="local")
    df = C.read(tmp_path / "claims.csv")
    assert list(df.columns) == C.COLUMNS
    assert df.scale.tolist() == ["cluster", "local"]            # a legacy claim gets the section's scale
    assert df.tolerance_why.tolist() == [GOOD["cluster"]["why"], ""]
    assert df.tolerance.tolist() == ["ratio in [0.8, 1.25]", "±10 %"]
    view = report.claim_view(df)
    assert list(view.columns) == report.CLAIM_COLS
    assert view.tolerance.tolist() == [f"ratio in [0.8, 1.25] (cluster: {GOOD['cluster']['why']})", "±10 %"]


def test_an_input_is_shown_not_judged():
    c = C.input_claim(C.Claim("tco", "x", "C_depl", "Table I", "t", "o"), 30.0, "Section V.A.2")
    assert (c.verdict, c.kind, c.note) == (C.INFO, "info", "taken from the paper: Section V.A.2")
    assert C.input_claim(C.Claim(*"abcdef"), None, "").verdict == C.NOT_RUN
