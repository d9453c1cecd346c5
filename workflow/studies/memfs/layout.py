"""What the configuration decides for the MemFS study (paper 004): each experiment's matrix (which
configurations the config asks for), its raw files (the declaration's paths: ``raw_path``), the part of
the run section an envelope job is given, the stand-ins, the kick paths, the site check's interfaces
and the system_kind of a network. The rules (rules.smk), the analysis and the tests all use this one
expansion; the workflows' (Section 2.4.2) is given the ``memfs.workflows`` section.

Every aggregate (analyze.py, wf_tidy.py) re-derives its expected raw files from the config
section it receives and checks the list file it is given against it (``check_expected``):
a stale list (``--rerun-triggers mtime`` does not re-write it when the config changes) or a raw
file the layout does not expect fails the aggregate, naming the files, instead of turning
configurations silently into ``not run``.
"""

from __future__ import annotations

import glob
import os

from studies.memfs.declaration import STUDY as DECLARATION

RAW_DIR = f"{DECLARATION.results}/raw"
# the envelope part's experiments (run.py), each of the config section its runs depend on
SECTION = {"envelope": "envelope", "metadata": "metadata", "stripe": "sweeps", "threads": "sweeps", "limit": "limit"}
SITE_CHECK = f"{DECLARATION.results}/site_check.json"  # the nodes have the used networks' interfaces
# a memory-limit run's exit status (its failure is a result: the rule's output is this, not the raw file)
MEMLIMIT_STATUS = f"{DECLARATION.results}/memlimit/design~{{design}}/memcached_mb~{{memcached_mb}}.rc"


def raw_path(experiment: str, **values) -> str:
    """One raw file of an experiment (the declaration spells the path; a field left out stays a wildcard)."""
    return DECLARATION.raw_path(experiment, **values)


def _uniq(items):
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def configs(cfg: dict) -> list[tuple[str, dict, int]]:
    """Every envelope-part configuration as (experiment, its fields but rep, repeats); cfg = memfs section."""
    env, tab, md, sw, lim = (cfg[k] for k in ("envelope", "table", "metadata", "sweeps", "limit"))
    out = []
    envs = [(net, d, n, s) for net in env["networks"] for d in env["designs"] for n in env["nodes"]
            for s in env["sizes"]]
    envs += [(net, d, n, tab["size"]) for net in tab["networks"] for d in env["designs"] for n in tab["nodes"]]
    for net, d, n, s in _uniq(envs):
        out.append(("envelope", {"network": net, "design": d, "nodes": n, "size": s}, env["repeats"]))
    mds = [(net, d, n) for net in md["networks"] for d in md["designs"] for n in md["nodes"]]
    mds += [(net, d, n) for net in tab["networks"] for d in md["designs"] for n in tab["nodes"]]
    for net, d, n in _uniq(mds):
        out.append(("metadata", {"network": net, "design": d, "nodes": n}, md["repeats"]))
    for n in sw["nodes"]:
        for s in sw["stripe_sizes"]:
            out.append(("stripe", {"network": sw["network"], "nodes": n, "stripe": s}, sw["repeats"]))
        for t in sw["threads"]:
            out.append(("threads", {"network": sw["network"], "nodes": n, "threads": t}, sw["repeats"]))
    for net in lim["networks"]:
        for n in lim["nodes"]:
            out.append(("limit", {"network": net, "nodes": n}, lim["repeats"]))
    return out


def used_networks(cfg: dict) -> list[str]:
    """The names under memfs.networks that the configured runs (and the kick) use, in order."""
    return _uniq([wc["network"] for _, wc, _ in configs(cfg)] + [cfg["kick"]["network"]])


class LayoutError(ValueError):
    """A configuration the plan can refuse before any job runs (names the key)."""


def check_networks(cfg: dict) -> None:
    """Plan-time: every network a run or the kick names is a key of memfs.networks (else LayoutError
    naming the key that names it)."""
    keys = [("envelope.networks", cfg["envelope"]["networks"]), ("table.networks", cfg["table"]["networks"]),
            ("metadata.networks", cfg["metadata"]["networks"]), ("sweeps.network", [cfg["sweeps"]["network"]]),
            ("limit.networks", cfg["limit"]["networks"]), ("kick.network", [cfg["kick"]["network"]])]
    bad = [f"memfs.{k} names {n!r}, which is not a key of memfs.networks ({', '.join(cfg['networks']) or 'none'})"
           for k, nets in keys for n in nets if n not in cfg["networks"]]
    if bad:
        raise LayoutError("invalid configuration:\n  " + "\n  ".join(bad))


def site_interfaces(cfg: dict) -> dict[str, str]:
    """{network: interface} of the used real (not emulated) networks that name an interface: the
    agents bind that interface's address on a cluster, so every node must have it (site_check.py)."""
    nets = cfg["networks"]
    return {n: nets[n]["interface"] for n in used_networks(cfg)
            if n in nets and not nets[n].get("emulate") and nets[n].get("interface")}


def site_check_nodes(cfg: dict) -> int:
    """Nodes of the site check job: the smallest run's n+1 (at least 2), so any allocation the study
    can get it can get; a missing interface is missing on a driver and a system node alike."""
    return max(2, min([int(wc["nodes"]) for _, wc, _ in configs(cfg)] + [int(cfg["kick"]["nodes"][0])]) + 1)


def expected_raw(cfg: dict) -> list[str]:
    """Every raw file the config asks for (the tables show missing ones as not run)."""
    return [raw_path(exp, rep=r, **wc) for exp, wc, reps in configs(cfg) for r in range(reps)]


def matrix(cfg: dict, experiment: str) -> list[dict]:
    """The jobs of one envelope-part experiment (its fields, rep included): experiment_rule's matrix."""
    return [{**wc, "rep": r} for exp, wc, reps in configs(cfg) if exp == experiment for r in range(reps)]


def run_config(run: dict, experiment: str, network: str) -> dict:
    """What an envelope-part run is given of the section's run part: its network, the systems' settings
    and its experiment's section (a change elsewhere, memfs.workflows, does not re-run it)."""
    sub = {k: run[k] for k in ("memcached", "memfs", "iozone")}
    return {**sub, "networks": {network: run["networks"][network]}, SECTION[experiment]: run[SECTION[experiment]]}


def fusegap_matrix(cfg: dict) -> list[dict]:
    """The FUSE gap's repeats (issue 22), none where memfs.fuse_gap is off."""
    gap = cfg.get("fuse_gap", {})
    return [{"rep": r} for r in range(int(gap.get("reps", 5)))] if gap.get("enabled") else []


# Section 2.4.2: the Montage and BLAST workflows
# the keys of memfs.workflows that decide which runs exist (the tidy step receives only these)
WORKFLOW_RUN_KEYS = ("applications", "designs", "sweeps", "repeats")


def workflow_configs(wf: dict) -> list[tuple[int, int]]:
    """(nodes, tasks_per_node) of every workflow sweep (vertical, horizontal), union, sorted."""
    return sorted({(int(n), int(k)) for sweep in wf["sweeps"].values() for n in sweep["nodes"]
                   for k in sweep["tasks_per_node"]})


def workflow_matrix(wf: dict) -> list[dict]:
    """Every workflow run the ``memfs.workflows`` section asks for (none where it is off)."""
    if not wf.get("enabled", True):
        return []
    return [{"workflow": a, "design": d, "nodes": n, "tasks_per_node": k, "rep": r} for a in wf["applications"]
            for d in wf["designs"] for n, k in workflow_configs(wf) for r in range(wf["repeats"])]


def workflow_expected_raw(wf: dict) -> list[str]:
    """Every workflow raw file the ``memfs.workflows`` section asks for."""
    return [raw_path("workflow", **row) for row in workflow_matrix({**wf, "enabled": True})]


def memlimit_matrix(wf: dict) -> list[dict]:
    """The memory-limit runs: both designs at each limit and at memcached_mb (the unlimited reference);
    none unless memfs.workflows and its memlimit are on. A claim limit that is not a limit is refused."""
    ml = wf.get("memlimit") or {}
    if not (wf.get("enabled") and ml.get("enabled")):
        return []
    if int(ml["claim_limit_mb"]) not in [int(x) for x in ml["limits_mb"]]:
        raise LayoutError("config memfs.workflows.memlimit.claim_limit_mb must be one of memfs.workflows.memlimit"
                          f".limits_mb (got {ml['claim_limit_mb']} not in {ml['limits_mb']})")
    mbs = sorted({int(x) for x in ml.get("limits_mb", [])} | {int(wf["memcached_mb"])})
    return [{"design": d, "memcached_mb": mb} for d in ("memfs", "locality") for mb in mbs]


# raw files an aggregate owns: any existing one must be expected by the layout
OWNED_GLOBS = {
    "envelope": [RAW_DIR + f"/{exp}/**/*.json" for exp in SECTION],
    "workflows": [RAW_DIR + "/workflow~*/**/*.json"],
}


class ExpectedMismatch(SystemExit):
    """The expected-run list, the layout and the raw files on disk disagree."""


def _named(title: str, paths: list[str], limit: int = 40) -> str:
    more = f"\n    ... and {len(paths) - limit} more" if len(paths) > limit else ""
    return f"  {title} ({len(paths)}):\n" + "".join(f"    {p}\n" for p in paths[:limit]) + more


def check_expected(listed: list[str], expected: list[str], part: str, root: str = ".") -> None:
    """Fail (``ExpectedMismatch``: the message on stderr, exit status 1) unless the list file equals
    the layout's expansion and no raw file of ``part`` ("envelope" or "workflows") exists that the
    layout does not expect.

    Missing raw files of expected runs are fine (not-run rows; ``allow_incomplete``).
    """
    want, got = set(expected), set(listed)
    on_disk = {os.path.relpath(p, root) for g in OWNED_GLOBS[part]
               for p in glob.glob(os.path.join(root, g), recursive=True)}
    missing = [p for p in expected if p not in got]
    unexpected = [p for p in listed if p not in want]
    stray = sorted(on_disk - want)
    dup = len(listed) != len(got)
    if not (missing or unexpected or stray or dup):
        return
    msg = (f"memfs {part}: the expected-run list ({len(listed)} paths) disagrees with the layout of the "
           f"config ({len(expected)} runs); a stale list (e.g. --rerun-triggers mtime) or raw files of "
           "another config -- refusing to turn runs into 'not run' silently.\n")
    if missing:
        msg += _named("expected by the config, missing from the list", missing)
    if unexpected:
        msg += _named("in the list, not expected by the config", unexpected)
    if stray:
        msg += _named("raw files on disk the config does not expect (move them away or delete them)", stray)
    if dup:
        msg += "  the list repeats paths\n"
    raise ExpectedMismatch(msg.rstrip("\n"))


def read_list(path: str) -> list[str]:
    """The paths of an expected-run list file (one per line)."""
    with open(path) as fh:
        return [ln.strip() for ln in fh if ln.strip()]


def kick_paths(cfg: dict) -> list[str]:
    """One tiny configuration of every envelope-part experiment (kick the tires)."""
    k = cfg["kick"]
    at = {"network": k["network"], "nodes": k["nodes"][0], "rep": 0}
    return ([raw_path("envelope", design=d, size=k["size"], **at) for d in ("memfs", "locality")]
            + [raw_path("metadata", design=d, **at) for d in ("memfs", "locality")]
            + [raw_path("stripe", stripe="512KiB", **at), raw_path("threads", threads=cfg["memfs"]["threads"], **at),
               raw_path("limit", **at)])


STAND_INS_ENVELOPE = [
    "MTC Envelope (2.4.1): the locality-based design is our re-implementation of AMFS's policy inside MemFS "
    "(--policy locality: writes only to the node's own memcached, replicate-on-read, owners via "
    "user.memfs.owners) - AMFS's code is not public; its locality-aware placement is the benchmark placing "
    "each 1-1 reader on the file's node, its multicast is every node replicating the file: N-1 independent "
    "unicast pulls from the writer (a star), not AMFS Shell's multicast; the locality N-1 read rows and "
    "claims carry this unicast stand-in in system_kind.",
    "MTC Envelope (2.4.1): where a network is marked emulated (locally: both), each system node is a network "
    "namespace on one host with its veth link shaped by tc HTB (IPoIB stand-in 8 Gbit/s, 1GbE 1 Gbit/s, no "
    "added latency); memcached, MemFS (FUSE), iozone and the metadata benchmark are real. All nodes share "
    "this host's cores, so aggregate rates cannot grow with nodes where the CPU (or, for metadata, the "
    "scheduling delay of every cross-node round trip), not the link, is the bottleneck.",
    "MTC Envelope (2.4.1): iozone's throughput mode is used (one process per file of a batch; single-file "
    "mode re-opens the file it just created, which a write-once file system refuses), with its 2 s untimed "
    "sleeps skipped by an LD_PRELOAD shim (tools/iozone/build/libnosleep.so); bandwidth and throughput come "
    "from iozone's own per-child timings.",
    "MTC Envelope (2.4.1): mdtest (IOR project) is in no reachable registry; tools/mdtest/mdbench (C, MPI) "
    "follows mdtest's phases, flags and summary format and is used where mdtest is not on PATH (the memfs "
    "image builds the real mdtest).",
]
STAND_INS_WORKFLOWS = [
    "Workflows (2.4.2): the cluster is emulated by systems/mtc: n+1 'nodes' on one host, each system node a "
    "network namespace with its own memcached and MemFS mounts, links shaped with tc HTB; on Slurm the same "
    "code runs on real nodes.",
    "Workflows (2.4.2): synthetic inputs instead of the M17 mosaic (an N x N grid of TAN tiles with a shared "
    "star field, per-tile background planes, 30 % overlap) and instead of the NCBI nt database (random ACGT "
    "split with fastasplit; mutated queries with known origins).",
    "Workflows (2.4.2): the locality design is our re-implementation of AMFS's policy inside MemFS (writes to"
    " the local memcached only, replicate-on-read, placement by the first input's owner via memfs-locate / "
    "user.memfs.owners), not AMFS itself; AMFS Shell is our MTC scheduler (systems/mtc-workflows).",
]


def stand_ins(cfg: dict) -> list[str]:
    """The report's stand-ins of the parts the config turns on (cfg: the memfs section)."""
    out = list(STAND_INS_ENVELOPE)
    wf = cfg["workflows"]
    if wf["enabled"]:
        m, b = wf["montage"], wf["blast"]
        out += STAND_INS_WORKFLOWS + [
            f"Workflows (2.4.2): this run's scale: a {m['grid']} x {m['grid']} mosaic of {m['npix']}^2 tiles, a "
            f"{b['db_bp'] / 1e6:g} Mbp database in {b['fragments']} fragments x {b['queries']} query files, "
            f"(nodes, tasks per node) in {workflow_configs(wf)}, {wf['repeats']} repeats; on one 2-core host the "
            "emulated nodes share the cores, so times are dominated by process start-up and CPU sharing, not by "
            "the network (config/config.yaml has the paper's scale)."]
    return out


def workflow_input_args(wf: dict, app: str) -> str:
    """The synthetic input generator's options (mtcwf.gen_montage, mtcwf.gen_blast)."""
    if app == "montage":
        m = wf["montage"]
        return f"--grid {m['grid']} --npix {m['npix']} --overlap {m['overlap']} --seed {m['seed']}"
    b = wf["blast"]
    return (f"--db-bp {b['db_bp']} --contig-bp {b['contig_bp']} --fragments {b['fragments']} --queries {b['queries']}"
            f" --seqs-per-query {b['seqs_per_query']} --query-bp {b['query_bp']}"
            f" --mutation-rate {b['mutation_rate']} --seed {b['seed']}")


def system_kind(net: dict) -> str:
    """system_kind of a run on network ``net`` (a memfs.networks entry plus its name).

    Emulated links are a stand-in (memcached, MemFS and the benchmarks are real);
    a real network is ``real``.
    """
    if net.get("emulate"):
        rate = net.get("rate_mbit")
        what = f"{rate:g} Mbit/s" if rate else "unshaped"
        return f"stand-in:{net.get('name', '?')} link emulated by netns+tc HTB ({what})"
    return "real"
