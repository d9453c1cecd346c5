# Paper 004 (MemFS), Section 2.4.1: the MTC Envelope of MemFS and of the
# locality-based design (our re-implementation of AMFS's policy), the design
# sweeps of Figure 2.3 and the raw-memcached limit.
#
# n+1 layout: the driver (run.py: python3 -m studies.memfs.run) is the job's first
# node; systems/mtc starts one agent per system node (memcached + FUSE clients)
# -- locally in network namespaces with tc-shaped links, on Slurm with srun on
# the allocation's other nodes.
#
#   ./repro snakemake memfs_envelope --profile profiles/local   # envelope, metadata, sweeps, limit + analysis
#   ./repro snakemake memfs_kick --profile profiles/local        # one tiny configuration of each experiment
#   ./repro snakemake memfs_envelope_runs ...                   # only the runs
#
# workflows.smk (Montage/BLAST, 2.4.2) is included after this file. The study is declared once in
# declaration.py (title, paper, captions, every declared results/memfs/ path, expected times); the
# end of this file registers the report entry of the parts the configuration turns on.

from studies.memfs import declaration as memfs_declaration
from studies.memfs import layout as memfs_layout

MEMFS = config["memfs"]
# What run jobs are given (engine: run_section): the section without the keys the schemas mark
# x-judging (read by the analysis only), so changing one never re-runs a benchmark. Each run rule
# takes only its own parts of it (memfs_run_cfg, mwf_run_params).
MEMFS_RUN = repro_config.run_section(MEMFS, repro_config.study_schema("memfs"))
MEMFS_ON = enabled("memfs")
if MEMFS_ON:
    try:
        memfs_layout.check_networks(MEMFS)
    except memfs_layout.LayoutError as _exc:
        raise WorkflowError(str(_exc)) from None
# Issue 19 defect 8: on a cluster the agents bind each real network's interface; one job
# (memfs_site_check, rules.smk) checks the nodes have it before any run job is submitted.
MEMFS_SITE_IFACES = memfs_layout.site_interfaces(MEMFS) if LAUNCHER == "slurm" else {}
MEMFS_SITE = "results/memfs/site_check.json"
# ancient: the check gates the runs, it never makes finished runs stale
MEMFS_SITE_INPUT = ancient(MEMFS_SITE) if MEMFS_SITE_IFACES else []
MEMFS_DIR = f"{STUDIES}/memfs"
MEMFS_RAW = memfs_layout.RAW_DIR
MEMFS_PUBLISHED = f"{MEMFS_DIR}/published.csv"
MEMFS_STUDY = memfs_declaration.STUDY  # title, paper, captions, every declared results/memfs/ path
MEMFS_OUT = {k: MEMFS_STUDY.out(k) for k in MEMFS_STUDY.outputs}


def memfs_outputs(**keys):
    """A rule's named outputs: {name: the declared output of key} for each name=key."""
    return {name: MEMFS_OUT[key] for name, key in keys.items()}


MEMFS_GAP = MEMFS.get("fuse_gap", {})
MEMFS_GAP_ON = MEMFS_ON and bool(MEMFS_GAP.get("enabled", False))
MEMFS_GAP_RAW = "results/memfs/raw/fusegap/rep~{rep}.json"
MEMFS_BENCH_CODE = study_code("memfs", "run", "layout") + [
    "tools/common.py",
    "tools/iozone/parser.py",
    "tools/mdtest/parser.py",
    "tools/mcbench/parser.py",
    "tools/iperf3/parser.py",
    "systems/mtc/launch.py",
    "systems/mtc/agent.py",
    "systems/mtc/netns.py",
]
MEMFS_PATTERNS = memfs_layout.PATTERNS


def memfs_raw_inputs(wildcards):
    """All expected raw files; with allow_incomplete only those that exist."""
    paths = memfs_layout.expected_raw(MEMFS)
    return [p for p in paths if os.path.exists(p)] if ALLOW_INCOMPLETE else paths


def memfs_bench_cmd(exp):
    """Shell command of one benchmark job (the driver; agents are started by systems/mtc): the run
    contract (repro.runner), --params from memfs_run_params."""
    return (
        "("
        + MPI_ENV
        + "; "
        + study_module("memfs", "run")
        + " "
        + exp
        + " --config {params.cfg} --params {params.run} --rep {wildcards.rep} --out {output}) > {log} 2>&1"
    )


def memfs_run_params(dims):
    """--params of a run job: network, nodes and the experiment's other wildcards (the record's params),
    and how it runs: the launcher, single_host, the memfs image where its tools run in one."""

    def run(wc):
        p = {"network": wc.network, "nodes": int(wc.n)}
        p.update({d: int(getattr(wc, d)) if d == "threads" else getattr(wc, d) for d in dims})
        p.update(launcher=LAUNCHER, single_host=int(config["cluster"]["single_host"]))
        if in_image("memfs"):
            p["image"] = sif("memfs")
        return shlex.quote(json.dumps(p))

    return run


_MEMFS_WC = dict(
    network=r"[A-Za-z0-9_.+-]+",
    design="memfs|locality",
    n=r"\d+",
    rep=r"\d+",
    size=r"\d+[KMG]i?B",
    stripe=r"\d+[KMG]i?B",
    threads=r"\d+",
)


def memfs_run_cfg(exp):
    """The config a run depends on (its network, the system settings, its experiment's
    section): a change elsewhere (another experiment, memfs.workflows) does not re-run it.
    """

    def cfg(wc):
        sub = {k: MEMFS_RUN[k] for k in ("memcached", "memfs", "iozone")}
        sub["networks"] = {wc.network: MEMFS_RUN["networks"][wc.network]}
        sub[memfs_layout.SECTION[exp]] = MEMFS_RUN[memfs_layout.SECTION[exp]]
        return shlex.quote(json.dumps(sub, sort_keys=True))

    return cfg


def memfs_analysis_cfg(wc):
    """The memfs section without memfs.workflows, with the judging scale (repro.claims.tol)."""
    sub = {k: v for k, v in MEMFS.items() if k != "workflows"}
    return shlex.quote(json.dumps({**sub, "judging_scale": JUDGING_SCALE}, sort_keys=True))


def memfs_figure_rule(name, module, figs, *, lib, cfg, measurements, log_prefix=""):
    """The figure rule of one part (memfs_figure: figure2_<fig>.py, memfs_wf_figure: wf_figure2_<fig>.py):
    results/memfs/figures/figure2_<fig>_<name>.png from the part's tidy table. Not analysis_rule: one
    module draws one figure whose file name adds a word (figure2_3 -> figure2_3_design), and the log
    and benchmark carry that word, which the engine's {name} (the module) cannot."""

    rule:
        name:
            name
        input:
            analysis_image_input(),
            code=f"{MEMFS_DIR}/{module}{{fig}}.py",
            lib=study_code("memfs", *lib),
            measurements=measurements,
        output:
            MEMFS_STUDY.figure("figure2_{fig}_{name}"),
        log:
            f"results/memfs/log/{log_prefix}figure2_{{fig}}_{{name}}.log",
        benchmark:
            bench_log("memfs", f"memfs_{module}{{fig}}_{{name}}")
        wildcard_constraints:
            fig=figs,
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            cfg=cfg,
        shell:
            f"python3 -m studies.memfs.{module}{{wildcards.fig}} --measurements {{input.measurements}}"
            " --config {params.cfg} --out {output} > {log} 2>&1"


# ---------------------------------------------------------------------------
# Section 2.4.2: the Montage and BLAST workflows (rules in workflows.smk)
# ---------------------------------------------------------------------------
import glob as _glob
from pathlib import Path

MWF = config["memfs"]["workflows"]
MWF_ON = bool(MWF["enabled"])
MWF_ML = MWF.get("memlimit") or {}  # montage-memlimit (its rules: the end of workflows.smk)
MWF_ML_ON = MWF_ON and bool(MWF_ML.get("enabled"))
MWF_RUN = MEMFS_RUN["workflows"]  # what the workflow run jobs are given
MWF_CODE = sorted(_glob.glob("systems/mtc-workflows/mtcwf/*.py"))
MWF_RUN_CODE = MWF_CODE + study_code("memfs", "wf_run")  # a run: mtcwf measures, wf_run records
MWF_RAW = memfs_layout.WORKFLOW_PATTERN
MWF_PUBLISHED = [f"{MEMFS_DIR}/published.csv", f"{MEMFS_DIR}/published_workflows.csv"]


def mwf_configs():
    """(nodes, tasks_per_node) of every sweep (vertical, horizontal), union, sorted."""
    return memfs_layout.workflow_configs(MWF)


def mwf_expected():
    return memfs_layout.workflow_expected_raw(MWF)


def mwf_run_cfg(wc):
    """The keys of memfs.workflows that decide which runs exist (wf_tidy re-derives them)."""
    return shlex.quote(
        json.dumps({k: MWF[k] for k in memfs_layout.WORKFLOW_RUN_KEYS}, sort_keys=True)
    )


def mwf_cfg(wc):
    """The whole memfs.workflows section (Table 2.3, the figures and the claims read it), with the
    judging scale (repro.claims.tol)."""
    return shlex.quote(json.dumps({**MWF, "judging_scale": JUDGING_SCALE}, sort_keys=True))


def mwf_raw_inputs(wildcards):
    """All expected raw files; with allow_incomplete only those that exist."""
    paths = mwf_expected()
    return [p for p in paths if os.path.exists(p)] if ALLOW_INCOMPLETE else paths


def mwf_input_args(app):
    if app == "montage":
        m = MWF["montage"]
        return f"--grid {m['grid']} --npix {m['npix']} --overlap {m['overlap']} --seed {m['seed']}"
    b = MWF["blast"]
    return (
        f"--db-bp {b['db_bp']} --contig-bp {b['contig_bp']} --fragments {b['fragments']}"
        f" --queries {b['queries']} --seqs-per-query {b['seqs_per_query']} --query-bp {b['query_bp']}"
        f" --mutation-rate {b['mutation_rate']} --seed {b['seed']}"
    )


def mwf_bench(raw):
    """Per-run Snakemake benchmark file of a raw file."""
    rel = ",".join(Path(raw).with_suffix("").parts[3:])
    return f"results/memfs/benchmarks/memfs_wf_run/{rel}.tsv"


# ---------------------------------------------------------------------------
# The report's entry: the declaration's outputs of the parts the configuration turns on
# ---------------------------------------------------------------------------
MEMFS_PARTS = ["envelope"] + [
    p for p, on in (("fuse_gap", MEMFS_GAP_ON), ("workflows", MWF_ON), ("memlimit", MWF_ML_ON)) if on
]
MEMFS_STAND_INS = [
    "MTC Envelope (2.4.1): the locality-based design is our re-implementation of AMFS's policy inside MemFS (--policy locality: writes only to the node's own memcached, replicate-on-read, owners via user.memfs.owners) - AMFS's code is not public; its locality-aware placement is the benchmark placing each 1-1 reader on the file's node, its multicast is every node replicating the file: N-1 independent unicast pulls from the writer (a star), not AMFS Shell's multicast; the locality N-1 read rows and claims carry this unicast stand-in in system_kind.",
    "MTC Envelope (2.4.1): where a network is marked emulated (locally: both), each system node is a network namespace on one host with its veth link shaped by tc HTB (IPoIB stand-in 8 Gbit/s, 1GbE 1 Gbit/s, no added latency); memcached, MemFS (FUSE), iozone and the metadata benchmark are real. All nodes share this host's cores, so aggregate rates cannot grow with nodes where the CPU (or, for metadata, the scheduling delay of every cross-node round trip), not the link, is the bottleneck.",
    "MTC Envelope (2.4.1): iozone's throughput mode is used (one process per file of a batch; single-file mode re-opens the file it just created, which a write-once file system refuses), with its 2 s untimed sleeps skipped by an LD_PRELOAD shim (tools/iozone/build/libnosleep.so); bandwidth and throughput come from iozone's own per-child timings.",
    "MTC Envelope (2.4.1): mdtest (IOR project) is in no reachable registry; tools/mdtest/mdbench (C, MPI) follows mdtest's phases, flags and summary format and is used where mdtest is not on PATH (the memfs image builds the real mdtest).",
]
# per-run benchmark files: the report sums the ones that exist
MEMFS_BENCHMARKS = [
    bench_log("memfs", f"memfs_{x}")
    for x in (
        "aggregate",
        "figure2_3_design",
        "figure2_4_bandwidth",
        "figure2_5_throughput",
        "figure2_6_metadata",
    )
] + [
    memfs_layout.run_benchmark(exp, wc, r)
    for exp, wc, reps in memfs_layout.configs(MEMFS)
    for r in range(reps)
]
if MWF_ON:
    MEMFS_STAND_INS += [
        "Workflows (2.4.2): the cluster is emulated by systems/mtc: n+1 'nodes' on one host, each system node a network namespace with its own memcached and MemFS mounts, links shaped with tc HTB; on Slurm the same code runs on real nodes.",
        "Workflows (2.4.2): synthetic inputs instead of the M17 mosaic (an N x N grid of TAN tiles with a shared star field, per-tile background planes, 30 % overlap) and instead of the NCBI nt database (random ACGT split with fastasplit; mutated queries with known origins).",
        "Workflows (2.4.2): the locality design is our re-implementation of AMFS's policy inside MemFS (writes to the local memcached only, replicate-on-read, placement by the first input's owner via memfs-locate / user.memfs.owners), not AMFS itself; AMFS Shell is our MTC scheduler (systems/mtc-workflows).",
        f"Workflows (2.4.2): this run's scale: a {MWF['montage']['grid']} x {MWF['montage']['grid']} mosaic of "
        f"{MWF['montage']['npix']}^2 tiles, a {MWF['blast']['db_bp'] / 1e6:g} Mbp database in "
        f"{MWF['blast']['fragments']} fragments x {MWF['blast']['queries']} query files, "
        f"(nodes, tasks per node) in {mwf_configs()}, {MWF['repeats']} repeats; on one 2-core host the "
        "emulated nodes share the cores, so times are dominated by process start-up and CPU sharing, not by "
        "the network (config/config.yaml has the paper's scale).",
    ]
    MEMFS_BENCHMARKS += [mwf_bench(p) for p in mwf_expected()] + [
        bench_log("memfs", f"memfs_wf_{x}")
        for x in (
            "tidy",
            "table23",
            "figure2_7_vertical",
            "figure2_8_horizontal",
            "figure2_9_memory",
            "claims",
        )
    ]

register_study(
    MEMFS_STUDY,
    kick=[MEMFS_OUT["kick"], MEMFS_OUT["wf_kick"]],
    enabled=MEMFS_ON,
    stand_ins=MEMFS_STAND_INS,
    benchmarks=MEMFS_BENCHMARKS,
    # the declaration's lists of the parts that are on (several claims files; one tidy table for the study)
    expected_times=memfs_declaration.expected_times(len(mwf_expected()) if MWF_ON else None),
    **memfs_declaration.report_lists(MEMFS_PARTS),
)
# The study's one tidy table (memfs_measurements) concatenates the parts' tidy tables.
MEMFS_MEASUREMENT_PARTS = [MEMFS_OUT["measurements_envelope"]] + (
    [MEMFS_OUT["measurements_workflows"]] if MWF_ON else []
)
