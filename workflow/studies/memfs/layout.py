"""The MemFS study's parameter space and raw-file paths (paper 004, Section 2.4.1): which
configurations the config asks for, where each run's raw file goes, and the system_kind of a
network. The rules (rules.smk), the analysis and the tests all use this one expansion.

Workflows (Section 2.4.2) have their own small expansion here too (``workflow_expected_raw``,
given the ``memfs.workflows`` section); workflows.smk's rules use it.

Every aggregate (analyze.py, wf_tidy.py) re-derives its expected raw files from the config
section it receives and checks the list file it is given against it (``check_expected``):
a stale list (``--rerun-triggers mtime`` does not re-write it when the config changes) or a raw
file the layout does not expect fails the aggregate, naming the files, instead of turning
configurations silently into ``not run``.
"""

from __future__ import annotations

import glob
import os

RAW_DIR = "results/memfs/raw"
PATTERNS = {
    "envelope": RAW_DIR + "/envelope/network~{network}/design~{design}/nodes~{n}/size~{size}/rep~{rep}.json",
    "metadata": RAW_DIR + "/metadata/network~{network}/design~{design}/nodes~{n}/rep~{rep}.json",
    "stripe": RAW_DIR + "/stripe/network~{network}/nodes~{n}/stripe~{stripe}/rep~{rep}.json",
    "threads": RAW_DIR + "/threads/network~{network}/nodes~{n}/threads~{threads}/rep~{rep}.json",
    "limit": RAW_DIR + "/limit/network~{network}/nodes~{n}/rep~{rep}.json",
}
# the config section each experiment's runs depend on
SECTION = {"envelope": "envelope", "metadata": "metadata", "stripe": "sweeps", "threads": "sweeps", "limit": "limit"}


def _uniq(items):
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def configs(cfg: dict) -> list[tuple[str, dict, int]]:
    """Every configuration of the study as (experiment, wildcards dict, repeats); cfg = memfs section."""
    env, tab, md, sw, lim = (cfg[k] for k in ("envelope", "table", "metadata", "sweeps", "limit"))
    out = []
    envs = [(net, d, n, s) for net in env["networks"] for d in env["designs"] for n in env["nodes"]
            for s in env["sizes"]]
    envs += [(net, d, n, tab["size"]) for net in tab["networks"] for d in env["designs"] for n in tab["nodes"]]
    for net, d, n, s in _uniq(envs):
        out.append(("envelope", {"network": net, "design": d, "n": n, "size": s}, env["repeats"]))
    mds = [(net, d, n) for net in md["networks"] for d in md["designs"] for n in md["nodes"]]
    mds += [(net, d, n) for net in tab["networks"] for d in md["designs"] for n in tab["nodes"]]
    for net, d, n in _uniq(mds):
        out.append(("metadata", {"network": net, "design": d, "n": n}, md["repeats"]))
    for n in sw["nodes"]:
        for s in sw["stripe_sizes"]:
            out.append(("stripe", {"network": sw["network"], "n": n, "stripe": s}, sw["repeats"]))
        for t in sw["threads"]:
            out.append(("threads", {"network": sw["network"], "n": n, "threads": t}, sw["repeats"]))
    for net in lim["networks"]:
        for n in lim["nodes"]:
            out.append(("limit", {"network": net, "n": n}, lim["repeats"]))
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
    return max(2, min([int(wc["n"]) for _, wc, _ in configs(cfg)] + [int(cfg["kick"]["nodes"][0])]) + 1)


def expected_raw(cfg: dict) -> list[str]:
    """Every raw file the config asks for (the tables show missing ones as not run)."""
    return [PATTERNS[exp].format(rep=r, **wc) for exp, wc, reps in configs(cfg) for r in range(reps)]


# Section 2.4.2: the Montage and BLAST workflows
WORKFLOW_PATTERN = RAW_DIR + "/workflow~{app}/design~{design}/nodes~{n}/tasks_per_node~{k}/rep~{rep}.json"
# the keys of memfs.workflows that decide which runs exist (the tidy step receives only these)
WORKFLOW_RUN_KEYS = ("applications", "designs", "sweeps", "repeats")


def workflow_configs(wf: dict) -> list[tuple[int, int]]:
    """(nodes, tasks_per_node) of every workflow sweep (vertical, horizontal), union, sorted."""
    return sorted({(int(n), int(k)) for sweep in wf["sweeps"].values() for n in sweep["nodes"]
                   for k in sweep["tasks_per_node"]})


def workflow_expected_raw(wf: dict) -> list[str]:
    """Every workflow raw file the ``memfs.workflows`` section asks for."""
    return [WORKFLOW_PATTERN.format(app=a, design=d, n=n, k=k, rep=r) for a in wf["applications"]
            for d in wf["designs"] for n, k in workflow_configs(wf) for r in range(wf["repeats"])]


# raw files an aggregate owns: any existing one must be expected by the layout
OWNED_GLOBS = {
    "envelope": [RAW_DIR + f"/{exp}/**/*.json" for exp in PATTERNS],
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


def run_benchmark_pattern(exp: str) -> str:
    """Snakemake benchmark file of one run, a pattern (the report sums them into the measured time)."""
    rel = PATTERNS[exp][len(RAW_DIR) + 1 : -len(".json")].replace("/", ",")
    return f"results/memfs/benchmarks/memfs_{exp}_run/{rel}.tsv"


def run_benchmark(exp: str, wc: dict, rep: int) -> str:
    """Snakemake benchmark file of one run."""
    return run_benchmark_pattern(exp).format(rep=rep, **wc)


def run_log_pattern(exp: str) -> str:
    """The log of one run, a pattern: the raw path under results/memfs/log/, .log for .json."""
    return "results/memfs/log" + PATTERNS[exp][len(RAW_DIR) : -len(".json")] + ".log"


def kick_paths(cfg: dict) -> list[str]:
    """One tiny configuration of every experiment (kick the tires)."""
    k = cfg["kick"]
    n, net = k["nodes"][0], k["network"]
    return (
        [PATTERNS["envelope"].format(network=net, design=d, n=n, size=k["size"], rep=0) for d in ("memfs", "locality")]
        + [PATTERNS["metadata"].format(network=net, design=d, n=n, rep=0) for d in ("memfs", "locality")]
        + [
            PATTERNS["stripe"].format(network=net, n=n, stripe="512KiB", rep=0),
            PATTERNS["threads"].format(network=net, n=n, threads=cfg["memfs"]["threads"], rep=0),
            PATTERNS["limit"].format(network=net, n=n, rep=0),
        ]
    )


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
