# The FUSE speed benchmark (not a paper experiment; issues 13 and 22): how close the mpifuse file
# systems, kernel FUSE passthrough and the FUSE ceiling run to this machine's limits. The file systems
# are mpifuse's: the declaration says so (uses), mpifuse provides them through the engine
# (workflow/rules/uses.smk), looked up when the plan is made; nothing here reads mpifuse's rules.

from studies.fusespeed import declaration as fs_declaration

FS = config["fusespeed"]
FS_STUDY = fs_declaration.STUDY
FS_OUT = {k: FS_STUDY.out(k) for k in FS_STUDY.outputs}
FS_NODES = max(FS["nodes"])
FS_SYSTEMS = used_systems(FS_STUDY)  # the file systems it runs (mpifuse's)


def fs_inputs(wc):
    """mpifuse's file systems built here (or their image), and kernel FUSE passthrough's binary for
    local runs; in an image-based run a missing binary or a container without CAP_SYS_ADMIN makes the
    variant a recorded failure, never a number."""
    kpt = "kpassthrough" in FS["variants"] and FS_SYSTEMS.value("local_build")
    return FS_SYSTEMS.fact("inputs")(wc) + (["systems/kpassthrough/build/kpassthrough"] if kpt else [])


experiment_rule(
    FS_STUDY, "speed", matrix=[{"source": FS["source"], "size": FS["size"], "rep": 0}], input=fs_inputs,
    code=lambda wc: study_code("fusespeed", "kpt") + FS_SYSTEMS.value("code")
    + ["systems/kpassthrough/hostinfo.py", "tools/fuseceiling/ceiling.py", "tools/fuseceiling/fuseceiling.c"],
    resources=n_plus_1_resources(FS_NODES), ranks=FS_NODES + 1, exec=system_exec(FS_STUDY.images[0]),
    wrap=lambda wc: FS_SYSTEMS.call("wrap", FS["source"], FS_NODES), uses={"mpifuse": FS_SYSTEMS.fact("config")},
)
FS_RAW = experiment_expected(FS_STUDY)[0]

register_study(
    FS_STUDY, enabled=enabled("fusespeed"),
    # the source's stand-in (the emulated home or local scratch) and the n+1 ranks on one host
    stand_ins=FS_SYSTEMS.stand_ins(lambda s: s.startswith(FS["source"] + ":") or s.startswith("nodes:")),
)

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
