# Paper 001: an MPI-based FUSE file system to distribute large files (One-Sided
# Reading, OSR, and a broadcast "Naive" design) vs the native file systems.
# Section IV's benchmark, Table I, Figures 3, 4, 5 and the bandwidth-reduction
# to latency-increase ratios.
#
#   ./repro snakemake mpifuse_kick --profile profiles/local       # one tiny run (minutes)
#   ./repro snakemake mpifuse --profile profiles/local            # the local study
#   ./repro snakemake mpifuse_speed_report --profile profiles/local   # how close to this machine's limits
#   snakemake mpifuse --profile profiles/slurm --configfile config/config.yaml   # the paper's scale
#
# One job = one *run* of the paper: one source (home | scratch) x n nodes x
# file size x repeat, every use case in turn (the benchmarker, an n+1-rank MPI
# program: rank 0 writes the files, ranks 1..n run the file systems in-process
# through libmpifuse and read through them). Raw files:
#   results/mpifuse/raw/source~S/variant~V/nodes~N/size~Z/rep~R.json
# Systems: systems/mpifuse (the file systems, libmpifuse), systems/homefs (the
# emulated, throttled home NFS used when mpifuse.home.kind = emulated).

from studies.mpifuse import layout as mf_layout

MF = config["mpifuse"]
MF_RAW = mf_layout.RAW_DIR
MF_DIR = f"{STUDIES}/mpifuse"
MF_PUBLISHED = f"{MF_DIR}/published.csv"
MF_OUT = {
    "measurements": "results/mpifuse/measurements.csv",
    "summary": "results/mpifuse/tables/summary.csv",
    "bytes": "results/mpifuse/tables/bytes_from_source.csv",
    "table1": "results/mpifuse/tables/table1.csv",
    "ratios": "results/mpifuse/tables/ratios.csv",
    "variants": "results/mpifuse/tables/variants.csv",
    "figure3": "results/mpifuse/figures/figure3.png",
    "figure4": "results/mpifuse/figures/figure4.png",
    "figure4_table": "results/mpifuse/tables/figure4.csv",
    "figure5": "results/mpifuse/figures/figure5.png",
    "figure5_table": "results/mpifuse/tables/figure5.csv",
    "figure3_table": "results/mpifuse/tables/figure3.csv",
    "claims": "results/mpifuse/claims.csv",
    "speed_raw": "results/mpifuse/speed/raw/source~{src}/size~{size}/rep~0.json".format(
        src=MF["speed"]["source"], size=MF["speed"]["size"]
    ),
    "speed_table": "results/mpifuse/tables/speed.csv",
    "speed_report": "results/mpifuse/speed/report.md",
    "speed_issue13": "results/mpifuse/tables/speed_issue13.csv",
    "speed_issue22": "results/mpifuse/tables/speed_issue22.csv",
}
MF_HOME_EMULATED = MF["home"]["kind"] == "emulated"
MF_LOCAL_BUILD = not config["containers"]["use_for_benchmarks"]
MF_STAND_INS = [
    s
    for s in (
        (
            "home: systems/homefs -- nfs-ganesha 4.3 (VFS FSAL, NFSv3) in a server network namespace, "
            "its link throttled with tc HTB to mpifuse.home.rate_mbit, read by one FUSE NFS client "
            "(libnfs) per emulated node in that node's namespace; it stands in for the Sofja cluster's "
            "StorNext home file system: a shared server whose bandwidth all nodes split"
            if MF_HOME_EMULATED
            else ""
        ),
        (
            (
                f"scratch: {MF['scratch']['path']} -- {MF['scratch']['stand_in']}: a directory on this "
                "machine's local disk (its page cache shared by all emulated nodes), standing in for "
                "the cluster's BeeGFS scratch: a fast source that is never the bottleneck"
            )
            if MF["scratch"]["stand_in"]
            else ""
        ),
        (
            "nodes: the n+1 'nodes' are MPI ranks on one host (MPI over TCP loopback, no shared "
            "memory), sharing its CPU cores; the file systems themselves (OSR, OSR refined, broadcast, "
            "passthrough) are the real implementations"
            if config["cluster"]["single_host"]
            else ""
        ),
    )
    if s
]


def mf_run_bench(source, nodes, size, rep):
    """Snakemake benchmark file of one mpifuse_run job (all use cases of one configuration)."""
    return f"results/mpifuse/benchmarks/mpifuse_run/source~{source},nodes~{nodes},size~{size},rep~{rep}.tsv"


MF_KICK = [
    f"{MF_RAW}/source~{MF['kick']['source']}/variant~{v}/nodes~{n}/size~{MF['kick']['size']}/rep~0.json"
    for n in MF["kick"]["nodes"]
    for v in MF["variants"]
]

register_study(
    "mpifuse",
    images=["mpifuse"],
    kick=MF_KICK,
    **{
    "title": "MPI-based FUSE file systems for distributing large files (OSR and broadcast vs native)",
    "paper": "001 (SCALABILITY 2024): Section IV benchmark, Table I, Figures 3-5, Section VII ratios",
    "enabled": enabled("mpifuse"),
    "claims": MF_OUT["claims"],
    "measurements": MF_OUT["measurements"],
    "figures": [
        {
            "path": MF_OUT["figure3"],
            "caption": "Figure 3: time until every node has hashed the file vs nodes, per size, Home and Scratch, "
            "one line per use case (mean of repeats, error bars: std)",
        },
        {
            "path": MF_OUT["figure4"],
            "caption": "Figure 4: composition of performance factors of OSR and the Naive broadcast file system "
            "(reproduced beside published); both ran with the kernel's default FUSE request size, 128 KiB "
            "(max_read 128KiB, readahead 128 KiB), as the paper did (7630 read calls per GB)",
        },
        {
            "path": MF_OUT["figure5"],
            "caption": "Figure 5: OSR without (osr-nometa: osr with meta_buffer=off, nothing else changed) vs "
            "with the per-byte metadata buffer, native Home for reference; our refined design (osr-refined, "
            "beyond the paper: own-part window, cached 4 MiB chunks, 1 MiB requests) beside them",
        },
    ],
    "tables": [
        {
            "path": MF_OUT["table1"],
            "caption": "Table I: largest file, time at the smallest and largest node count, increase, aggregate "
            "throughput, beside the published values",
        },
        {
            "path": MF_OUT["variants"],
            "caption": "Use cases: mode and library options of each; differs_from_osr shows that the Figure 5 "
            "variant (osr-nometa) differs from OSR only in meta_buffer",
        },
        {
            "path": MF_OUT["ratios"],
            "caption": "Bandwidth-reduction to latency-increase ratios (Section VII: ~8 broadcast, ~22 OSR)",
        },
        {
            "path": MF_OUT["bytes"],
            "caption": "Bytes read from the source file system, in file sizes (1x OSR/broadcast, n x native/passthrough)",
        },
        {"path": MF_OUT["figure4_table"], "caption": "Figure 4 components (s)"},
        {
            "path": MF_OUT["summary"],
            "caption": "Every configuration: count/mean/std/min/max, failed, not run",
        },
    ]
    + (
        [
            {
                "path": MF_OUT["speed_table"],
                "caption": "Speed benchmark (not in the paper): GB/s and the per-round ratio to native on one node of "
                "the paper's user-space passthrough, OSR, OSR refined and kernel FUSE passthrough (kpassthrough; "
                "ours, beyond the paper); the per-request breakdown and idle CPU are in "
                "results/mpifuse/speed/report.md",
            },
            {
                "path": MF_OUT["speed_issue13"],
                "caption": "Issue 13: the FUSE data paths against native reads of the same file in the same job "
                "(per-round ratio min / median / max; the earlier values transcribed from the issue beside; "
                "target and verdict). What the per-request breakdown says about each row: "
                "results/mpifuse/speed/report.md",
            },
            {
                "path": MF_OUT["speed_issue22"],
                "caption": "Issue 22: refined OSR (and our map_source variant, and the paper's passthrough) per "
                "tool beside native reads and the FUSE ceiling (tools/fuseceiling: a FUSE file system serving a "
                "preloaded file from memory, no backend, mounted with OSR refined's request size, readahead and "
                "FUSE loop) in the same rounds: the ceiling's ratio to native, the variant's per-round ratio to "
                "each (min / median / max), rounds above 1.0 counted as measurement errors (never a result), "
                "reader and file-system CPU, the load, what bounds it, target (>= 0.95x native, sha256sum) and "
                "verdict",
            },
        ]
        if MF["speed"]["enabled"]
        else []
    ),
    "stand_ins": MF_STAND_INS,
    "expected_times": {
        "setup_local": "none beyond ./repro setup (builds systems/mpifuse and systems/homefs)",
        "run_local": "about 21 min on an idle 2-core machine (72 runs of 8 use cases + the speed benchmark, "
        "about 5 min with 5 repeats and 8 variants; the reference run measured 14.2 min), up to 30 min while "
        "other studies load the machine",
        "analysis_local": "< 1 min",
        "run_cluster": "480 jobs of n+1 nodes (n up to 24), about 8 h of job time at 10 repeats (8 use cases; 1 GB runs "
        "dominate), less where small-n jobs run side by side",
    },
    # the report sums these into the measured run time: every benchmark job, the speed
    # benchmark, then the analysis rules
    "benchmarks": [
        mf_run_bench(r["source"], r["nodes"], r["size"], r["rep"]) for r in mf_layout.matrix(MF)
    ]
    + [bench_log("mpifuse", "mpifuse_speed")]
    + [
        bench_log("mpifuse", r)
        for r in (
            "mpifuse_aggregate",
            "mpifuse_table1",
            "mpifuse_ratios",
            "mpifuse_variants",
            "mpifuse_figure3",
            "mpifuse_figure4",
            "mpifuse_figure5",
            "mpifuse_claims",
        )
    ],
    },
)


def mf_raw_out(variants):
    return [
        f"{MF_RAW}/source~{{source}}/variant~{v}/nodes~{{nodes}}/size~{{size}}/rep~{{rep}}.json"
        for v in variants
    ]


def mf_system_inputs(wc=None):
    """What the benchmark needs built on this host (inside the image on a cluster)."""
    files = system_image_input("mpifuse")
    if MF_LOCAL_BUILD:
        files.append("systems/mpifuse/build/libmpifuse.so")
        if MF_HOME_EMULATED:
            files.append("systems/homefs/build/nfsfuse")
    return files


def mf_homefs_wrap(source, nodes):
    """home.kind=emulated: bring the throttled home NFS up around the launcher, down after it."""
    if source != "home" or not MF_HOME_EMULATED:
        return ""
    h = MF["home"]
    return (
        f"python3 systems/homefs/homefs.py run --state {h['state_dir']}/$tag --nodes {nodes}"
        f" --rate-mbit {h['rate_mbit']} --burst {h['burst']} --max-read {h['client_max_read']} --"
    )


def mf_raw_inputs(wildcards):
    expected = mf_layout.expected_raw(MF)
    if ALLOW_INCOMPLETE:
        return [p for p in expected if os.path.exists(p)]
    return expected
