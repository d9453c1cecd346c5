# Paper 001 (mpifuse): the rules. The study's declaration (parameters, paths, report entry,
# helper functions) is study.smk; the Snakefile includes this file, which includes it.


include: "study.smk"


# the systems this study builds locally (an image-based run has them in its image): rule, output, make -C
MF_BUILDS = (
    ("mpifuse_build_fs", "systems/mpifuse/build/libmpifuse.so", "systems/mpifuse", "build_fs"),
    # kernel FUSE passthrough (ours, beyond the paper): the speed benchmark's kpassthrough variant
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
        code=study_code("mpifuse", "run", "layout"),
    output:
        mf_raw_out(MF["variants"]),
    log:
        "results/mpifuse/log/run/source~{source}/nodes~{nodes}/size~{size}/rep~{rep}.log",
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
    shell:
        "({params.mpi_env}; tag=rmf-$$-$RANDOM; rc=0;"
        " {params.wrap} {params.launch} {params.exec} python3 -m studies.mpifuse.run --config {params.cfg}"
        " --source {wildcards.source} --nodes {wildcards.nodes} --size {wildcards.size} --rep {wildcards.rep}"
        " --tag $tag --launcher {params.launcher_kind} || rc=$?;"
        " {params.exec} python3 -m studies.mpifuse.run --finish $rc --config {params.cfg}"
        " --source {wildcards.source} --nodes {wildcards.nodes} --size {wildcards.size} --rep {wildcards.rep}"
        " --tag $tag --log {log};"
        " exit $rc) > {log} 2>&1"


rule mpifuse_aggregate:
    input:
        analysis_image_input(),
        mf_raw_inputs,
        code=study_code("mpifuse", "aggregate", "analysis", "layout"),
    output:
        measurements=MF_OUT["measurements"],
        summary=MF_OUT["summary"],
        bytes=MF_OUT["bytes"],
    log:
        "results/mpifuse/log/aggregate.log",
    benchmark:
        bench_log("mpifuse", "mpifuse_aggregate")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("mpifuse"),
    shell:
        "python3 -m studies.mpifuse.aggregate --config {params.cfg} --measurements {output.measurements}"
        " --summary {output.summary} --bytes {output.bytes} > {log} 2>&1"


# The analysis scripts that read the tidy table and the published values: Table I and the Section
# VII ratios (tables/{name}.csv, published values beside), Figures 3, 4 and 5 (figures/{name}.png and
# the data each one draws, tables/{name}.csv), the claims (claims.csv). Per rule: the script (a
# {name} wildcard or one script), the modules it reads, outputs, its arguments for them, the log name.
MF_ANALYSIS = (
    ("mpifuse_table", "table1|ratios|variants", ("analysis", "layout"),
     {"out": "results/mpifuse/tables/{name}.csv"}, "--out {output.out}", "{name}"),
    ("mpifuse_figure", "figure3|figure4|figure5", ("analysis", "layout", "plotting"),
     {"table": "results/mpifuse/tables/{name}.csv", "figure": "results/mpifuse/figures/{name}.png"},
     "--table {output.table} --out {output.figure}", "{name}"),
    ("mpifuse_claims", None, ("analysis", "layout"), {"out": MF_OUT["claims"]}, "--out {output.out}", "claims"),
)


def _mf_analysis_rule(_name, _names, _lib, _outputs, _args, _script):
    """One analysis rule, made in a function for the same reason as _mf_build_rule (its shell
    expression names this call's script and arguments, not the loop's last)."""

    rule:
        name:
            _name
        input:
            analysis_image_input(),
            code=f"{MF_DIR}/{_script}.py",
            lib=study_code("mpifuse", *_lib),
            measurements=MF_OUT["measurements"],
            published=MF_PUBLISHED,
        output:
            **_outputs,
        log:
            f"results/mpifuse/log/{_script}.log",
        benchmark:
            bench_log("mpifuse", f"mpifuse_{_script}")
        wildcard_constraints:
            **({"name": _names} if _names else {}),
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            cfg=lambda wc: study_json("mpifuse"),
        shell:
            (
                "python3 -m studies.mpifuse."
                + ("{wildcards.name}" if _names else _script)
                + " --config {params.cfg} --measurements {input.measurements}"
                " --published {input.published} "
                + _args
                + " > {log} 2>&1"
            )


for _analysis in MF_ANALYSIS:
    _mf_analysis_rule(*_analysis)


# ---------------------------------------------------------------------------
# Speed benchmark (not a paper experiment): FUSE overhead, OSR n=1 vs native,
# bytes from the source as n grows. One job of max(speed.nodes)+1 ranks.
# ---------------------------------------------------------------------------
rule mpifuse_speed:
    input:
        mf_system_inputs,
        # built here for local runs; in an image-based (cluster) run a missing binary or a container
        # without CAP_SYS_ADMIN makes the variant a recorded failure, never a number
        kpt=(
            ["systems/kpassthrough/build/kpassthrough"]
            if "kpassthrough" in MF["speed"]["variants"] and MF_LOCAL_BUILD
            else []
        ),
        code=study_code("mpifuse", "speed", "run", "layout", "kpt")
        + ["systems/kpassthrough/hostinfo.py", "tools/fuseceiling/ceiling.py", "tools/fuseceiling/fuseceiling.c"],
    output:
        MF_OUT["speed_raw"],
    log:
        "results/mpifuse/log/speed.log",
    benchmark:
        bench_log("mpifuse", "mpifuse_speed")
    resources:
        **n_plus_1_resources(max(MF["speed"]["nodes"])),
    params:
        launch=mpi_launch(max(MF["speed"]["nodes"]) + 1),
        wrap=mf_homefs_wrap(MF["speed"]["source"], max(MF["speed"]["nodes"])),
        exec=system_exec("mpifuse"),
        cfg=lambda wc: run_json("mpifuse"),
        mpi_env=MPI_ENV,
    shell:
        "({params.mpi_env}; tag=rmf-$$-$RANDOM;"
        " {params.wrap} {params.launch} {params.exec} python3 -m studies.mpifuse.speed --config {params.cfg}"
        " --tag $tag --out {output}) > {log} 2>&1"


rule mpifuse_speed_report:
    input:
        analysis_image_input(),
        code=study_code("mpifuse", "speed_report"),
        raw=MF_OUT["speed_raw"],
        published=MF_PUBLISHED,
    output:
        table=MF_OUT["speed_table"],
        report=MF_OUT["speed_report"],
        issue13=MF_OUT["speed_issue13"],
        issue22=MF_OUT["speed_issue22"],
    log:
        "results/mpifuse/log/speed_report.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m studies.mpifuse.speed_report --raw {input.raw} --published {input.published} --table {output.table}"
        " --report {output.report} --issue13 {output.issue13} --issue22 {output.issue22} > {log} 2>&1"


rule mpifuse_kick:
    input:
        MF_KICK,


rule mpifuse:
    input:
        [
            MF_OUT["speed_table"],
            MF_OUT["speed_report"],
            MF_OUT["speed_issue13"],
            MF_OUT["speed_issue22"],
        ]
        if MF["speed"]["enabled"]
        else [],
        MF_OUT["claims"],
        MF_OUT["table1"],
        MF_OUT["ratios"],
        MF_OUT["variants"],
        MF_OUT["figure3"],
        MF_OUT["figure4"],
        MF_OUT["figure5"],
