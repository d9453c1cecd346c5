# Paper 001 (mpifuse): an MPI-based FUSE file system to distribute large files (One-Sided Reading,
# OSR, and a broadcast design) vs the native file systems: Section IV's benchmark, Table I, Figures
# 3-5, the Section VII ratios. What the study is and writes: declaration.py (its experiment's raw path
# too); what the configuration decides: layout.py. README.md: how to run it, at which scale.

from studies.mpifuse import declaration as mf_declaration
from studies.mpifuse import layout as mf_layout

MF = config["mpifuse"]
MF_STUDY = mf_declaration.STUDY
MF_OUT = {k: MF_STUDY.out(k) for k in MF_STUDY.outputs}
MF_PUBLISHED = f"{STUDIES}/mpifuse/published.csv"
MF_LOCAL_BUILD = not in_image("mpifuse")
MF_STAND_INS = mf_layout.stand_ins(MF, config["cluster"]["single_host"])


def mf_system_inputs(wc=None):
    """What the benchmark needs built on this host (inside the image on a cluster)."""
    built = ["systems/mpifuse/build/libmpifuse.so"]
    if MF["home"]["kind"] == "emulated":
        built.append("systems/homefs/build/nfsfuse")
    return system_image_input("mpifuse") + (built if MF_LOCAL_BUILD else [])


def mf_build_rule(name, target, directory, log_name):
    """One build rule (a function, not a loop body: workflow/README.md)."""

    rule:
        name:
            name
        output:
            target,
        log:
            f"results/mpifuse/log/{log_name}.log",
        shell:
            f"make -C {directory} > {{log}} 2>&1"


mf_build_rule("mpifuse_build_fs", "systems/mpifuse/build/libmpifuse.so", "systems/mpifuse", "build_fs")
mf_build_rule("mpifuse_build_homefs", "systems/homefs/build/nfsfuse", "systems/homefs", "build_homefs")
# kernel FUSE passthrough (ours, beyond the paper): the fusespeed study's kpassthrough variant
mf_build_rule("mpifuse_build_kpassthrough", "systems/kpassthrough/build/kpassthrough", "systems/kpassthrough",
              "build_kpassthrough")

# one job = one run: n+1 ranks (rank 0 writes the files, ranks 1..n read through the file systems)
experiment_rule(
    MF_STUDY, "read_scaling", matrix=mf_layout.matrix(MF), each={"variant": MF["variants"]},
    input=mf_system_inputs, code=["systems/mpifuse/python/runkit.py"],
    resources=n_plus_1_resources(lambda wc: int(wc.nodes)), ranks=lambda wc: int(wc.nodes) + 1,
    exec=system_exec("mpifuse"), wrap=lambda wc: mf_layout.homefs_wrap(MF, wc.source, int(wc.nodes)),
    params=lambda wc: {"launcher": LAUNCHER},
)

register_study(MF_STUDY, kick=mf_layout.kick(MF), enabled=enabled("mpifuse"), stand_ins=MF_STAND_INS)

# What a study that runs these file systems gets (its declaration's `uses`; workflow/rules/uses.smk),
# never this file's globals: the inputs to build here, whether they are built here, the launcher's
# wrapper (source, nodes), the stand-ins, the published values, the code and the run section.
provide_systems(
    MF_STUDY, inputs=mf_system_inputs, local_build=MF_LOCAL_BUILD,
    wrap=lambda source, nodes: mf_layout.homefs_wrap(MF, source, nodes), stand_ins=MF_STAND_INS,
    published=MF_PUBLISHED, code=["systems/mpifuse/python/runkit.py"], config=lambda wc: run_json("mpifuse"),
)

# The tidy table, summary and bytes read from the source, from the raw files only; Table I and the
# ratios, Figures 3-5 (with the data each draws), the claims; the published values beside.
MF_READS = {"measurements": MF_OUT["measurements"], "published": MF_PUBLISHED}
MF_READ_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "mpifuse", "mpifuse_aggregate", script="aggregate", lib=("analysis", "layout"),
    raw=experiment_raw(MF_STUDY), output={k: MF_OUT[k] for k in ("measurements", "summary", "bytes")},
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
