# Paper 002 (storage): the rules. The study's declaration (paths, report entry, helpers) is
# study.smk; the Snakefile includes this file, which includes it.


include: "study.smk"


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
        cache=config["containers"]["cache_dir"],
    shell:
        "python3 -m repro.images check {input.definition} > {log} 2>&1 &&"
        " {input.builder} {input.definition} {output} --build-arg BASE={input.base}"
        " --cache {params.cache} >> {log} 2>&1"


ruleorder: storage_layer_image > build_container


def st_run_rule(name, doc, *, experiment, params_json, system, output, log, benchmark, wildcards, resources, image,
                mpi_env=False):
    """One run rule, the run contract (repro.runner): `python3 -m studies.storage.run <experiment> --config
    <run section> --params <params, JSON with wildcards> --rep R --out {output} [--input image=SIF]`,
    after the MPI environment where the job launches MPI ranks. The driver runs on the host (it needs
    Slurm's client); with an image the stack's commands run in it (run.py's ImageSide). Made in a
    function (a rule's shell expression is evaluated again when its job runs)."""
    rule:
        name:
            name
        input:
            system,
            code=study_code("storage", "run", "layout"),
        output:
            output,
        log:
            log,
        benchmark:
            benchmark
        wildcard_constraints:
            **wildcards,
            rep=r"[0-9]+",
        resources:
            **resources,
        params:
            image=image,
            cfg=lambda wc: run_json("storage"),
            mpi_env=MPI_ENV,
            launcher_kind=LAUNCHER,
        shell:
            "(" + ("{params.mpi_env}; " if mpi_env else "") + "python3 -m studies.storage.run " + experiment
            + " --config {params.cfg} --params '" + params_json + "' --rep {wildcards.rep} --out {output}{params.image})"
            " > {log} 2>&1"

    workflow.get_rule(name).docstring = doc


def st_image_arg(name):
    """` --input image=SIF` where the side runs from its image, else nothing (the host's build)."""
    return f" --input image={sif(name)}" if in_image(name) else ""


def st_stack_image(bench):
    return lambda wc: st_image_arg(st_image(wc.stack, bench))


# one rule per benchmark: the outputs of a job are every (size, workers) of that benchmark
for _st_bench in st_layout.BENCHMARKS:
    st_run_rule(
        f"storage_{_st_bench}_run",
        f"One stack x repeat: the stack up, every {_st_bench} configuration against it, the stack down.",
        experiment=_st_bench,
        params_json='{{"stack":"{wildcards.stack}","launcher":"{params.launcher_kind}"}}',
        system=st_system_inputs(_st_bench), output=st_layout.job_output_patterns(ST, _st_bench),
        log=f"results/storage/log/run/stack~{{stack}}/benchmark~{_st_bench}/rep~{{rep}}.log",
        benchmark=st_bench(f"storage_{_st_bench}_run", stack="{stack}", rep="{rep}"),
        wildcards={"stack": "|".join(st_layout.STACKS)},
        resources=n_plus_1_resources(ST_NODES, runtime=ST["runtime_minutes"]),
        image=st_stack_image(_st_bench), mpi_env=True,
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


st_run_rule(
    "storage_limit_run",
    "The limits, same run: fio on the directory the stacks sit on; the driver's own ceiling.",
    experiment="limit-{wildcards.limit}", params_json='{{"launcher":"{params.launcher_kind}"}}',
    system=["tools/cosbench/build/cosbench-driver", *system_image_input("minio")],
    output=st_layout.limit_path("{limit}", "{rep}"),
    log="results/storage/log/run/limit~{limit}/rep~{rep}.log",
    benchmark=st_bench("storage_limit_run", limit="{limit}", rep="{rep}"),
    wildcards={"limit": "|".join(st_layout.LIMITS)}, resources=st_limit_resources(), image=st_image_arg("minio"),
)


# The tidy table (every configuration: ok, failed, not run), the summary and the limits table, from
# the raw files only; the figures and tables; the claims. The engine's analysis_rule gives each its
# log, benchmark, image and resources.
ST_READS = {"measurements": ST_OUT["measurements"], "published": ST_PUBLISHED}
ST_PUBLISHED_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "storage", "storage_aggregate", script="aggregate", lib=("layout",), raw=st_raw_inputs,
    output={k: ST_OUT[k] for k in ("measurements", "summary", "limits")},
    args="--measurements {output.measurements} --summary {output.summary} --limits {output.limits}"
    f" --launcher {LAUNCHER}",
)
# Figures 4-6 and Table 5: one rule per kind, its {name} the script; each reads the tidy table and the
# published values, writes the data it draws (tables/{name}.csv) and a figure its .png
ST_BY_NAME = {  # rule: (scripts, the other modules they import, outputs, output arguments)
    "storage_figure": (ST_FIGURES, ("analysis", "layout", "cosfig"),
                       {"table": ST_STUDY.table("{name}"), "figure": ST_STUDY.figure("{name}")},
                       " --table {output.table} --out {output.figure}"),
    "storage_table": (ST_TABLES, ("analysis", "layout"), {"table": ST_STUDY.table("{name}")},
                      " --out {output.table}"),
}
for _st_rule, (_st_names, _st_lib, _st_out, _st_args) in ST_BY_NAME.items():
    analysis_rule("storage", _st_rule, script="{name}", names=_st_names, lib=_st_lib, inputs=ST_READS,
                  output=_st_out, args=ST_PUBLISHED_ARGS + _st_args)
analysis_rule(
    "storage", "storage_claims", script="claims", lib=("analysis", "layout", "declaration"),
    inputs={"measurements": ST_OUT["measurements"], "limits": ST_OUT["limits"], "published": ST_PUBLISHED},
    output={"claims": ST_OUT["claims"]},
    args="--measurements {input.measurements} --limits {input.limits} --published {input.published}"
    " --out {output.claims}",
)

