# Paper 001: an MPI-based FUSE file system to distribute large files (One-Sided
# Reading, OSR, and a broadcast "Naive" design) vs the native file systems.
# Section IV's benchmark, Table I, Figures 3, 4, 5 and the bandwidth-reduction
# to latency-increase ratios.
#
#   ./repro snakemake mpifuse_kick --profile profiles/local       # one tiny run (minutes)
#   ./repro snakemake mpifuse --profile profiles/local            # the local study
#   snakemake mpifuse --profile profiles/slurm --configfile config/config.yaml   # the paper's scale
#
# One job = one *run* of the paper: one source (home | scratch) x n nodes x
# file size x repeat, every use case in turn (the benchmarker, an n+1-rank MPI
# program: rank 0 writes the files, ranks 1..n run the file systems in-process
# through libmpifuse and read through them). Raw files:
#   results/mpifuse/raw/source~S/variant~V/nodes~N/size~Z/rep~R.json
# Systems: systems/mpifuse (the file systems, libmpifuse), systems/homefs (the
# emulated, throttled home NFS used when mpifuse.home.kind = emulated).

from studies.mpifuse import declaration as mf_declaration
from studies.mpifuse import layout as mf_layout

MF = config["mpifuse"]
MF_STUDY = mf_declaration.STUDY
MF_RAW = mf_layout.RAW_DIR
MF_DIR = f"{STUDIES}/mpifuse"
MF_PUBLISHED = f"{MF_DIR}/published.csv"
MF_OUT = {k: MF_STUDY.out(k) for k in MF_STUDY.outputs}
MF_HOME_EMULATED = MF["home"]["kind"] == "emulated"
MF_LOCAL_BUILD = not in_image("mpifuse")
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
    mf_layout.raw_path(MF["kick"]["source"], v, n, MF["kick"]["size"], 0)
    for n in MF["kick"]["nodes"]
    for v in MF["variants"]
]

register_study(
    MF_STUDY,
    kick=MF_KICK,
    enabled=enabled("mpifuse"),
    stand_ins=MF_STAND_INS,
    # the report sums these into the measured run time: every benchmark job, then the analysis rules
    benchmarks=[mf_run_bench(r["source"], r["nodes"], r["size"], r["rep"]) for r in mf_layout.matrix(MF)]
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


# What a study that runs these file systems gets (its declaration's `uses`; workflow/rules/uses.smk),
# never this file's globals: the inputs they need built on this host (a function of the wildcards),
# whether they are built here (not in the image), the wrapper around the launcher (source, nodes: the
# emulated home's NFS), the stand-ins, the published values, the modules a user's job imports, and the
# run section (run_json) the file systems are mounted with.
provide_systems(
    MF_STUDY,
    inputs=mf_system_inputs,
    local_build=MF_LOCAL_BUILD,
    wrap=mf_homefs_wrap,
    stand_ins=MF_STAND_INS,
    published=MF_PUBLISHED,
    # the file systems' Python side a using study runs (fusespeed imports nothing of this study's code)
    code=["systems/mpifuse/python/runkit.py"],
    config=lambda wc: run_json("mpifuse"),
)
