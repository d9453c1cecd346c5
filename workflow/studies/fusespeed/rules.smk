# The FUSE speed benchmark (not a paper experiment; issues 13 and 22): how close the mpifuse file
# systems, kernel FUSE passthrough and the FUSE ceiling run to this machine's limits.
#
#   ./repro snakemake fusespeed --profile profiles/local          # the benchmark and its report
#   snakemake fusespeed --profile profiles/slurm --configfile config/config.yaml
#
# One job of max(fusespeed.nodes)+1 ranks (rank 0 writes the files, ranks 1..k read through the file
# systems, in-process through libmpifuse). The file systems are mpifuse's: the declaration says so
# (uses), and mpifuse provides them through the engine (workflow/rules/uses.smk: what must be built,
# the launcher's wrapper, the stand-ins, the published values and its run section, which the job gets
# beside its own as --uses mpifuse=, so a file system runs here with the options the mpifuse study gives
# it; the job reads them through systems/mpifuse/python/runkit.py, nothing of mpifuse's folder).
# Nothing here reads mpifuse's rules, and the Snakefile's include order does not matter. Raw file:
#   results/fusespeed/raw/source~S/size~Z/rep~0.json

from studies.fusespeed import declaration as fs_declaration

FS = config["fusespeed"]
FS_STUDY = fs_declaration.STUDY
FS_OUT = {k: FS_STUDY.out(k) for k in FS_STUDY.outputs}
# the raw file: its path follows the configuration (source, size)
FS_RAW = f"{FS_STUDY.results}/raw/source~{FS['source']}/size~{FS['size']}/rep~0.json"
FS_NODES = max(FS["nodes"])
FS_SYSTEMS = used_systems(FS_STUDY)  # the file systems it runs (mpifuse's), looked up when planned


def fs_kpt_input(wildcards):
    """Kernel FUSE passthrough's binary, built here for local runs (the file systems' build rules); in
    an image-based (cluster) run a missing binary or a container without CAP_SYS_ADMIN makes the
    variant a recorded failure, never a number."""
    if "kpassthrough" in FS["variants"] and FS_SYSTEMS.value("local_build"):
        return ["systems/kpassthrough/build/kpassthrough"]
    return []


register_study(
    FS_STUDY,
    enabled=enabled("fusespeed"),
    # the source's stand-in (the emulated home or local scratch) and the n+1 ranks on one host
    stand_ins=FS_SYSTEMS.stand_ins(lambda s: s.startswith(FS["source"] + ":") or s.startswith("nodes:")),
    benchmarks=[bench_log("fusespeed", r) for r in ("fusespeed_run", "fusespeed_report", "fusespeed_claims")],
)


rule fusespeed_run:
    input:
        FS_SYSTEMS.fact("inputs"),
        kpt=fs_kpt_input,
        code=lambda wc: study_code("fusespeed", "run", "kpt")
        + FS_SYSTEMS.value("code")
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
        wrap=lambda wc: FS_SYSTEMS.call("wrap", FS["source"], FS_NODES),
        exec=system_exec(FS_STUDY.images[0]),  # the file systems' image (the declaration's images)
        cfg=lambda wc: run_json("fusespeed"),
        systems=FS_SYSTEMS.fact("config"),
        mpi_env=MPI_ENV,
    # the run contract (repro.runner): mpifuse's run section as --uses mpifuse=; after the launcher, the
    # same arguments with --after $rc clean up and record a job that ended without a record, saying why
    shell:
        "({params.mpi_env}; tag=rmf-$$-$RANDOM; rc=0;"
        " {params.wrap} {params.launch} {params.exec} python3 -m studies.fusespeed.run speed --config {params.cfg}"
        " --uses mpifuse={params.systems} --tag $tag --out {output} || rc=$?;"
        " {params.exec} python3 -m studies.fusespeed.run speed --config {params.cfg}"
        " --uses mpifuse={params.systems} --tag $tag --out {output} --after $rc --log {log};"
        " exit $rc) > {log} 2>&1"


# the report: every number recomputed from the raw file; the paper's passthrough cost from the
# published values of the study whose file systems it runs (paper 001's Table I). The claims: issues
# 13's and 22's targets (ours), met or not, from the same raw file through the report's functions
analysis_rule(
    "fusespeed", "fusespeed_report", script="report",
    inputs={"raw": FS_RAW, "published": FS_SYSTEMS.fact("published")},
    output={k: FS_OUT[k] for k in ("table", "report", "issue13", "issue22")},
    args="--raw {input.raw} --published {input.published} --table {output.table} --report {output.report}"
    " --issue13 {output.issue13} --issue22 {output.issue22}",
)
analysis_rule(
    "fusespeed", "fusespeed_claims", script="claims", lib=("report", "declaration"), inputs={"raw": FS_RAW},
    output={"out": FS_OUT["claims"]}, args="--raw {input.raw} --out {output.out}",
)
