# The FUSE speed benchmark (not a paper experiment; issues 13 and 22): how close the mpifuse file
# systems, kernel FUSE passthrough and the FUSE ceiling run to this machine's limits.
#
#   ./repro snakemake fusespeed --profile profiles/local          # the benchmark and its report
#   snakemake fusespeed --profile profiles/slurm --configfile config/config.yaml
#
# One job of max(fusespeed.nodes)+1 ranks (rank 0 writes the files, ranks 1..k read through the file
# systems, in-process through libmpifuse). The file systems, sources and the build rules are mpifuse's
# (included before this file): the job gets mpifuse's run section beside its own (--mpifuse), so a
# file system runs here with the options the mpifuse study gives it. Raw file:
#   results/fusespeed/raw/source~S/size~Z/rep~0.json

from studies.fusespeed import declaration as fs_declaration

FS = config["fusespeed"]
FS_STUDY = fs_declaration.STUDY
FS_OUT = {k: FS_STUDY.out(k) for k in FS_STUDY.outputs}
# the raw file: its path follows the configuration (source, size)
FS_RAW = f"{FS_STUDY.results}/raw/source~{FS['source']}/size~{FS['size']}/rep~0.json"
FS_NODES = max(FS["nodes"])

register_study(
    FS_STUDY,
    enabled=enabled("fusespeed"),
    # the source's stand-in (mpifuse's emulated home or local scratch) and the n+1 ranks on one host
    stand_ins=[s for s in MF_STAND_INS if s.startswith(FS["source"] + ":") or s.startswith("nodes:")],
    benchmarks=[bench_log("fusespeed", r) for r in ("fusespeed_run", "fusespeed_report", "fusespeed_claims")],
)


rule fusespeed_run:
    input:
        mf_system_inputs,
        # built here for local runs (mpifuse's build rule); in an image-based (cluster) run a missing
        # binary or a container without CAP_SYS_ADMIN makes the variant a recorded failure, never a number
        kpt=(
            ["systems/kpassthrough/build/kpassthrough"]
            if "kpassthrough" in FS["variants"] and MF_LOCAL_BUILD
            else []
        ),
        code=study_code("fusespeed", "run", "kpt")
        + study_code("mpifuse", "run", "layout")
        + ["systems/kpassthrough/hostinfo.py", "tools/fuseceiling/ceiling.py", "tools/fuseceiling/fuseceiling.c"],
    output:
        FS_RAW,
    log:
        "results/fusespeed/log/run.log",
    benchmark:
        bench_log("fusespeed", "fusespeed_run")
    resources:
        **n_plus_1_resources(FS_NODES),
    params:
        launch=mpi_launch(FS_NODES + 1),
        wrap=mf_homefs_wrap(FS["source"], FS_NODES),
        exec=system_exec("mpifuse"),
        cfg=lambda wc: run_json("fusespeed"),
        mpifuse=lambda wc: run_json("mpifuse"),
        mpi_env=MPI_ENV,
    shell:
        "({params.mpi_env}; tag=rmf-$$-$RANDOM;"
        " {params.wrap} {params.launch} {params.exec} python3 -m studies.fusespeed.run --config {params.cfg}"
        " --mpifuse {params.mpifuse} --tag $tag --out {output}) > {log} 2>&1"


# the report: every number recomputed from the raw file; the paper's passthrough cost from mpifuse's
# published values (paper 001's Table I). The claims: issues 13's and 22's targets (ours), met or
# not, from the same raw file through the report's functions
analysis_rule(
    "fusespeed", "fusespeed_report", script="report",
    inputs={"raw": FS_RAW, "published": MF_PUBLISHED},
    output={k: FS_OUT[k] for k in ("table", "report", "issue13", "issue22")},
    args="--raw {input.raw} --published {input.published} --table {output.table} --report {output.report}"
    " --issue13 {output.issue13} --issue22 {output.issue22}",
)
analysis_rule(
    "fusespeed", "fusespeed_claims", script="claims", lib=("report", "declaration"), inputs={"raw": FS_RAW},
    output={"out": FS_OUT["claims"]}, args="--raw {input.raw} --out {output.out}",
)
