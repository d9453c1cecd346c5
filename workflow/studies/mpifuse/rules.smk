# Paper 001 (mpifuse): the rules. The study's declaration (parameters, paths, report entry,
# helper functions) is study.smk; the Snakefile includes this file, which includes it.


include: "study.smk"


rule mpifuse_build_fs:
    output:
        "systems/mpifuse/build/libmpifuse.so",
    log:
        "results/mpifuse/log/build_fs.log",
    shell:
        "make -C systems/mpifuse > {log} 2>&1"


rule mpifuse_build_kpassthrough:
    """Kernel FUSE passthrough (ours, beyond the paper): the speed benchmark's kpassthrough variant."""
    output:
        "systems/kpassthrough/build/kpassthrough",
    log:
        "results/mpifuse/log/build_kpassthrough.log",
    shell:
        "make -C systems/kpassthrough > {log} 2>&1"


rule mpifuse_build_homefs:
    output:
        "systems/homefs/build/nfsfuse",
    log:
        "results/mpifuse/log/build_homefs.log",
    shell:
        "make -C systems/homefs > {log} 2>&1"


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
        cfg=lambda wc: study_json("mpifuse"),
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


rule mpifuse_table:
    """Table I and the Section VII ratios (tables/{name}.csv), published values beside."""
    input:
        analysis_image_input(),
        code=f"{MF_DIR}/{{name}}.py",
        lib=study_code("mpifuse", "analysis", "layout"),
        measurements=MF_OUT["measurements"],
        published=MF_PUBLISHED,
    output:
        "results/mpifuse/tables/{name}.csv",
    log:
        "results/mpifuse/log/{name}.log",
    benchmark:
        bench_log("mpifuse", "mpifuse_{name}")
    wildcard_constraints:
        name="table1|ratios|variants",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("mpifuse"),
    shell:
        "python3 -m studies.mpifuse.{wildcards.name} --config {params.cfg} --measurements {input.measurements}"
        " --published {input.published} --out {output} > {log} 2>&1"


rule mpifuse_figure:
    """Figures 3, 4 and 5 (figures/{name}.png) and the data each one draws (tables/{name}.csv)."""
    input:
        analysis_image_input(),
        code=f"{MF_DIR}/{{name}}.py",
        lib=study_code("mpifuse", "analysis", "layout", "plotting"),
        measurements=MF_OUT["measurements"],
        published=MF_PUBLISHED,
    output:
        table="results/mpifuse/tables/{name}.csv",
        figure="results/mpifuse/figures/{name}.png",
    log:
        "results/mpifuse/log/{name}.log",
    benchmark:
        bench_log("mpifuse", "mpifuse_{name}")
    wildcard_constraints:
        name="figure3|figure4|figure5",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("mpifuse"),
    shell:
        "python3 -m studies.mpifuse.{wildcards.name} --config {params.cfg} --measurements {input.measurements}"
        " --published {input.published} --table {output.table} --out {output.figure} > {log} 2>&1"


rule mpifuse_claims:
    input:
        analysis_image_input(),
        code=study_code("mpifuse", "claims", "analysis", "layout"),
        measurements=MF_OUT["measurements"],
        published=MF_PUBLISHED,
    output:
        MF_OUT["claims"],
    log:
        "results/mpifuse/log/claims.log",
    benchmark:
        bench_log("mpifuse", "mpifuse_claims")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: study_json("mpifuse"),
    shell:
        "python3 -m studies.mpifuse.claims --config {params.cfg} --measurements {input.measurements}"
        " --published {input.published} --out {output} > {log} 2>&1"


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
        + ["tools/fuseceiling/ceiling.py", "tools/fuseceiling/fuseceiling.c"],
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
        cfg=lambda wc: study_json("mpifuse"),
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
