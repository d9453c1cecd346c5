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
    IOR/mdtest). Used when storage.cosbench.tool = cosbench / storage.mdtest.container = layered."""
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
        layer="cosbench|mdtest",
    resources:
        runtime=90,
        mem_mb=4000,
    params:
        cache=config["containers"]["cache_dir"],
    shell:
        "{input.builder} {input.definition} {output} --build-arg BASE={input.base}"
        " --cache {params.cache} > {log} 2>&1"


ruleorder: storage_layer_image > build_container


# one rule per benchmark: the outputs of a job are every (size, workers) of that benchmark
for _st_bench in st_layout.BENCHMARKS:

    rule:
        name:
            f"storage_{_st_bench}_run"
        input:
            st_system_inputs(_st_bench),
            code=study_code("storage", "run", "layout"),
        output:
            st_layout.job_output_patterns(ST, _st_bench),
        log:
            f"results/storage/log/run/stack~{{stack}}/benchmark~{_st_bench}/rep~{{rep}}.log",
        benchmark:
            st_bench(f"storage_{_st_bench}_run", stack="{stack}", rep="{rep}")
        wildcard_constraints:
            stack="|".join(st_layout.STACKS),
            rep=r"[0-9]+",
        resources:
            **n_plus_1_resources(ST_NODES, runtime=ST["runtime_minutes"]),
        params:
            bench=_st_bench,
            exec=lambda wc, b=_st_bench: system_exec(st_image(wc.stack, b)),
            cfg=lambda wc: study_json("storage"),
            mpi_env=MPI_ENV,
            launcher_kind=LAUNCHER,
        shell:
            "({params.mpi_env}; {params.exec} python3 -m studies.storage.run stack --config {params.cfg}"
            " --stack {wildcards.stack} --benchmark {params.bench} --rep {wildcards.rep}"
            " --launcher {params.launcher_kind}) > {log} 2>&1"


def st_limit_resources():
    """fio: n+1 nodes (it measures on a system node's disk, where the stacks' data sit); the
    driver's ceiling: one node, exclusive (cosbench-driver against its own in-process server:
    nothing runs anywhere else, so asking n+1 left n idle -- the rehearsal's apart check)."""
    res = n_plus_1_resources(lambda wc: ST_NODES if wc.limit == "fio" else 0)
    mpi = res["mpi"]
    res["mpi"] = lambda wc: mpi if wc.limit == "fio" else ""  # the slurm plugin refuses an MPI job of 1 task
    return res


rule storage_limit_run:
    """The limits, same run: fio on the directory the stacks sit on; the driver's own ceiling."""
    input:
        ["tools/cosbench/build/cosbench-driver"] if ST_LOCAL_BUILD else system_image_input("minio"),
        code=study_code("storage", "run", "layout"),
    output:
        f"{st_layout.RAW_DIR}/limit~{{limit}}/rep~{{rep}}.json",
    log:
        "results/storage/log/run/limit~{limit}/rep~{rep}.log",
    benchmark:
        st_bench("storage_limit_run", limit="{limit}", rep="{rep}")
    wildcard_constraints:
        limit="|".join(st_layout.LIMITS),
        rep=r"[0-9]+",
    resources:
        **st_limit_resources(),
    params:
        exec=system_exec("minio"),
        cfg=lambda wc: study_json("storage"),
        launcher_kind=LAUNCHER,
    shell:
        "({params.exec} python3 -m studies.storage.run limit --config {params.cfg}"
        " --limit {wildcards.limit} --rep {wildcards.rep} --launcher {params.launcher_kind}) > {log} 2>&1"


rule storage_aggregate:
    input:
        analysis_image_input(),
        st_raw_inputs,
        code=study_code("storage", "aggregate", "layout"),
    output:
        measurements=ST_OUT["measurements"],
        summary=ST_OUT["summary"],
        limits=ST_OUT["limits"],
    log:
        "results/storage/log/aggregate.log",
    benchmark:
        bench_log("storage", "storage_aggregate")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("storage"),
        launcher_kind=LAUNCHER,
    shell:
        "python3 -m studies.storage.aggregate --config {params.cfg} --measurements {output.measurements}"
        " --summary {output.summary} --limits {output.limits} --launcher {params.launcher_kind} > {log} 2>&1"


# Figures 4, 5, 6 and Table 5: one shape (the script studies.storage.{name} reads the tidy table
# and the published values); a figure also writes the data it draws (tables/{name}.csv). Defined by
# a function, not in a loop: a rule's shell expression is evaluated again when its job runs, and in
# a loop it would see the loop's last values (a function call keeps its own).
def st_analysis_rule(rule_name, doc, lib, names, output, out_args):
    rule:
        name:
            rule_name
        input:
            analysis_image_input(),
            code=f"{ST_DIR}/{{name}}.py",
            lib=study_code("storage", *lib),
            measurements=ST_OUT["measurements"],
            published=ST_PUBLISHED,
        output:
            *(output if isinstance(output, list) else []),
            **(output if isinstance(output, dict) else {}),
        log:
            "results/storage/log/{name}.log",
        benchmark:
            bench_log("storage", "storage_{name}")
        wildcard_constraints:
            name="|".join(names),
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            cfg=lambda wc: study_json("storage"),
        shell:
            "python3 -m studies.storage.{wildcards.name} --config {params.cfg} --measurements {input.measurements}"
            " --published {input.published} " + out_args + " > {log} 2>&1"

    workflow.get_rule(rule_name).docstring = doc


st_analysis_rule(
    "storage_figure",
    "Figures 4, 5, 6 (figures/{name}.png) and the data each draws (tables/{name}.csv).",
    lib=("analysis", "layout", "cosfig"),
    names=ST_FIGURES,
    output={
        "table": "results/storage/tables/{name}.csv",
        "figure": "results/storage/figures/{name}.png",
    },
    out_args="--table {output.table} --out {output.figure}",
)
st_analysis_rule(
    "storage_table",
    "Table 5 (tables/{name}.csv), the published statement beside.",
    lib=("analysis", "layout"),
    names=ST_TABLES,
    output=["results/storage/tables/{name}.csv"],
    out_args="--out {output}",
)


rule storage_claims:
    input:
        analysis_image_input(),
        code=study_code("storage", "claims", "analysis", "layout"),
        measurements=ST_OUT["measurements"],
        limits=ST_OUT["limits"],
        published=ST_PUBLISHED,
    output:
        ST_OUT["claims"],
    log:
        "results/storage/log/claims.log",
    benchmark:
        bench_log("storage", "storage_claims")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("storage"),
    shell:
        "python3 -m studies.storage.claims --config {params.cfg} --measurements {input.measurements}"
        " --limits {input.limits} --published {input.published} --out {output} > {log} 2>&1"


rule storage_kick:
    input:
        ST_KICK,


rule storage:
    input:
        ST_OUT["claims"],
        ST_OUT["limits"],
        ST_OUT["summary"],
        [ST_OUT[n] for n in ST_FIGURES],
        [ST_OUT[f"{n}_table"] for n in ST_TABLES],
