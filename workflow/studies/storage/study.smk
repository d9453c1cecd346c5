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

from studies.storage import declaration as st_declaration
from studies.storage import layout as st_layout

ST = config["storage"]
ST_STUDY = st_declaration.STUDY
ST_DIR = f"{STUDIES}/storage"
ST_PUBLISHED = f"{ST_DIR}/published.csv"
ST_NODES = ST["nodes"][0]
ST_FIGURES = list(ST_STUDY.figures)
ST_TABLES = list(ST_STUDY.tables)
ST_OUT = {k: ST_STUDY.out(k) for k in ST_STUDY.outputs}
# the limits' image (minio) not used: the host's cosbench-driver (use_for_benchmarks off, or
# containers.host_build names it)
ST_LOCAL_BUILD = not in_image("minio")
ST_IMAGES = {"ceph": "ceph", "lustre-minio": "minio", "juicefs": "juicefs"}
# layers on a stack image (containers/<layer>.def, Bootstrap: localimage): the real COSBench and
# Open MPI + IOR/mdtest beside the stack's daemons, when the config asks for them
ST_LAYER = {
    "cosbench": "cosbench" if ST["cosbench"]["tool"] == "cosbench" else None,
    "mdtest": {"layered": "mdtest", "mdbench": "mdbench"}.get(ST["mdtest"]["container"]),
}


def st_image(stack, bench):
    """The image a stack x benchmark job runs in: the stack's, or its layered variant."""
    layer = ST_LAYER[bench] if in_image(ST_IMAGES[stack]) else None
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

# the stacks run and their images (layered where the config asks) are the configuration's: images=
register_study(
    ST_STUDY,
    images=ST_ALL_IMAGES,
    kick=ST_KICK,
    stand_ins=ST_STAND_INS,
    benchmarks=[
        st_bench(f"storage_{j['benchmark']}_run", stack=j["stack"], rep=j["rep"])
        for j in st_layout.jobs(ST, LAUNCHER)
    ]
    + [st_bench("storage_limit_run", limit=l, rep=r) for l in st_layout.LIMITS for r in range(ST["repeats"])]
    + [bench_log("storage", r) for r in ["storage_aggregate", "storage_claims"] + [f"storage_{n}" for n in ST_FIGURES + ST_TABLES]],
)


def st_system_inputs(bench):
    """The job's image, or the host's builds; cosbench-driver (a static tool the driver runs on the host)
    whenever the real COSBench is not the tool."""
    def inputs(wc):
        files = system_image_input(st_image(wc.stack, bench))
        if bench == "cosbench" and ST["cosbench"]["tool"] != "cosbench":
            files.append("tools/cosbench/build/cosbench-driver")
        if not in_image(st_image(wc.stack, bench)):
            files += ["tools/cosbench/build/cosbench-driver", "tools/mdtest/build/mdbench"]
        return list(dict.fromkeys(files))

    return inputs


def st_raw_inputs(wildcards):
    expected = st_layout.expected_raw(ST, launcher=LAUNCHER)
    if ALLOW_INCOMPLETE:
        return [p for p in expected if os.path.exists(p)]
    return expected
