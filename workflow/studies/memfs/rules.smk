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
# workflows.smk (Montage/BLAST, 2.4.2) is included at the end of this file and
# appends its claims, measurements, figures and tables to STUDY_REPORT["memfs"].

from studies.memfs import layout as memfs_layout

MEMFS = config["memfs"]
MEMFS_ON = enabled("memfs")
MEMFS_DIR = f"{STUDIES}/memfs"
MEMFS_RAW = memfs_layout.RAW_DIR
MEMFS_PUBLISHED = f"{MEMFS_DIR}/published.csv"
MEMFS_OUT = {
    "expected": "results/memfs/expected_raw_envelope.txt",
    "measurements": "results/memfs/measurements_envelope.csv",
    "summary": "results/memfs/tables/envelope_summary.csv",
    "table21": "results/memfs/tables/table2_1.csv",
    "limit": "results/memfs/tables/memfs_vs_memcached.csv",
    "claims": "results/memfs/claims_envelope.csv",
    "figure23": "results/memfs/figures/figure2_3_design.png",
    "figure24": "results/memfs/figures/figure2_4_bandwidth.png",
    "figure25": "results/memfs/figures/figure2_5_throughput.png",
    "figure26": "results/memfs/figures/figure2_6_metadata.png",
    "kick": "results/memfs/kick/measurements.csv",
}
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


def memfs_bench_cmd(exp, extra):
    """Shell command of one benchmark job (the driver; agents are started by systems/mtc)."""
    image = (
        f" --image {sif('memfs')}" if config["containers"]["use_for_benchmarks"] else ""
    )
    return (
        "("
        + MPI_ENV
        + "; "
        + study_module("memfs", "run")
        + " "
        + exp
        + " --network {wildcards.network}"
        " --nodes {wildcards.n} --rep {wildcards.rep} "
        + extra
        + " --config {params.cfg} --launcher "
        + LAUNCHER
        + f" --single-host {int(config['cluster']['single_host'])}"
        + image
        + " --out {output}) > {log} 2>&1"
    )


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
        sub = {k: MEMFS[k] for k in ("memcached", "memfs", "iozone")}
        sub["networks"] = {wc.network: MEMFS["networks"][wc.network]}
        sub[memfs_layout.SECTION[exp]] = MEMFS[memfs_layout.SECTION[exp]]
        return shlex.quote(json.dumps(sub, sort_keys=True))

    return cfg


def memfs_analysis_cfg(wc):
    return shlex.quote(
        json.dumps({k: v for k, v in MEMFS.items() if k != "workflows"}, sort_keys=True)
    )


register_study(
    "memfs",
    images=["memfs"],
    kick=[MEMFS_OUT["kick"], "results/memfs/kick/workflows/raw/workflow~montage/design~locality/nodes~2/tasks_per_node~1/rep~0.json"],
    **{
        "title": "MemFS: an in-memory runtime file system with symmetric data distribution",
        "paper": "004 (FGCS 54, 2016), Chapter 2: MTC Envelope (Section 2.4.1, Figures 2.3-2.6, Table 2.1); "
        "Montage/BLAST workflows (Section 2.4.2)",
        "enabled": MEMFS_ON,
        "claims": [MEMFS_OUT["claims"]],
        "measurements": [MEMFS_OUT["measurements"]],
        "figures": [
            {
                "path": MEMFS_OUT["figure23"],
                "caption": "Figure 2.3: MemFS design decisions - (a) write bandwidth vs stripe size, (b) read bandwidth vs prefetch threads (mean and std over repeats). The paper picks 512 KiB stripes; reads depend on the prefetch threads, not on the stripe size.",
            },
            {
                "path": MEMFS_OUT["figure24"],
                "caption": "Figure 2.4: MTC Envelope bandwidth (MB/s) vs nodes for 1 KB, 1 MB and 128 MB files: write, 1-1 read, N-1 read of MemFS and of the locality-based design (our re-implementation of AMFS's policy; its N-1 bandwidth includes the multicast by replicate-on-read; dashed: its remote 1-1 read).",
            },
            {
                "path": MEMFS_OUT["figure25"],
                "caption": "Figure 2.5: MTC Envelope throughput (read()/write() calls per second, iozone's own timing; the locality design's N-1 throughput excludes the multicast) vs nodes.",
            },
            {
                "path": MEMFS_OUT["figure26"],
                "caption": "Figure 2.6: metadata throughput (create, open) vs nodes, mdtest phases (tools/mdtest/mdbench where mdtest is absent).",
            },
        ],
        "tables": [
            {
                "path": MEMFS_OUT["table21"],
                "caption": "Table 2.1: MTC Envelope at the largest node count, 1 MB files, both network settings, published (64 nodes, DAS4) beside reproduced (mean, std, count; our scale).",
            },
            {
                "path": MEMFS_OUT["limit"],
                "caption": "MemFS as a fraction of raw memcached (mcbench set/get with the stripe size as value size, same nodes and network), and the emulated links' measured rate.",
            },
            {
                "path": MEMFS_OUT["summary"],
                "caption": "MTC Envelope, metadata, sweeps and limit: per-configuration summary (count/mean/std/min/max, failed, not run).",
            },
        ],
        "stand_ins": [
            "MTC Envelope (2.4.1): the locality-based design is our re-implementation of AMFS's policy inside MemFS (--policy locality: writes only to the node's own memcached, replicate-on-read, owners via user.memfs.owners) - AMFS's code is not public; its locality-aware placement is the benchmark placing each 1-1 reader on the file's node, its multicast is every node replicating the file (a star from the source, not AMFS Shell's tree).",
            "MTC Envelope (2.4.1): where a network is marked emulated (locally: both), each system node is a network namespace on one host with its veth link shaped by tc HTB (IPoIB stand-in 8 Gbit/s, 1GbE 1 Gbit/s, no added latency); memcached, MemFS (FUSE), iozone and the metadata benchmark are real. All nodes share this host's cores, so aggregate rates cannot grow with nodes where the CPU (or, for metadata, the scheduling delay of every cross-node round trip), not the link, is the bottleneck.",
            "MTC Envelope (2.4.1): iozone's throughput mode is used (one process per file of a batch; single-file mode re-opens the file it just created, which a write-once file system refuses), with its 2 s untimed sleeps skipped by an LD_PRELOAD shim (tools/iozone/build/libnosleep.so); bandwidth and throughput come from iozone's own per-child timings.",
            "MTC Envelope (2.4.1): mdtest (IOR project) is in no reachable registry; tools/mdtest/mdbench (C, MPI) follows mdtest's phases, flags and summary format and is used where mdtest is not on PATH (the memfs image builds the real mdtest).",
        ],
        "expected_times": {
            "setup_local": "envelope: iozone fetch (tools/iozone/fetch.sh) and make -C systems/mtc, tools/mdtest, tools/iozone, < 1 min",
            "run_local": "envelope, metadata, sweeps, limit (120 runs): ~10 min (the reference run measured 9.3 min of job time on 2 cores), up to ~20 min while other studies run beside it",
            "analysis_local": "envelope: < 1 min",
            "run_cluster": "envelope: ~3-5 h (1-29 nodes, 3 sizes, 2 designs, 3 repeats; 64 nodes with a larger partition)",
        },
        "benchmarks": [],
    },
)
# per-run benchmark files: the report sums the ones that exist
STUDY_REPORT["memfs"]["benchmarks"] = [
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


rule memfs_envelope_run:
    """MTC Envelope I/O (iozone): one design, network, node count, file size, repeat."""
    input:
        system_image_input("memfs"),
        code=MEMFS_BENCH_CODE,
    output:
        MEMFS_PATTERNS["envelope"],
    log:
        "results/memfs/log/envelope/network~{network}/design~{design}/nodes~{n}/size~{size}/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_envelope_run/envelope,network~{network},design~{design},nodes~{n},size~{size},rep~{rep}.tsv"
    wildcard_constraints:
        **_MEMFS_WC,
    resources:
        **n_plus_1_resources(
            lambda wc: int(wc.n),
            runtime=MEMFS["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        cfg=memfs_run_cfg("envelope"),
    shell:
        memfs_bench_cmd(
            "envelope", "--design {wildcards.design} --size {wildcards.size}"
        )


rule memfs_metadata_run:
    """Metadata rates (mdtest or mdbench over MPI ranks on the system nodes)."""
    input:
        system_image_input("memfs"),
        code=MEMFS_BENCH_CODE,
    output:
        MEMFS_PATTERNS["metadata"],
    log:
        "results/memfs/log/metadata/network~{network}/design~{design}/nodes~{n}/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_metadata_run/metadata,network~{network},design~{design},nodes~{n},rep~{rep}.tsv"
    wildcard_constraints:
        **_MEMFS_WC,
    resources:
        **n_plus_1_resources(
            lambda wc: int(wc.n),
            runtime=MEMFS["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        cfg=memfs_run_cfg("metadata"),
    shell:
        memfs_bench_cmd("metadata", "--design {wildcards.design}")


rule memfs_stripe_run:
    """Figure 2.3a: one stripe size."""
    input:
        system_image_input("memfs"),
        code=MEMFS_BENCH_CODE,
    output:
        MEMFS_PATTERNS["stripe"],
    log:
        "results/memfs/log/stripe/network~{network}/nodes~{n}/stripe~{stripe}/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_stripe_run/stripe,network~{network},nodes~{n},stripe~{stripe},rep~{rep}.tsv"
    wildcard_constraints:
        **_MEMFS_WC,
    resources:
        **n_plus_1_resources(
            lambda wc: int(wc.n),
            runtime=MEMFS["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        cfg=memfs_run_cfg("stripe"),
    shell:
        memfs_bench_cmd("stripe", "--stripe {wildcards.stripe}")


rule memfs_threads_run:
    """Figure 2.3b: one prefetch thread-pool size."""
    input:
        system_image_input("memfs"),
        code=MEMFS_BENCH_CODE,
    output:
        MEMFS_PATTERNS["threads"],
    log:
        "results/memfs/log/threads/network~{network}/nodes~{n}/threads~{threads}/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_threads_run/threads,network~{network},nodes~{n},threads~{threads},rep~{rep}.tsv"
    wildcard_constraints:
        **_MEMFS_WC,
    resources:
        **n_plus_1_resources(
            lambda wc: int(wc.n),
            runtime=MEMFS["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        cfg=memfs_run_cfg("threads"),
    shell:
        memfs_bench_cmd("threads", "--threads {wildcards.threads}")


rule memfs_limit_run:
    """The limit: raw memcached set/get bandwidth (mcbench) and the link's measured rate (iperf3)."""
    input:
        system_image_input("memfs"),
        code=MEMFS_BENCH_CODE,
    output:
        MEMFS_PATTERNS["limit"],
    log:
        "results/memfs/log/limit/network~{network}/nodes~{n}/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_limit_run/limit,network~{network},nodes~{n},rep~{rep}.tsv"
    wildcard_constraints:
        **_MEMFS_WC,
    resources:
        **n_plus_1_resources(
            lambda wc: int(wc.n),
            runtime=MEMFS["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        cfg=memfs_run_cfg("limit"),
    shell:
        memfs_bench_cmd("limit", "")


localrules:
    memfs_expected,


rule memfs_expected:
    """The full list of expected raw files (the tables show missing ones as not-run)."""
    output:
        MEMFS_OUT["expected"],
    params:
        paths=lambda wc: memfs_layout.expected_raw(MEMFS),
    run:
        from pathlib import Path

        Path(output[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(output[0]).write_text("".join(p + "\n" for p in params.paths))


rule memfs_aggregate:
    """Tidy table, Table 2.1, MemFS vs raw memcached, claims: from the raw files only."""
    input:
        memfs_raw_inputs,
        analysis_image_input(),
        code=study_code("memfs", "analyze", "common", "layout"),
        expected=MEMFS_OUT["expected"],
        published=MEMFS_PUBLISHED,
    output:
        measurements=MEMFS_OUT["measurements"],
        summary=MEMFS_OUT["summary"],
        table21=MEMFS_OUT["table21"],
        limit=MEMFS_OUT["limit"],
        claims=MEMFS_OUT["claims"],
    log:
        "results/memfs/log/aggregate.log",
    benchmark:
        bench_log("memfs", "memfs_aggregate")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=memfs_analysis_cfg,
    shell:
        f"{study_module('memfs', 'analyze')} --expected {{input.expected}} --config {{params.cfg}}"
        " --published {input.published} --measurements {output.measurements} --summary {output.summary}"
        " --table21 {output.table21} --limit {output.limit} --claims {output.claims} > {log} 2>&1"


rule memfs_figure:
    """Figures 2.3 (design sweeps), 2.4 (bandwidth), 2.5 (throughput), 2.6 (metadata)."""
    input:
        analysis_image_input(),
        code=f"{MEMFS_DIR}/figure2_{{fig}}.py",
        lib=study_code("memfs", "common"),
        measurements=MEMFS_OUT["measurements"],
    output:
        "results/memfs/figures/figure2_{fig}_{name}.png",
    log:
        "results/memfs/log/figure2_{fig}_{name}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_figure2_{fig}_{name}.tsv"
    wildcard_constraints:
        fig="3|4|5|6",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=memfs_analysis_cfg,
    shell:
        "python3 -m studies.memfs.figure2_{wildcards.fig} --measurements {input.measurements}"
        " --config {params.cfg} --out {output} > {log} 2>&1"


rule memfs_kick_summary:
    """memfs_kick: the tidy table of the tiny configurations."""
    input:
        memfs_layout.kick_paths(MEMFS),
        analysis_image_input(),
        code=study_code("memfs", "analyze", "common", "layout"),
    output:
        MEMFS_OUT["kick"],
    log:
        "results/memfs/log/kick_summary.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        paths=lambda wc: " ".join(memfs_layout.kick_paths(MEMFS)),
    shell:
        f"{study_module('memfs', 'analyze')} --tidy-only {{params.paths}} --measurements {{output}} > {{log}} 2>&1"


rule memfs_envelope:
    """Section 2.4.1: every run, the tables, figures and claims."""
    input:
        []
        if not MEMFS_ON
        else [
            MEMFS_OUT[k]
            for k in (
                "claims",
                "table21",
                "limit",
                "figure23",
                "figure24",
                "figure25",
                "figure26",
            )
        ],


rule memfs_envelope_runs:
    """Only the runs of Section 2.4.1 (every expected raw file)."""
    input:
        memfs_layout.expected_raw(MEMFS) if MEMFS_ON else [],


rule memfs_kick:
    """One tiny configuration of every experiment (2 nodes, 1 MiB files) and their tidy table."""
    input:
        MEMFS_OUT["kick"],


include: "workflows.smk"
