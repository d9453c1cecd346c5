"""Issue 19 defect 8: a memfs.networks interface the nodes lack stops the run once, early, naming the
key, the interface and the node (site_check.py, layout.site_interfaces, the rule memfs_site_check),
and what can be checked at plan time is refused at start-up (layout.check_networks, the schema)."""

import copy
import json
import os
import socket
import subprocess
import sys

import pytest
import yaml

from repro import config as rconfig
from repro.testing import REPO

from studies.memfs import layout, site_check

IP_ADDR = """\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \\       valid_lft forever preferred_lft forever
4: eth0    inet 10.79.0.11/24 brd 10.79.0.255 scope global eth0\\       valid_lft forever preferred_lft forever
4: eth0    inet6 fe80::1/64 scope link \\       valid_lft forever preferred_lft forever
5: ib0    inet6 fe80::2/64 scope link \\       valid_lft forever preferred_lft forever
"""


def _memfs(overrides: dict | None = None) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg = rconfig.deep_merge(cfg, {"memfs": overrides or {}})
    return rconfig.validate(cfg)["memfs"]


def test_parse_probe_reads_hostname_and_ipv4_per_interface():
    p = site_check.parse_probe("host=node1\n" + IP_ADDR)
    assert p == {"hostname": "node1", "interfaces": {"lo": ["127.0.0.1"], "eth0": ["10.79.0.11"], "ib0": []}}


def test_a_missing_interface_is_named_with_key_and_node():
    probes = {"node0": site_check.parse_probe("host=node0\n" + IP_ADDR.replace("ib0", "ib1")),
              "node1": site_check.parse_probe("host=node1\n" + IP_ADDR)}
    bad = site_check.problems({"IPoIB": "ib0", "1GbE": "eth0"}, probes)
    assert len(bad) == 2, bad
    assert bad[0].startswith("memfs.networks[IPoIB].interface = 'ib0': node node0 (host node0) has no such interface")
    assert "node node1 (host node1) has no IPv4 address on it" in bad[1]
    assert "eth0 10.79.0.11" in bad[0]
    # the contradicting data: every node has both interfaces with an address -> nothing to report
    ok = {"node0": site_check.parse_probe("host=node0\n" + IP_ADDR.replace("5: ib0    inet6 fe80::2/64",
                                                                           "5: ib0    inet 10.80.0.1/24"))}
    assert site_check.problems({"IPoIB": "ib0", "1GbE": "eth0"}, ok) == []
    assert site_check.problems({"x": "eth0"}, {"node2": {"error": "srun: error"}}) == [
        "node node2: its interfaces could not be listed (srun: error)"]


def test_site_interfaces_are_the_used_real_networks_naming_one():
    cfg = _memfs()  # config.yaml: IPoIB (ib0) and 1GbE (eth0), both real and used
    assert layout.site_interfaces(cfg) == {"IPoIB": "ib0", "1GbE": "eth0"}
    assert layout.site_check_nodes(cfg) == 2
    emulated = _memfs({"networks": {"IPoIB": {"emulate": True}, "1GbE": {"interface": ""}}})
    assert layout.site_interfaces(emulated) == {}
    unused = _memfs({"table": {"networks": ["IPoIB"]}, "limit": {"networks": ["IPoIB"]}})
    assert layout.site_interfaces(unused) == {"IPoIB": "ib0"}


def test_plan_time_refuses_a_network_name_memfs_networks_lacks():
    cfg = _memfs()
    layout.check_networks(cfg)  # the shipped config is consistent
    bad = copy.deepcopy(cfg)
    bad["limit"]["networks"] = ["IPoIB", "10GbE"]
    with pytest.raises(layout.LayoutError, match=r"memfs\.limit\.networks names '10GbE'"):
        layout.check_networks(bad)


def test_schema_refuses_an_interface_name_no_kernel_accepts():
    with pytest.raises(rconfig.ConfigError, match=r"memfs\.networks\.IPoIB\.interface"):
        _memfs({"networks": {"IPoIB": {"interface": "ib0 --evil"}}})


def _cli(ifaces: dict, out) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}  # this host, not an allocation
    return subprocess.run([sys.executable, "-m", "studies.memfs.site_check", "--config",
                           json.dumps({"interfaces": ifaces}), "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def test_cli_fails_once_naming_key_interface_and_node(tmp_path):
    out = tmp_path / "site_check.json"
    r = _cli({"IPoIB": "ib9x", "1GbE": "lo"}, out)
    assert r.returncode == 1, r.stderr
    host = socket.gethostname()
    assert f"memfs.networks[IPoIB].interface = 'ib9x': node {host} (host {host}) has no such interface" in r.stderr
    assert "1GbE" not in r.stderr  # lo has 127.0.0.1 here: only the missing one is named
    assert not out.exists()
    # the contradicting case: an interface this host has passes and writes what it saw
    r = _cli({"1GbE": "lo"}, out)
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())
    assert rec["networks"] == {"1GbE": "lo"} and "127.0.0.1" in rec["nodes"][host]["interfaces"]["lo"]


def test_cluster_plan_runs_the_site_check_first_and_local_plan_has_none(tmp_path):
    """The dry run of the cluster path (config.yaml: ib0) has one memfs_site_check job that every
    MemFS run job waits for; the local plan (launcher local: the interface is not used) has none."""
    base = ["./repro", "snakemake", "memfs_kick", "-n", "-F"]
    r = subprocess.run(base + ["--profile", "profiles/slurm", "--configfile", "config/config.yaml"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    text = r.stdout + r.stderr
    assert text.count("rule memfs_site_check:") == 1
    blocks = text.split("\nrule ")
    runs = [b for b in blocks if b.startswith("memfs_") and "_run:" in b.split("\n", 1)[0]]
    assert runs and all("results/memfs/site_check.json" in b for b in runs)
    r = subprocess.run(base + ["--profile", "profiles/local"], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "memfs_site_check" not in r.stdout + r.stderr
