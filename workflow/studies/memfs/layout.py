"""The MemFS study's parameter space and raw-file paths (paper 004, Section 2.4.1): which
configurations the config asks for, where each run's raw file goes, and the system_kind of a
network. The rules (rules.smk), the analysis and the tests all use this one expansion.

Workflows (Section 2.4.2) have their own small expansion in workflows.smk's helpers below.
"""

from __future__ import annotations

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


def expected_raw(cfg: dict) -> list[str]:
    """Every raw file the config asks for (the tables show missing ones as not run)."""
    return [PATTERNS[exp].format(rep=r, **wc) for exp, wc, reps in configs(cfg) for r in range(reps)]


def run_benchmark(exp: str, wc: dict, rep: int) -> str:
    """Snakemake benchmark file of one run (the report sums them into the measured time)."""
    rel = PATTERNS[exp][len(RAW_DIR) + 1 : -len(".json")].replace("/", ",").format(rep=rep, **wc)
    return f"results/memfs/benchmarks/memfs_{exp}_run/{rel}.tsv"


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
