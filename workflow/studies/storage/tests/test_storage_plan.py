"""The storage study's parameter space and the dry-run plans: the paper's full matrix on Slurm and
the local overlay (the study switched on with an overlay; config.yaml keeps it off for now)."""

from __future__ import annotations

import re

import pytest
import yaml
from repro import paramspace

from studies.storage import layout

from .storage_testlib import job_argv, section


def test_full_matrix_is_the_papers_126_workloads():
    cfg = section(local=False)
    cos = [p for p in layout.expected_raw(cfg) if "benchmark~cosbench" in p and p.endswith("rep~0.json")]
    assert len(cos) == 3 * 6 * 7 == 126
    from tools.cosbench import gen

    assert gen.PAPER_MATRIX["sizes"] == cfg["cosbench"]["sizes"]
    assert gen.PAPER_MATRIX["workers"] == cfg["cosbench"]["workers"]
    md = [p for p in layout.expected_raw(cfg) if "benchmark~mdtest" in p]
    assert len(cfg["mdtest"]["tasks"]) > 1  # the task-count sweep (Section 6: "with higher workloads")
    assert len(md) == 3 * len(cfg["mdtest"]["tasks"]) * cfg["repeats"] and all("size~3901B" in p for p in md)
    assert cfg["mdtest"]["files"] == 1000000 and cfg["enabled"] is True


def test_raw_paths_are_stable_and_parse_back():
    p = layout.raw_path("ceph", "cosbench", "4KB", 8, 2)
    assert p == "results/storage/raw/stack~ceph/benchmark~cosbench/size~4KB/workers~8/rep~2.json"
    assert paramspace.parse_path(p) == {"stack": "ceph", "benchmark": "cosbench", "size": "4KB", "workers": "8",
                                        "rep": "2"}
    assert layout.limit_path("fio", 0) == "results/storage/raw/limit~fio/rep~0.json"
    cfg = section()
    kinds = layout.system_kind_of_path(cfg)
    assert kinds(layout.raw_path("lustre-minio", "cosbench", "4KB", 1, 0)).startswith("stand-in:minio-on-posix-dir")
    assert kinds(layout.raw_path("lustre-minio", "mdtest", "3901B", 2, 0)) == layout.STAND_IN_LUSTRE_DIR
    assert kinds(layout.raw_path("ceph", "mdtest", "3901B", 2, 0)) == "real"
    cfg["paths"]["lustre_dir"] = "/lustre/x"
    assert layout.system_kind(cfg, "lustre-minio", "cosbench") == "real"


def cfg_nodes(workspace) -> int:
    return yaml.safe_load((workspace / "config/config.yaml").read_text())["storage"]["nodes"][0]


def _counts(out: str) -> dict:
    return dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.MULTILINE))


def test_full_scale_plan(snake, workspace):
    (workspace / "on.yaml").write_text(yaml.safe_dump({"storage": {"enabled": True}}))
    out = snake("-n", "storage", "--profile", "profiles/slurm", "--configfile", "config/config.yaml", "on.yaml",
                timeout=300).stdout
    c = _counts(out)
    # one job per stack x repeat and benchmark (each job runs all of that stack's configurations);
    # config.yaml names no Lustre directory: Lustre+MinIO is not planned on the cluster (its rows
    # are not-run with the reason), never a node-local directory under Lustre's name
    assert c.get("storage_cosbench_run") == "6" and c.get("storage_mdtest_run") == "6", out[-3000:]
    assert "stack=lustre-minio" not in out and "stack~lustre-minio" not in out
    assert c.get("storage_limit_run") == "6" and c.get("storage_claims") == "1"
    # the driver's ceiling runs on the one node it asks for (cosbench-driver and its in-process server:
    # asking n+1 left n idle, the rehearsal's apart check); fio on 1+1: the driver and the one system
    # node whose disk it measures (issue 27: it asked n+1 and used 2)
    limits = [b for b in re.split(r"\n(?=(?:local)?rule )", out) if b.startswith("rule storage_limit_run:")]
    assert len(limits) == 6
    for b in limits:
        nodes, tasks = (int(re.search(rf"\b{k}=(\d+)", b).group(1)) for k in ("nodes", "tasks"))
        if "limit=ceiling" in b:
            assert (nodes, tasks) == (1, 1) and "mpi=srun" not in b and "--exclusive" in b, b
        else:
            assert nodes == tasks == 2 and "mpi=srun" in b and "--exclusive" in b, b
    # with a (shared) Lustre directory fio runs from the driver alone: one node, no MPI step
    (workspace / "lustre.yaml").write_text(yaml.safe_dump({"storage": {"enabled": True,
                                                                      "paths": {"lustre_dir": "/lustre/x"}}}))
    out = snake("-n", "storage", "--profile", "profiles/slurm", "--configfile", "config/config.yaml",
                "lustre.yaml", timeout=300).stdout
    fio = [b for b in re.split(r"\n(?=(?:local)?rule )", out) if b.startswith("rule storage_limit_run:")
           and "limit=fio" in b]
    assert fio and all(re.search(r"\bnodes=1\b", b) and "mpi=srun" not in b for b in fio), out[-3000:]
    for img in ("ceph", "juicefs"):
        assert f"containers/sif/{img}.sif" in out
        # the cluster's benchmark layers: real COSBench 0.4.2 and Open MPI + IOR/mdtest on each stack image
        for layer in ("cosbench", "mdtest"):
            assert f"input: containers/{layer}.def, containers/sif/{img}.sif" in out, (img, layer)
            assert re.search(rf"input: [^\n]*workflow/studies/storage/run.py[^\n]*containers/sif/{img}-{layer}\.sif",
                             out), (img, layer)
    assert c.get("storage_layer_image") == "4"


def test_real_cosbench_or_mdtest_missing_fails_before_the_stack_comes_up(tmp_path, monkeypatch):
    """tool: cosbench with no COSBench at home, or tool: mdtest with no mdtest on PATH: the job stops
    naming the key before any daemon starts (no state directory is made)."""
    from studies.storage import run

    monkeypatch.setenv("PATH", str(tmp_path))
    for over, key in (({"cosbench": {"tool": "cosbench", "home": str(tmp_path / "nope")}}, "storage.cosbench.home"),
                      ({"mdtest": {"tool": "mdtest"}}, "storage.mdtest.tool")):
        cfg = section(paths={"work_dir": str(tmp_path / "work")}, **over)
        bench = "cosbench" if "cosbench" in over else "mdtest"
        with pytest.raises(SystemExit, match=key.replace(".", r"\.")):
            run.RUN.main(job_argv(cfg, "stack", "juicefs", bench))
        assert not list((tmp_path / "work").glob("juicefs-*")) if (tmp_path / "work").exists() else True


def test_local_plan_and_on_by_default(snake, workspace):
    (workspace / "on.yaml").write_text(yaml.safe_dump({"storage": {"enabled": True}}))
    out = snake("-n", "storage", "--profile", "profiles/local", "--configfile", "config/config.yaml",
                "config/local.yaml", "on.yaml", timeout=300).stdout
    c = _counts(out)
    assert c.get("storage_cosbench_run") == "6" and c.get("storage_mdtest_run") == "6", out[-3000:]
    assert c.get("storage_limit_run") == "4"
    default = snake("-n", "--profile", "profiles/local", timeout=300).stdout
    c = _counts(default)  # ./repro run's local reproduction includes the study (enabled in config.yaml)
    assert c.get("storage_cosbench_run") == "6" and c.get("storage_claims") == "1", default[-2000:]


def test_a_job_asked_for_other_raw_files_or_stack_is_refused(tmp_path, monkeypatch, capsys):
    """The run contract's --out is exactly the job's raw files (every (size, workers) of the benchmark):
    one missing, or a stack run.py does not know, is refused (exit 2) before anything starts or is
    recorded."""
    from studies.storage import run

    monkeypatch.chdir(tmp_path)
    cfg = section(paths={"work_dir": str(tmp_path / "work")})
    argv = job_argv(cfg, "stack", "juicefs", "cosbench")
    assert len(layout.job_outputs(cfg, "juicefs", "cosbench", 0)) >= 2
    assert run.RUN.main(argv[:-1]) == 2  # the last raw file left out
    assert "are not the raw files of this job" in capsys.readouterr().err
    assert run.RUN.main(job_argv(cfg, "stack", "nfs", "cosbench")) == 2
    assert "--params stack: one of ceph, lustre-minio, juicefs, not 'nfs'" in capsys.readouterr().err
    assert run.RUN.main(job_argv(cfg, "limit", "fio", raw_dir="elsewhere")[:-1] + ["elsewhere/x.json"]) == 2
    assert not (tmp_path / "results").exists() and not (tmp_path / "elsewhere").exists()
