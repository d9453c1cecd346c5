"""The fusespeed claims (issues 13's and 22's targets, ours) follow the data: met -> reproduced, data that
contradicts the target -> not reproduced, a failed measurement -> failed, a median above 1.0 of a limit
-> informative (never a result), context rows without a target make no claim. Synthetic raw records
(test_fusespeed_report's) and the measured fixtures; no timings of this machine."""

from __future__ import annotations

import pytest
from repro import claims as cl
from studies.fusespeed import claims

from fusespeed_testlib import FIXTURES
from test_fusespeed_report import NAT5, NATIVE, record, scaled


def by_id(rec):
    return {c.claim_id: c for c in claims.build(rec)}


def issue22_record(map_f, ceil_f):
    return record({("native", "sha256sum"): NAT5, ("osr-refined-map", "sha256sum"): scaled(NAT5, *map_f),
                   ("fuse-ceiling", "sha256sum"): scaled(NAT5, *ceil_f),
                   ("osr-refined", "sha256sum"): scaled(NAT5, *[0.5] * 5)})


def test_issue22_target_met_is_reproduced_and_contradicting_data_is_not():
    met = by_id(issue22_record([0.99, 0.97, 0.96, 0.98, 0.96], [1.0, 0.99, 0.98, 1.0, 0.99]))
    c = met["issue22_osr-refined-map_sha256sum"]
    assert c.verdict == cl.REPRODUCED and c.reproduced == "0.97x" and c.target == ">= 0.95x native", c
    assert c.study == "fusespeed" and c.output == "results/fusespeed/tables/issue22.csv"
    # the contradicting case: the variant at 0.76x native -> not reproduced
    low = by_id(issue22_record([0.76, 0.8, 0.74, 0.77, 0.75], [0.8, 0.82, 0.78, 0.8, 0.79]))
    assert low["issue22_osr-refined-map_sha256sum"].verdict == cl.NOT_REPRODUCED
    assert "the FUSE path" in low["issue22_osr-refined-map_sha256sum"].note
    # refined OSR without map_source at 0.5x: not reproduced in both issues' rows
    assert met["issue22_osr-refined_sha256sum"].verdict == cl.NOT_REPRODUCED
    assert met["issue13_osr-refined_sha256sum"].verdict == cl.NOT_REPRODUCED


def test_a_measurement_error_is_informative_never_reproduced():
    c = by_id(issue22_record([1.1, 1.05, 1.2, 0.9, 1.02], [1.0] * 5))["issue22_osr-refined-map_sha256sum"]
    assert c.verdict == cl.INFO and c.note.startswith("measurement error"), c


@pytest.mark.parametrize("dd, verdict", [([4.0, 2.0, 8.0], cl.REPRODUCED), ([2.0, 1.0, 4.0], cl.NOT_REPRODUCED)])
def test_issue13_kernel_passthrough_follows_the_data(dd, verdict):
    got = by_id(record({**NATIVE, ("kpassthrough", "dd"): dd}))
    assert got["issue13_kpassthrough_dd"].verdict == verdict
    assert "issue13_passthrough_dd" not in got  # the context row has no target: no claim


def test_a_failed_measurement_is_failed():
    fails = [{"variant": "kpassthrough", "tool": "sha256sum", "nodes": 1, "rep": r, "why": "wrong hash"}
             for r in range(3)]
    got = by_id(record({**NATIVE, ("kpassthrough", "sha256sum"): [None] * 3}, failures=fails))
    assert got["issue13_kpassthrough_sha256sum"].verdict == cl.FAILED


def test_the_measured_quiet_run_gives_the_readme_verdicts():
    from repro import rawio

    got = by_id(rawio.read(FIXTURES / "speed-issue22-2026-11-27T0541.json"))  # load 1.8-2.3
    assert got["issue22_osr-refined-map_sha256sum"].verdict == cl.NOT_REPRODUCED  # 0.89x: not met
    assert got["issue22_osr-refined-map_sha256sum"].reproduced == "0.89x"
    assert got["issue13_kpassthrough_sha256sum"].verdict == cl.REPRODUCED
    assert all(c.system_kind.startswith("stand-in:") for c in got.values())
