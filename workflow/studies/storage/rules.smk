# Paper 002 (storage for HPC over cloud), Sec. 4: Ceph, Lustre+MinIO and JuiceFS+MinIO+Redis under
# COSBench object workloads (Figs. 4-5) and mdtest-hard (Table 5, Fig. 6), with the limits measured in
# the same run. What the study is and writes: declaration.py (the experiments' raw paths too); what the
# configuration decides: layout.py; README.md: how to run it, at which scale.

from studies.storage import declaration as st_declaration
from studies.storage import layout as st_layout

ST = config["storage"]
ST_STUDY = st_declaration.STUDY
ST_PUBLISHED = f"{STUDIES}/storage/published.csv"
ST_OUT = {k: ST_STUDY.out(k) for k in ST_STUDY.outputs}
ST_IMAGES = {"ceph": "ceph", "lustre-minio": "minio", "juicefs": "juicefs"}
ST_LAYER = {
    "cosbench": "cosbench" if ST["cosbench"]["tool"] == "cosbench" else None,
    "mdtest": {"layered": "mdtest", "mdbench": "mdbench"}.get(ST["mdtest"]["container"]),
}


def st_image(stack, bench):
    """The image a stack x benchmark job runs in: the stack's, or its layered variant."""
    layer = ST_LAYER[bench] if in_image(ST_IMAGES[stack]) else None
    return f"{ST_IMAGES[stack]}-{layer}" if layer else ST_IMAGES[stack]


def st_system_inputs(bench):
    """The host's builds a job needs: cosbench-driver (a static tool the driver runs on the host)
    whenever the real COSBench is not the tool, both tools where the side runs from the host's build.
    The image, where there is one, is the job's named input `image` (--input image=SIF)."""

    def inputs(wc):
        files = []
        if bench == "cosbench" and ST["cosbench"]["tool"] != "cosbench":
            files.append("tools/cosbench/build/cosbench-driver")
        if not in_image(st_image(wc.stack, bench)):
            files += ["tools/cosbench/build/cosbench-driver", "tools/mdtest/build/mdbench"]
        return list(dict.fromkeys(files))

    return inputs


def st_image_input(bench):
    """The job's image (its named input `image`: --input image=SIF), where the side runs from one."""
    return lambda wc: system_image_input(st_image(wc.stack, bench))


register_study(
    ST_STUDY,
    images=sorted({st_image(s, b) for s in st_layout.stacks_run(ST, LAUNCHER) for b in st_layout.BENCHMARKS} | {"minio"}),
    kick=st_layout.kick(ST, LAUNCHER),
    stand_ins=st_layout.stand_ins(ST, LAUNCHER, config["cluster"]["single_host"]),
)


rule storage_build_driver:
    output:
        "tools/cosbench/build/cosbench-driver",
    log:
        "results/storage/log/build_driver.log",
    shell:
        "make -C tools/cosbench > {log} 2>&1"


rule storage_build_mdbench:
    output:
        "tools/mdtest/build/mdbench",
    log:
        "results/storage/log/build_mdbench.log",
    params:
        mpi_env=MPI_ENV,
    shell:
        "({params.mpi_env}; make -C tools/mdtest) > {log} 2>&1"


# built where Snakemake runs, like build_container: a layer fetches its benchmark (COSBench, IOR)
# from the network, which a compute node often cannot reach (the container rehearsal found it
# submitted to node0)
localrules:
    storage_layer_image,


rule storage_layer_image:
    """A stack image with a benchmark layer (containers/{layer}.def: Bootstrap localimage on the
    stack's .sif): <stack>-cosbench.sif (COSBench 0.4.2 + Java 8), <stack>-mdtest.sif (Open MPI +
    IOR/mdtest), <stack>-mdbench.sif (Open MPI + tools/mdtest's mdbench, from the package registries alone).
    Used when storage.cosbench.tool = cosbench / storage.mdtest.container = layered or mdbench."""
    input:
        definition="containers/{layer}.def",
        base=f"{SIF_DIR}/{{base}}.sif",
        builder=f"{SCRIPTS}/setup/build-sif.sh",
    output:
        f"{SIF_DIR}/{{base}}-{{layer}}.sif",
    log:
        "results/containers/log/{base}-{layer}.log",
    wildcard_constraints:
        base="ceph|minio|juicefs",
        layer="cosbench|mdtest|mdbench",
    resources:
        runtime=90,
        mem_mb=4000,
    params:
        cache=IMAGE_CACHE,
    shell:
        "python3 -m repro.images check {input.definition} > {log} 2>&1 &&"
        " {input.builder} {input.definition} {output} --build-arg BASE={input.base}"
        " --cache {params.cache} >> {log} 2>&1"


ruleorder: storage_layer_image > build_container


# One job = one stack x benchmark x repeat (the driver on the host: it needs Slurm's client; with an
# image the stack's commands run in it, run.py's ImageSide), and the limits (the engine's experiment_rule).
for _st_bench in st_layout.BENCHMARKS:
    experiment_rule(
        ST_STUDY, _st_bench, matrix=[j for j in st_layout.jobs(ST, LAUNCHER) if j["benchmark"] == _st_bench],
        each={k: list(dict.fromkeys(c[k] for c in st_layout.configurations(ST, "-", _st_bench))) for k in ("size", "workers")},
        input=st_system_inputs(_st_bench),
        inputs={"image": st_image_input(_st_bench)},
        resources=n_plus_1_resources(ST["nodes"][0], runtime=ST["runtime_minutes"]), mpi_env=True,
        params=lambda wc: {"launcher": LAUNCHER},
    )


def st_limit_resources():
    """What each limit job uses, and no more (issue 27: fio asked n+1 nodes and measured on 2).
    fio: the driver and the one system node whose node-local disk it measures (the stacks' data
    sit on the system nodes' disks: run.fio_place, an srun step on the first system node), 1+1
    nodes; with a Lustre directory (shared, read from the driver) or on one host, the driver alone.
    The driver's ceiling: one node, exclusive (cosbench-driver against its own in-process server)."""
    fio_system = 0 if (ST["paths"].get("lustre_dir") or config["cluster"]["single_host"]) else 1
    res = n_plus_1_resources(lambda wc: fio_system if wc.limit == "fio" else 0)
    mpi = res["mpi"]
    # the slurm plugin refuses an MPI job of 1 task
    res["mpi"] = lambda wc: mpi if wc.limit == "fio" and fio_system else ""
    return res


experiment_rule(
    ST_STUDY, "limit", matrix=[{"limit": l, "rep": r} for r in range(ST["repeats"]) for l in st_layout.LIMITS],
    input=["tools/cosbench/build/cosbench-driver"], inputs={"image": system_image_input("minio")},
    resources=st_limit_resources(), params=lambda wc: {"launcher": LAUNCHER},
)


# The tidy table (every configuration: ok, failed, not run), the summary and the limits table, from
# the raw files only; the figures and tables; the claims. The engine's analysis_rule gives each its
# log, benchmark, image and resources.
ST_READS = {"measurements": ST_OUT["measurements"], "published": ST_PUBLISHED}
ST_PUBLISHED_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "storage", "storage_aggregate", script="aggregate", lib=("layout",), raw=experiment_raw(ST_STUDY),
    output={k: ST_OUT[k] for k in ("measurements", "summary", "limits")},
    args="--measurements {output.measurements} --summary {output.summary} --limits {output.limits}"
    f" --launcher {LAUNCHER}",
)
# Figures 4-6 and Table 5: each reads the tidy table and the published values, writes the data it
# draws (tables/{name}.csv) and a figure its .png
analysis_rule(
    "storage", "storage_figure", script="{name}", names=tuple(ST_STUDY.figures), lib=("analysis", "layout", "cosfig"),
    inputs=ST_READS, output={"table": ST_STUDY.table("{name}"), "figure": ST_STUDY.figure("{name}")},
    args=ST_PUBLISHED_ARGS + " --table {output.table} --out {output.figure}",
)
analysis_rule(
    "storage", "storage_table", script="{name}", names=tuple(ST_STUDY.tables), lib=("analysis", "layout"),
    inputs=ST_READS, output={"table": ST_STUDY.table("{name}")}, args=ST_PUBLISHED_ARGS + " --out {output.table}",
)
analysis_rule(
    "storage", "storage_claims", script="claims", lib=("analysis", "layout", "declaration"),
    inputs={"measurements": ST_OUT["measurements"], "limits": ST_OUT["limits"], "published": ST_PUBLISHED},
    output={"claims": ST_OUT["claims"]},
    args="--measurements {input.measurements} --limits {input.limits} --published {input.published}"
    " --out {output.claims}",
)

