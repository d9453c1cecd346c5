# Paper 004, Section 2.4.2: the Montage and BLAST many-task workflows on MemFS,
# on the locality-based design (our re-implementation of AMFS's policy) and on
# a local-disk baseline, scaled up (tasks per node) and out (nodes).
# Table 2.3, Figures 2.7, 2.8, 2.9. Code: systems/mtc-workflows/ (generators,
# DAGs, MTC scheduler), on the shared launcher systems/mtc/ (agents in network
# namespaces locally, srun in the n+1 allocation on Slurm).
#
#   ./repro snakemake memfs_workflows           # the whole matrix + tables, figures, claims
#   ./repro snakemake memfs_workflows_kick      # one tiny run (Montage, locality design)


rule memfs_wf_inputs:
    """Synthetic inputs: the Montage sky or the BLAST database and queries."""
    input:
        code=MWF_CODE,
    output:
        "results/memfs/wf_inputs/{app}/manifest.json",
    log:
        "results/memfs/log/wf_inputs/{app}.log",
    wildcard_constraints:
        app="montage|blast",
    resources:
        runtime=120,
        mem_mb=4000,
    params:
        args=lambda wc: mwf_input_args(wc.app),
    shell:
        "python3 -m mtcwf.gen_{wildcards.app} --out results/memfs/wf_inputs/{wildcards.app}"
        " {params.args} > {log} 2>&1"


MWF_JOB_KEYS = ("launcher", "network", "memfs_opts", "memcached_mb", "task_timeout_s")


def mwf_run_params(params, cfg=None, keys=MWF_JOB_KEYS):
    """The params of a workflow run job (memfs_wf_run, memfs_wf_kick_run, memfs_wf_memlimit_run) for the
    run contract (wf_run.py): run -- the --params JSON, ``params(wildcards)``; cfg -- the --config, the
    ``keys`` of memfs.workflows' run section (``cfg``: this instead); image -- what --input adds where the
    agents run in the memfs image (image=SIF); mpi_env."""
    cfg = {k: MWF_RUN[k] for k in keys} if cfg is None else cfg
    return {
        "run": lambda wc: shlex.quote(json.dumps(params(wc))),
        "cfg": shlex.quote(json.dumps(cfg, sort_keys=True)),
        "image": (
            f"image={sif('memfs')}"
            if in_image("memfs")
            else ""
        ),
        "mpi_env": MPI_ENV,
    }


rule memfs_wf_run:
    """One run: a workflow on one design, n system nodes (+ the driver), k tasks per node."""
    input:
        system_image_input("memfs"),
        manifest="results/memfs/wf_inputs/{app}/manifest.json",
        code=MWF_RUN_CODE,
    output:
        MWF_RAW,
    log:
        "results/memfs/log/workflow~{app}/design~{design}/nodes~{n}/tasks_per_node~{k}/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_wf_run/workflow~{app},design~{design},nodes~{n},tasks_per_node~{k},rep~{rep}.tsv"
    wildcard_constraints:
        app="montage|blast",
        design="memfs|locality|local-disk",
        n=r"\d+",
        k=r"\d+",
        rep=r"\d+",
    resources:
        **n_plus_1_resources(
            lambda wc: int(wc.n),
            runtime=MWF["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        **mwf_run_params(
            lambda wc: {"workflow": wc.app, "design": wc.design, "nodes": int(wc.n), "tasks_per_node": int(wc.k)}
        ),
    # the run contract (repro.runner): the experiment is the workflow, --params the record's params
    shell:
        "({params.mpi_env}; python3 -m studies.memfs.wf_run workflow_{wildcards.app} --config {params.cfg}"
        " --params {params.run} --rep {wildcards.rep} --input manifest={input.manifest} {params.image}"
        " --out {output}) > {log} 2>&1"


rule memfs_wf_expected:
    """The full list of expected raw files (aggregation shows missing ones as not-run)."""
    output:
        MEMFS_OUT["wf_expected"],
    log:
        "results/memfs/log/workflows_expected.log",
    params:
        paths=lambda wc: mwf_expected(),
    container:
        ANALYSIS_IMAGE
    shell:
        "printf '%s\\n' {params.paths:q} > {output} 2> {log}"


# The analysis (engine: analysis_rule): the tidy table and per-configuration summary from the raw
# files (given only the keys that decide which runs exist, mwf_run_cfg), Table 2.3, the claims;
# Figures 2.7 (vertical), 2.8 (horizontal), 2.9 (aggregate memory) (memfs_figure_rule, study.smk).
MWF_READS = {"measurements": MEMFS_OUT["measurements_workflows"], "published": MWF_PUBLISHED}
analysis_rule(
    "memfs", "memfs_wf_tidy", script="wf_tidy", lib=("layout",), raw=mwf_raw_inputs,
    inputs={"expected": MEMFS_OUT["wf_expected"]},
    output={"measurements": MEMFS_OUT["measurements_workflows"], "summary": MEMFS_OUT["wf_summary"]},
    args="--expected {input.expected} --out {output.measurements} --summary {output.summary}",
    cfg=mwf_run_cfg, log="results/memfs/log/workflows_tidy.log",
)
analysis_rule(
    "memfs", "memfs_wf_table23", script="wf_table2_3", lib=("wf_common",), inputs=MWF_READS,
    output={"table": MEMFS_OUT["table23"]},
    args="--measurements {input.measurements} --published {input.published} --out {output.table}",
    cfg=mwf_cfg, log="results/memfs/log/workflows_table23.log", bench="memfs_wf_table23",
)
memfs_figure_rule(
    "memfs_wf_figure", "wf_figure2_", "7|8|9", lib=("wf_common",), cfg=mwf_cfg,
    measurements=MEMFS_OUT["measurements_workflows"], log_prefix="workflows_",
)
analysis_rule(
    "memfs", "memfs_wf_claims", script="wf_claims", lib=("wf_common",),
    inputs={**MWF_READS, "table23": MEMFS_OUT["table23"]}, output={"claims": MEMFS_OUT["claims_workflows"]},
    args="--measurements {input.measurements} --published {input.published} --table23 {input.table23}"
    " --out {output.claims}",
    cfg=mwf_cfg, log="results/memfs/log/workflows_claims.log",
)


rule memfs_workflows:
    """Section 2.4.2: every run, Table 2.3, the figures and claims (the declaration's workflows and
    montage-memlimit parts)."""
    input:
        memfs_declaration.part_outputs(set(MEMFS_PARTS) & {"workflows", "memlimit"}),


rule memfs_wf_kick_inputs:
    """Tiny inputs of the kick-the-tires run: a 3 x 3 mosaic of 128^2 tiles."""
    input:
        code=MWF_CODE,
    output:
        MEMFS_OUT["wf_kick_inputs"],
    log:
        "results/memfs/log/kick_workflows_inputs.log",
    params:
        out=os.path.dirname(MEMFS_OUT["wf_kick_inputs"]),
    shell:
        "python3 -m mtcwf.gen_montage --out {params.out} --grid 3 --npix 128 > {log} 2>&1"


rule memfs_wf_kick_run:
    """One tiny run: Montage on the locality design, 2 nodes x 1 task (about 10 s)."""
    input:
        system_image_input("memfs"),
        manifest=MEMFS_OUT["wf_kick_inputs"],
        code=MWF_RUN_CODE,
    output:
        MEMFS_OUT["wf_kick"],
    log:
        "results/memfs/log/kick_workflows_run.log",
    resources:
        **n_plus_1_resources(2, runtime=10, mem_mb=config["cluster"]["mem_mb_per_node"]),
    params:
        **mwf_run_params(
            lambda wc: {"workflow": "montage", "design": "locality", "nodes": 2, "tasks_per_node": 1},
            cfg={"launcher": MWF["launcher"], "network": MWF["network"], "memcached_mb": 128, "task_timeout_s": 120},
        ),
    shell:
        "({params.mpi_env}; python3 -m studies.memfs.wf_run workflow_montage --config {params.cfg}"
        " --params {params.run} --rep 0 --input manifest={input.manifest} {params.image}"
        " --out {output}) > {log} 2>&1"


rule memfs_workflows_kick:
    """Kick the tires: one tiny Montage run through the real tools on the shared launcher."""
    input:
        MEMFS_OUT["wf_kick"],


rule memfs_workflows_runs:
    """Only the runs (every expected raw file), no analysis."""
    input:
        mwf_expected() if MWF_ON else [],




rule memfs_measurements:
    input:
        analysis_image_input(),
        code="workflow/lib/repro/tidy_concat.py",
        parts=MEMFS_MEASUREMENT_PARTS,
    output:
        MEMFS_OUT["measurements"],
    log:
        "results/memfs/log/measurements.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m repro.tidy_concat --out {output} {input.parts} > {log} 2>&1"


# ---------------------------------------------------------------- montage-memlimit
# 004 Section 2.4.2: AMFS's scheduler node runs out of memory on Montage 12x12 while MemFS
# completes -- the mechanism at this config's scale: every node's memcached gets the same
# limit (-m <MB> -M, errors instead of evictions), Montage runs on both designs at each limit
# of memlimit.limits_mb and once at memcached_mb (the unlimited reference). A run that fails
# is a result here: the rule records its exit status and the run's failure record (with the
# stores' state at failure, wf_memlimit_run.py) is what the claims read.
#
#   ./repro snakemake memfs_wf_memlimit
MWF_ML_RAW = (
    "results/memfs/raw/experiment~montage-memlimit/design~{design}/memcached_mb~{mb}/rep~0.json"
)
MWF_ML_DONE = (
    "results/memfs/memlimit/design~{design}/memcached_mb~{mb}.rc"
)
if MWF_ML_ON and int(MWF_ML["claim_limit_mb"]) not in [int(x) for x in MWF_ML["limits_mb"]]:
    raise ValueError(
        "config memfs.workflows.memlimit.claim_limit_mb must be one of memfs.workflows.memlimit.limits_mb"
        f" (got {MWF_ML['claim_limit_mb']} not in {MWF_ML['limits_mb']})"
    )


def mwf_ml_limits():
    return sorted({int(x) for x in MWF_ML.get("limits_mb", [])} | {int(MWF["memcached_mb"])})


rule memfs_wf_memlimit_run:
    """One Montage run with every node's memcached limited to {mb} MB; its exit status is the output."""
    input:
        system_image_input("memfs"),
        manifest="results/memfs/wf_inputs/montage/manifest.json",
        code=MWF_RUN_CODE,
        wrapper=study_code("memfs", "wf_memlimit_run"),
    output:
        MWF_ML_DONE,
    log:
        "results/memfs/log/memlimit/design~{design}/memcached_mb~{mb}.log",
    wildcard_constraints:
        design="memfs|locality",
        mb=r"\d+",
    resources:
        **n_plus_1_resources(
            lambda wc: int(MWF_ML["nodes"]),
            runtime=MWF["runtime_minutes"],
            mem_mb=config["cluster"]["mem_mb_per_node"],
        ),
    params:
        raw=lambda wc: MWF_ML_RAW.format(design=wc.design, mb=wc.mb),
        # the limit is the run's memcached_mb (the record's params do not name it: its path does)
        **mwf_run_params(
            lambda wc: {"workflow": "montage", "design": wc.design, "nodes": int(MWF_ML.get("nodes", 2)),
                        "tasks_per_node": int(MWF_ML.get("tasks_per_node", 1)), "memcached_mb": int(wc.mb)},
            keys=("launcher", "network", "memfs_opts", "task_timeout_s"),
        ),
    # the raw file is not the rule's output (its exit status is): an earlier run's files go first
    shell:
        "rm -f {params.raw} $(dirname {params.raw} | sed 's#/raw/#/failed/#')/rep~0.json;"
        " ({params.mpi_env}; python3 -m studies.memfs.wf_memlimit_run workflow_montage --config {params.cfg}"
        " --params {params.run} --rep 0 --input manifest={input.manifest} {params.image}"
        " --out {params.raw}) > {log} 2>&1"
        " && rc=0 || rc=$?; echo $rc > {output}"


rule memfs_wf_memlimit:
    """The per-run table and the claims M1 (scheduler node out of memory where MemFS completes), M2."""
    input:
        analysis_image_input(),
        code=study_code("memfs", "wf_memlimit"),
        done=[
            MWF_ML_DONE.format(design=d, mb=mb)
            for d in ("memfs", "locality")
            for mb in mwf_ml_limits()
        ]
        if MWF_ML_ON
        else [],
    output:
        **memfs_outputs(table="memlimit_runs", claims="claims_memlimit", raws="memlimit_raws"),
    log:
        "results/memfs/log/workflows_memlimit.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        raws=[
            MWF_ML_RAW.format(design=d, mb=mb)
            for d in ("memfs", "locality")
            for mb in mwf_ml_limits()
        ],
        limit=MWF_ML.get("claim_limit_mb", 0),
        ref=MWF["memcached_mb"],
        nodes=MWF_ML.get("nodes", 2),
    shell:
        "printf '%s\\n' {params.raws:q} > {output.raws};"
        f" {study_module('memfs', 'wf_memlimit')} --raws {{output.raws}} --limit-mb {{params.limit}}"
        " --ref-mb {params.ref} --nodes {params.nodes} --table {output.table} --out {output.claims} > {log} 2>&1"
