"""Issue 28 part 4: every study's site check, run on config/config.yaml as shipped and with the documented
example overlay config/site-example.yaml (a DAS-5-like site: 16-core nodes, InfiniBand, a Lustre
directory, a Kubernetes API behind a kubeconfig). With the overlay each passes; on the shipped file each
check that reads a config key refuses, naming every key it needs, and config.yaml marks each of those
site keys `# EDIT` on its line. memfs's check reads the nodes' interfaces, not a key: it passes on the
example site's nodes (ib0 + eth0 with IPv4) for both files and refuses, naming the key, a node without ib0.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from repro import config as rc
from repro import pythonpath
from repro.testing import REPO

from studies.memfs import layout as memfs_layout
from studies.memfs import site_check as memfs_check
from studies.serverless import layout as sl_layout
from studies.storage import site_check as st_check
from systems.minio.stack import LUSTRE_MAGIC

CONFIG = REPO / "config" / "config.yaml"
EXAMPLE = REPO / "config" / "site-example.yaml"
NODES_4X4 = REPO / "workflow/studies/serverless/tests/fixtures/kubectl-nodes-4x4.json"
# `ip -o addr show` of a DAS-5-like node: FDR InfiniBand (IPoIB) and 1 GbE, both with IPv4
DAS_NODE = """host=node301
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 10.141.0.31/16 brd 10.141.255.255 scope global eth0\\       valid_lft forever preferred_lft forever
3: ib0    inet 10.149.0.31/16 brd 10.149.255.255 scope global ib0\\       valid_lft forever preferred_lft forever
"""


def load(site: bool) -> dict:
    cfg = yaml.safe_load(CONFIG.read_text())
    if site:
        cfg = rc.deep_merge(cfg, yaml.safe_load(EXAMPLE.read_text()))
    return rc.validate(cfg)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """HOME with the example site's kubeconfig (${HOME}/.kube/site-config) and nothing at the shipped
    ${HOME}/.kube/config; a kubectl that reports the paper's 4 x 4 vCPU nodes."""
    kube = tmp_path / ".kube"
    kube.mkdir()
    (kube / "site-config").write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: site\n  cluster:\n"
                                      "    server: https://10.149.0.30:6443\n")
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(f'#!/bin/sh\n[ "$1" = --kubeconfig ] && [ -f "$2" ] || exit 9\ncat {NODES_4X4}\n')
    kubectl.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("REPRO_KUBECTL", str(kubectl))
    return tmp_path


# each study's site check on the whole validated config: its problems, one line each, starting with a key
def _serverless(cfg: dict) -> list[str]:
    return sl_layout.site_problems(cfg["serverless"], cfg["cluster"]["cores_per_node"])


def _storage(cfg: dict, lustre_magic: bool = False) -> list[str]:
    return st_check.problems(cfg["storage"], LUSTRE_MAGIC if lustre_magic else None)


def _memfs(cfg: dict, probe: str = DAS_NODE) -> list[str]:
    return memfs_check.problems(memfs_layout.site_interfaces(cfg["memfs"]),
                                {"node301": memfs_check.parse_probe(probe)})


CHECKS = {"serverless": _serverless, "storage": _storage, "memfs": _memfs}


def test_every_study_with_a_site_check_is_run_here():
    have = {p.parent.name for p in (REPO / "workflow" / "studies").glob("*/site_check.py")}
    assert have == set(CHECKS), f"a site check this test does not run: {sorted(have - set(CHECKS))}"


def test_with_the_example_site_every_check_passes(home):
    cfg = load(site=True)
    assert _serverless(cfg) == []
    assert _storage(cfg, lustre_magic=True) == []   # its directory on Lustre (no Lustre here: the magic is fed)
    assert _memfs(cfg) == []


def test_on_the_shipped_file_each_check_refuses_naming_each_key(home):
    cfg = load(site=False)
    sv = _serverless(cfg)
    assert [p.split(" = ")[0] for p in sv] == ["serverless.kubeconfig", "serverless.limit.iperf_host",
                                              "serverless.limit.echo_url", "serverless.director_cores"], sv
    assert "cluster.cores_per_node = 8" in sv[3] and "16" in sv[3]
    st = _storage(cfg, lustre_magic=True)
    assert len(st) == 1 and st[0].startswith("storage.paths.lustre_dir = null"), st
    # memfs reads the nodes: the shipped interfaces are the example site's; a node without ib0 is refused
    assert _memfs(cfg) == []
    bad = _memfs(cfg, DAS_NODE.replace("ib0", "ib1"))
    assert len(bad) == 1 and bad[0].startswith("memfs.networks[IPoIB].interface = 'ib0': node node301"), bad


def test_the_example_lustre_dir_is_judged_by_the_file_system_here(home):
    """Without the fed magic the example's directory is read: it is not on this machine (no Lustre
    here), so the check refuses it naming the key -- the same check every Lustre job runs at its start."""
    p = _storage(load(site=True))
    assert len(p) == 1 and p[0].startswith("storage.paths.lustre_dir = '/lustre/projects/repro/storage'")


def _line(text: str, key: str) -> str:
    """The config.yaml line that sets ``key`` (a dotted path; the leaf searched inside its top section)."""
    top, leaf = key.split(".")[0], key.split(".")[-1]
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"{top}:"))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^[A-Za-z_]", lines[i])), len(lines))
    hits = [ln for ln in lines[start:end] if re.search(rf"\b{leaf}:", ln.split("#")[0])]
    assert len(hits) == 1, (key, hits)
    return hits[0]


def test_every_site_key_the_checks_name_is_marked_edit(home):
    cfg = load(site=False)
    named = {p.split(" = ")[0] for p in _serverless(cfg) + _storage(cfg)}
    named |= set(re.findall(r"\bcluster\.[a-z_]+", " ".join(_serverless(cfg))))
    named.discard("serverless.director_cores")   # the paper's value (its 16-wide baseline), not the site's
    assert named == {"serverless.kubeconfig", "serverless.limit.iperf_host", "serverless.limit.echo_url",
                     "storage.paths.lustre_dir", "cluster.cores_per_node"}
    text = CONFIG.read_text()
    for key in sorted(named):
        assert "# EDIT" in _line(text, key), (key, _line(text, key))
    # and the overlay sets each of them
    site = yaml.safe_load(EXAMPLE.read_text())
    for key in named:
        node = site
        for part in key.split("."):
            node = node[part]
        assert node not in (None, ""), key


def _cli(module: str, section: dict, tmp, *extra) -> subprocess.CompletedProcess:
    (tmp / f"{module}.json").write_text(json.dumps(section))
    env = {**os.environ, "PYTHONPATH": pythonpath.value(REPO, "")}
    return subprocess.run([sys.executable, "-m", f"studies.{module}.site_check", "--config",
                           f"@{tmp / (module + '.json')}", *extra], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tmp)


def test_the_site_check_commands_exit_nonzero_on_the_shipped_file_and_pass_with_the_site(home):
    """The commands the plan runs (serverless_site_check; storage's), as the rules call them."""
    for site, rc_want in ((False, 1), (True, 0)):
        cfg = load(site)
        out = home / f"serverless-{site}.json"
        r = _cli("serverless", cfg["serverless"], home, "--out", str(out),
                 "--cores-per-node", str(cfg["cluster"]["cores_per_node"]))
        assert r.returncode == rc_want, r.stderr
        if site:
            shape = json.loads(out.read_text())["cluster_shape"]
            assert shape["mismatch"] == [] and shape["observed"]["count"] == 4   # the paper's 4 x 4 vCPUs
        else:
            for key in ("serverless.kubeconfig", "serverless.limit.iperf_host", "serverless.limit.echo_url",
                        "cluster.cores_per_node"):
                assert key in r.stderr, key
    r = _cli("storage", load(False)["storage"], home)
    assert r.returncode == 1 and "storage.paths.lustre_dir = null" in r.stderr
    r = _cli("storage", load(True)["storage"], home)
    assert r.returncode == 1 and "storage.paths.lustre_dir = '/lustre/projects/repro/storage': not a directory" \
        in r.stderr
