# Paper 001 (mpifuse): the rules. The study's declaration (parameters, paths, report entry,
# helper functions) is study.smk; the Snakefile includes this file, which includes it.


include: "study.smk"


# the systems this study builds locally (an image-based run has them in its image): rule, output, make -C
MF_BUILDS = (
    ("mpifuse_build_fs", "systems/mpifuse/build/libmpifuse.so", "systems/mpifuse", "build_fs"),
    # kernel FUSE passthrough (ours, beyond the paper): the kpassthrough variant of the FUSE speed
    # benchmark (the study that uses these file systems: provide_systems, study.smk)
    ("mpifuse_build_kpassthrough", "systems/kpassthrough/build/kpassthrough", "systems/kpassthrough",
     "build_kpassthrough"),
    ("mpifuse_build_homefs", "systems/homefs/build/nfsfuse", "systems/homefs", "build_homefs"),
)


def _mf_build_rule(name, target, directory, log_name):
    """One build rule. A function, not a bare loop: Snakemake evaluates a rule's shell expression
    again when its job runs, when a loop variable would hold the last build's directory."""

    rule:
        name:
            name
        output:
            target,
        log:
            f"results/mpifuse/log/{log_name}.log",
        shell:
            f"make -C {directory} > {{log}} 2>&1"


for _build in MF_BUILDS:
    _mf_build_rule(*_build)


rule mpifuse_run:
    input:
        mf_system_inputs,
        code=study_code("mpifuse", "run", "layout") + ["systems/mpifuse/python/runkit.py"],
    output:
        mf_raw_out(MF["variants"]),
    log:
        mf_layout.run_log("{source}", "{nodes}", "{size}", "{rep}"),
    benchmark:
        mf_run_bench("{source}", "{nodes}", "{size}", "{rep}")
    wildcard_constraints:
        source="home|scratch",
        nodes=r"[0-9]+",
        size=r"[0-9.]+[KMGT]?i?B",
        rep=r"[0-9]+",
    resources:
        **n_plus_1_resources(lambda wc: int(wc.nodes)),
    params:
        launch=lambda wc: mpi_launch(int(wc.nodes) + 1),
        wrap=lambda wc: mf_homefs_wrap(wc.source, int(wc.nodes)),
        exec=system_exec("mpifuse"),
        cfg=lambda wc: run_json("mpifuse"),
        mpi_env=MPI_ENV,
        launcher_kind=LAUNCHER,
    # the run contract (repro.runner): every rank runs read_scaling; after the launcher, the same
    # arguments with --after $rc clean up and record each use case it did not finish, saying why
    shell:
        "({params.mpi_env}; tag=rmf-$$-$RANDOM; rc=0;"
        " {params.wrap} {params.launch} {params.exec} python3 -m studies.mpifuse.run read_scaling"
        " --config {params.cfg} --params '{{\"source\":\"{wildcards.source}\",\"nodes\":{wildcards.nodes},"
        "\"size\":\"{wildcards.size}\",\"launcher\":\"{params.launcher_kind}\"}}'"
        " --rep {wildcards.rep} --tag $tag --out {output} || rc=$?;"
        " {params.exec} python3 -m studies.mpifuse.run read_scaling"
        " --config {params.cfg} --params '{{\"source\":\"{wildcards.source}\",\"nodes\":{wildcards.nodes},"
        "\"size\":\"{wildcards.size}\",\"launcher\":\"{params.launcher_kind}\"}}'"
        " --rep {wildcards.rep} --tag $tag --out {output} --after $rc --log {log};"
        " exit $rc) > {log} 2>&1"


# The tidy table (every configuration: ok, failed, or not run), the summary and the bytes read from
# the source, from the raw files only; Table I and the Section VII ratios (tables/{name}.csv, published
# values beside), Figures 3, 4 and 5 (figures/{name}.png and the data each one draws, tables/{name}.csv),
# the claims (claims.csv). The engine's analysis_rule gives each its log, benchmark, image and resources.
MF_READS = {"measurements": MF_OUT["measurements"], "published": MF_PUBLISHED}
MF_READ_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "mpifuse", "mpifuse_aggregate", script="aggregate", lib=("analysis", "layout"), raw=mf_raw_inputs,
    output={k: MF_OUT[k] for k in ("measurements", "summary", "bytes")},
    args="--measurements {output.measurements} --summary {output.summary} --bytes {output.bytes}",
)
analysis_rule(
    "mpifuse", "mpifuse_table", script="{name}", names=tuple(MF_STUDY.tables), lib=("analysis", "layout"),
    inputs=MF_READS, output={"out": MF_STUDY.table("{name}")}, args=MF_READ_ARGS + " --out {output.out}",
)
analysis_rule(
    "mpifuse", "mpifuse_figure", script="{name}", names=tuple(MF_STUDY.figures),
    lib=("analysis", "layout", "plotting"), inputs=MF_READS,
    output={"table": MF_STUDY.table("{name}"), "figure": MF_STUDY.figure("{name}")},
    args=MF_READ_ARGS + " --table {output.table} --out {output.figure}",
)
analysis_rule(
    "mpifuse", "mpifuse_claims", script="claims", lib=("analysis", "layout", "declaration"), inputs=MF_READS,
    output={"out": MF_OUT["claims"]}, args=MF_READ_ARGS + " --out {output.out}",
)
