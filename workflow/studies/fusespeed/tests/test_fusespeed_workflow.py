"""The fusespeed rules (issue 23: the speed benchmark as a study of its own): the cluster plan's run job
gets the fusespeed section (without the plan-only `enabled`) and mpifuse's run section (--uses mpifuse=: the
file systems' options; without mpifuse's judging and plan-only keys), so changing fusespeed.enabled or
mpifuse's figure4 / kick changes no benchmark command while mpifuse's fs_options does; the file systems
come through the engine (its declaration's uses, workflow/rules/uses.smk), so the plan and the report's
stand-ins are the same with fusespeed's rules included before mpifuse's; and a real `snakemake
fusespeed` on this host with a tiny overlay writes the raw file, the report and the claims."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import socket

import pytest
import yaml
from repro import config as rc
from repro import rawio
from repro.testing import REPO, only_studies

from fusespeed_testlib import mpifuse_ready  # noqa: F401


def test_the_schema_marks_only_enabled_plan_only():
    assert rc.judging_paths(rc.study_schema("fusespeed"), marker="x-plan") == [("enabled",)]
    assert rc.judging_paths(rc.study_schema("fusespeed")) == []


def _run_cmd(snake, ws, over, name):
    p = ws / name
    p.write_text(yaml.safe_dump(over))
    out = snake("-n", "-p", "-F", "fusespeed", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                str(p), timeout=600).stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE))
    assert counts.get("fusespeed_run") == counts.get("fusespeed_report") == counts.get("fusespeed_claims") == "1"
    assert not [r for r in counts if r.startswith("mpifuse_")], counts  # mpifuse's runs are not its inputs
    cmds = [ln.strip() for ln in out.splitlines() if "studies.fusespeed.run " in ln]
    assert len(cmds) == 1, out[-3000:]
    return cmds[0]


def _json(cmd, opt):
    """The JSON of --config, or of --uses mpifuse= (opt "mpifuse": the used study's run section)."""
    flag = "--config " if opt == "config" else f"--uses {opt}="
    return json.loads(re.search(rf"{flag}'(\{{.*?\}})'", cmd).group(1))


def test_the_run_job_gets_both_sections_and_no_plan_or_judging_key(snake, workspace):
    a = _run_cmd(snake, workspace, {"fusespeed": {"enabled": True}, "mpifuse": {"figure4": {"nodes": 8}}}, "a.yaml")
    b = _run_cmd(snake, workspace, {"fusespeed": {"enabled": False},
                                    "mpifuse": {"enabled": False, "figure4": {"nodes": 4},
                                                "kick": {"source": "home", "nodes": [1, 4]}}}, "b.yaml")
    c = _run_cmd(snake, workspace, {"mpifuse": {"fs_options": {"max_read": "128KiB"}}}, "c.yaml")
    assert a == b  # fusespeed.enabled, mpifuse's enabled, figure4 (x-judging) and kick (x-plan): not in it
    assert a != c  # mpifuse's file-system options are (the benchmark mounts them)
    sp, mf = _json(a, "config"), _json(a, "mpifuse")
    assert "enabled" not in sp and sp["size"] == "1GB" and max(sp["nodes"]) == 4
    assert "figure4" not in mf and "kick" not in mf and "speed" not in mf and "fs_options" in mf
    assert _json(c, "mpifuse")["fs_options"]["max_read"] == "128KiB"
    assert "--nodes=5 --ntasks=5" in a  # max(nodes)+1 ranks


def _plan_diff():
    spec = importlib.util.spec_from_file_location("plan_diff", REPO / "workflow/scripts/plan_diff.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fusespeed_stand_ins(out):
    """The fusespeed entry's stand-ins in the report job's --studies (the registry as the report reads it)."""
    (cmd,) = [ln for ln in out.splitlines() if ln.startswith("Shell command: python3 -m repro.report ")]
    words = shlex.split(cmd.removeprefix("Shell command: "))
    return json.loads(words[words.index("--studies") + 1])["fusespeed"]["stand_ins"]


def test_the_include_order_does_not_matter(snake, workspace):
    """With fusespeed's rules.smk included before mpifuse's (whose file systems it runs) the cluster plan
    of fusespeed is the same, job for job (inputs, outputs, resources, commands), and the report's entry
    has the same stand-ins (mpifuse's, of fusespeed's source and the ranks on one host)."""
    pd = _plan_diff()
    cluster = ("-n", "-p", "-F", "fusespeed", "--profile", "profiles/slurm", "--configfile", "config/config.yaml")
    local = ("-n", "-p", "-F", "report_html", "--profile", "profiles/local")
    plans = []
    for swap in (False, True):
        if swap:
            sf = workspace / "Snakefile"
            text = sf.read_text()
            mf, fs = (f'include: "workflow/studies/{s}/rules.smk"\n' for s in ("mpifuse", "fusespeed"))
            assert text.index(mf) < text.index(fs)
            sf.write_text(text.replace(mf, "").replace(fs, fs + mf))
            assert sf.read_text().index(fs) < sf.read_text().index(mf)
        plan = pd.parse_plan(snake(*cluster, timeout=600).stdout)
        plans.append(({**plan, "rc": 0}, _fusespeed_stand_ins(snake(*local, timeout=600).stdout)))
    (normal, stand_ins), (swapped, stand_ins_swapped) = plans
    diffs, commands = pd.compare({"fusespeed": normal}, {"fusespeed": swapped})
    assert diffs == [] and commands == [], (diffs, commands)
    assert {j["rule"] for j in normal["jobs"].values()} >= {"fusespeed_run", "fusespeed_report", "fusespeed_claims"}
    assert stand_ins == stand_ins_swapped
    assert [s.split(":")[0] for s in stand_ins] == ["scratch", "nodes"], stand_ins  # config/local.yaml's


@pytest.mark.usefixtures("mpifuse_ready")
def test_snakemake_fusespeed_on_this_host(snake, workspace, tmp_path):
    overlay = workspace / "tiny.yaml"
    overlay.write_text(
        only_studies("fusespeed", "mpifuse")
        + "fusespeed:\n  size: 3MB\n  nodes: [1]\n  repeats: 1\n  idle_s: 0\n"
        "  variants: [native, passthrough, osr-refined-map]\n"
        f"mpifuse:\n  scratch: {{path: {tmp_path}/scratch}}\n  local_dir: {tmp_path}/local\n"
        f"  mount_dir: {tmp_path}/mnt\n")
    snake("fusespeed", "--profile", "profiles/local", "--configfile", "config/local.yaml", str(overlay),
          timeout=500)
    res = workspace / "results" / "fusespeed"
    rec = rawio.read(res / "raw" / "source~scratch" / "size~3MB" / "rep~0.json")
    assert rec["study"] == "fusespeed" and rec["extra"]["failures"] == [], rec["extra"]["failures"]
    ok = {(m["labels"]["variant"], m["labels"]["tool"]) for m in rec["metrics"]
          if m["metric"] == "hash_ok" and m["value"] == 1}
    assert ok == {("native", "sha256sum"), ("passthrough", "sha256sum"), ("osr-refined-map", "sha256sum")}
    assert rec["extra"]["study_fs_options"] == {"kernel_cache": False, "max_read": "1MiB", "threads": False}
    # where it ran (what a rehearsal matches to the Slurm job): every rank, on this host, no Slurm job
    assert [r["rank"] for r in rec["extra"]["ranks"]] == [0, 1] and rec["extra"]["slurm_job_id"] == ""
    assert {r["node"] for r in rec["extra"]["ranks"]} == {socket.gethostname()}
    assert "## Issue 22" in (res / "report.md").read_text()
    claims = (res / "claims.csv").read_text()
    assert "issue22_osr-refined-map_sha256sum" in claims
    assert len(list((res / "benchmarks" / "fusespeed_run").glob("source~*,size~*,rep~0.tsv"))) == 1
    assert str(tmp_path / "mnt") not in open("/proc/self/mounts").read()
