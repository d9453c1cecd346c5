"""workflow/scripts/analysis_diff.py (issue 29's "analysis outputs byte-identical"): two checkouts'
output trees compared byte for byte -- one changed byte is reported with its file, a PNG whose image
is the same but whose metadata differs is told apart from one whose pixels differ, and a plan's run
jobs (benchmark resource, raw outputs, images) are never taken for analysis jobs."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import zlib

from repro.testing import REPO

SCRIPT = REPO / "workflow/scripts/analysis_diff.py"
_spec = importlib.util.spec_from_file_location("analysis_diff", SCRIPT)
ad = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ad)


def _png(pixels: bytes, text: bytes = b"") -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 2, 1, 8, 0, 0, 0, 0)  # 2x1, 8-bit grey
    meta = chunk(b"tEXt", b"Software\x00" + text) if text else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + meta + chunk(b"IDAT", zlib.compress(b"\x00" + pixels))
            + chunk(b"IEND", b""))


def _tree(root, files):
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


FILES = {
    "measurements.csv": b"metric,value,rep\nbw,1.25,0\nbw,1.50,1\n",
    "claims.csv": b"claim,verdict\nC1,holds\n",
    "tables/summary.json": b'{"a": 1, "b": [1, 2]}\n',
    "report.md": b"# report\n\n| x | y |\n",
    "figures/figure1.png": _png(b"\x10\x20", b"matplotlib version 3.9"),
}


def test_identical_trees_are_identical(tmp_path):
    a, b = _tree(tmp_path / "a", FILES), _tree(tmp_path / "b", FILES)
    rows = ad.compare_trees(a, b)
    assert [r["file"] for r in rows] == sorted(FILES)
    v = ad.verdict(rows)
    assert v["verdict"] == "identical" and v["identical"] == 5 and v["data_files"] == 4 and v["pngs"] == 1


def test_one_changed_byte_is_reported_with_its_file_and_a_diff(tmp_path):
    a = _tree(tmp_path / "a", FILES)
    b = _tree(tmp_path / "b", {**FILES, "measurements.csv": FILES["measurements.csv"].replace(b"1.50", b"1.51")})
    v = ad.verdict(ad.compare_trees(a, b))
    assert v["verdict"] == "differs" and v["identical"] == 4
    (bad,) = v["differing"]
    assert bad["file"] == "measurements.csv" and bad["status"] == "differs" and not bad["shape_only"]
    assert "-bw,1.50,1" in bad["diff"] and "+bw,1.51,1" in bad["diff"]
    # the command line says so too, and fails
    r = subprocess.run([sys.executable, str(SCRIPT), "compare", str(a), str(b)], capture_output=True, text=True)
    assert r.returncode == 1 and "differs: measurements.csv: content differs" in r.stdout
    r = subprocess.run([sys.executable, str(SCRIPT), "compare", str(a), str(a)], capture_output=True, text=True)
    assert r.returncode == 0 and ": identical (5 files compared" in r.stdout


def test_a_file_written_by_one_checkout_only(tmp_path):
    a = _tree(tmp_path / "a", FILES)
    b = _tree(tmp_path / "b", {**FILES, "tables/extra.csv": b"x\n1\n"})
    v = ad.verdict(ad.compare_trees(a, b))
    assert v["verdict"] == "differs" and [(r["file"], r["status"]) for r in v["differing"]] == [
        ("tables/extra.csv", "only-after")]


def test_png_metadata_only_is_told_apart_from_other_pixels(tmp_path):
    a = _tree(tmp_path / "a", FILES)
    b = _tree(tmp_path / "b", {**FILES, "figures/figure1.png": _png(b"\x10\x20", b"matplotlib version 3.10")})
    v = ad.verdict(ad.compare_trees(a, b))
    assert v["verdict"] == "data identical; PNGs differ only in metadata"
    assert v["differing"][0]["shape_only"] and "tEXt" in v["differing"][0]["why"]
    c = _tree(tmp_path / "c", {**FILES, "figures/figure1.png": _png(b"\x10\x21", b"matplotlib version 3.9")})
    v = ad.verdict(ad.compare_trees(a, c))
    assert v["verdict"] == "differs" and v["differing"][0]["why"] == "PNG: the image itself differs"


def test_same_data_in_another_order_is_shape_only(tmp_path):
    a = _tree(tmp_path / "a", FILES)
    b = _tree(tmp_path / "b", {**FILES, "tables/summary.json": b'{"b": [1, 2], "a": 1}\n',
                               "measurements.csv": b"metric,value,rep\nbw,1.50,1\nbw,1.25,0\n"})
    v = ad.verdict(ad.compare_trees(a, b))
    assert v["verdict"] == "differs in shape only (order, formatting, path); same data"
    why = {r["file"]: r["why"] for r in v["differing"]}
    assert why == {"measurements.csv": "CSV: same 2 rows, other row order",
                   "tables/summary.json": "JSON: same data, other key order or formatting"}
    # a list in another order is other data
    c = _tree(tmp_path / "c", {**FILES, "tables/summary.json": b'{"a": 1, "b": [2, 1]}\n'})
    assert ad.verdict(ad.compare_trees(a, c))["verdict"] == "differs"


PLAN = """rule st_run:
    input: containers/sif/x.sif, workflow/studies/st/run.py
    output: results/st/raw/size~1/rep~0.json
    log: results/st/log/run.log
    jobid: 3
    resources: tmpdir=/tmp, nodes=2, tasks=2, mpi=srun, bench=1, host_share=2
rule st_prepare:
    input: workflow/studies/st/prepare.py
    output: results/st/models.json
    jobid: 4
    resources: tmpdir=/tmp, bench=1
rule build_container:
    input: containers/x.def
    output: containers/sif/x.sif
    jobid: 5
    resources: tmpdir=/tmp
rule st_model:
    input: workflow/studies/st/model.py
    output: results/st/raw/model.json, results/st/tables/inputs.csv
    jobid: 6
    resources: tmpdir=/tmp
rule st_aggregate:
    input: workflow/studies/st/aggregate.py, results/st/raw/size~1/rep~0.json, results/st/models.json
    output: results/st/measurements.csv, results/st/tables/summary.csv
    jobid: 1
    resources: tmpdir=/tmp, runtime=20, mem_mb=2000
localrule st:
    input: results/st/measurements.csv
    jobid: 0
    resources: tmpdir=/tmp
"""


def test_run_jobs_are_never_analysis_jobs(tmp_path):
    jobs = ad.parse_plan(PLAN)
    assert [j["rule"] for j in jobs] == ["st_run", "st_prepare", "build_container", "st_model", "st_aggregate", "st"]
    rules, outs = ad.analysis_jobs(jobs, "st")
    assert rules == {"st_aggregate", "st"}
    assert outs == {"results/st/measurements.csv", "results/st/tables/summary.csv"}
    # the fresh results dir: every input copied with its time, no analysis output, no log
    src = _tree(tmp_path / "rehearsal-results", {
        "st/raw/size~1/rep~0.json": b"{}", "st/models.json": b"[]", "st/tables/inputs.csv": b"a\n",
        "st/measurements.csv": b"old", "st/tables/summary.csv": b"old", "st/log/run.log": b"log"})
    checkout = tmp_path / "checkout"
    _tree(checkout, {"results/st/tables/stale.csv": b"from an earlier run"})
    copied = ad.fresh_results(checkout, src, "st", outs, set())
    assert copied == ["results/st/models.json", "results/st/raw/size~1/rep~0.json", "results/st/tables/inputs.csv"]
    assert sorted(str(p.relative_to(checkout)) for p in checkout.rglob("*") if p.is_file()) == copied
    assert (checkout / copied[0]).stat().st_mtime == (src / "st/models.json").stat().st_mtime
