# Paper 004 (MemFS), Chapter 2: one study whose parts -- the MTC Envelope (2.4.1: envelope, metadata,
# stripe, threads, limit), the FUSE gap, the Montage/BLAST workflows (2.4.2) and Montage under a memory
# limit -- are experiments of its declaration (declaration.py); what the configuration decides: layout.py.
# README.md: the parts, their targets and the rules below.
import glob as _glob

from studies.memfs import declaration as memfs_declaration
from studies.memfs import layout as memfs_layout

MEMFS = config["memfs"]
MEMFS_STUDY = memfs_declaration.STUDY
MEMFS_OUT = {k: MEMFS_STUDY.out(k) for k in MEMFS_STUDY.outputs}
MEMFS_RUN = repro_config.run_section(MEMFS, repro_config.study_schema("memfs"))
MEMFS_ON = enabled("memfs")
MWF, MWF_RUN = MEMFS["workflows"], MEMFS_RUN["workflows"]
MWF_ML = MWF.get("memlimit") or {}
try:
    if MEMFS_ON:
        memfs_layout.check_networks(MEMFS)
    MWF_ML_RUNS = memfs_layout.memlimit_matrix(MWF)
except memfs_layout.LayoutError as _exc:
    raise WorkflowError(str(_exc)) from None
MEMFS_SITE_IFACES = memfs_layout.site_interfaces(MEMFS) if LAUNCHER == "slurm" else {}
MEMFS_PARTS = ["envelope"] + [p for p, on in (("fuse_gap", MEMFS_ON and MEMFS.get("fuse_gap", {}).get("enabled")),
                                              ("workflows", MWF["enabled"]), ("memlimit", bool(MWF_ML_RUNS))) if on]
MEMFS_NODE_MEM = config["cluster"]["mem_mb_per_node"]
MWF_CODE = sorted(_glob.glob("systems/mtc-workflows/mtcwf/*.py"))
MWF_IMAGE = {"image": lambda wc: sif("memfs") if in_image("memfs") else []}


def memfs_json(obj):
    return shlex.quote(json.dumps(obj, sort_keys=True))


def memfs_run_config(exp):
    return lambda wc: memfs_json(memfs_layout.run_config(MEMFS_RUN, exp, wc.network))


def memfs_how(wc):
    """How an envelope-part run runs (run.py's keys beside the job's fields)."""
    return {"launcher": LAUNCHER, "single_host": int(config["cluster"]["single_host"])} | (
        {"image": sif("memfs")} if in_image("memfs") else {})


for _exp in memfs_layout.SECTION:  # one job = one configuration: the driver on its first node, agents on the others
    experiment_rule(
        MEMFS_STUDY, _exp, matrix=memfs_layout.matrix(MEMFS, _exp), params=memfs_how, mpi_env=True,
        input=system_image_input("memfs") + ([ancient(memfs_layout.SITE_CHECK)] if MEMFS_SITE_IFACES else []),
        code=["tools/common.py"] + [f"tools/{t}/parser.py" for t in ("iozone", "mdtest", "mcbench", "iperf3")]
        + [f"systems/mtc/{m}.py" for m in ("launch", "agent", "netns")],
        resources=n_plus_1_resources(lambda wc: int(wc.nodes), runtime=MEMFS["runtime_minutes"], mem_mb=MEMFS_NODE_MEM),
        run_config=memfs_run_config(_exp),
    )
experiment_rule(  # one node, one task, no MPI (the Slurm executor refuses an "mpi" job of one task)
    MEMFS_STUDY, "fusegap", matrix=memfs_layout.fusegap_matrix(MEMFS) if MEMFS_ON else [], layout=False,
    code=["tools/fuseceiling/ceiling.py", "tools/fuseceiling/transports.py"],
    resources={k: v for k, v in n_plus_1_resources(0, runtime=MEMFS["runtime_minutes"]).items() if k != "mpi"},
    run_config=lambda wc: memfs_json({"memfs": MEMFS_RUN["memfs"], "fuse_gap": MEMFS_RUN.get("fuse_gap", {})}),
)
MWF_RUN_RES = n_plus_1_resources(lambda wc: int(wc.nodes), runtime=MWF["runtime_minutes"], mem_mb=MEMFS_NODE_MEM)
MWF_JOB_KEYS = ("launcher", "network", "memfs_opts", "memcached_mb", "task_timeout_s")
experiment_rule(
    MEMFS_STUDY, "workflow", matrix=memfs_layout.workflow_matrix(MWF), layout=False, code=MWF_CODE, mpi_env=True,
    inputs={"manifest": "results/memfs/wf_inputs/{workflow}/manifest.json", **MWF_IMAGE}, resources=MWF_RUN_RES,
    run_config=lambda wc: memfs_json({k: MWF_RUN[k] for k in MWF_JOB_KEYS}),
)
experiment_rule(  # kick the tires: one tiny Montage run (about 10 s)
    MEMFS_STUDY, "workflow", rulename="memfs_wf_kick_run", matrix=[], output=MEMFS_OUT["wf_kick"], layout=False,
    fixed={"workflow": "montage", "design": "locality", "nodes": 2, "tasks_per_node": 1, "rep": 0},
    code=MWF_CODE, inputs={"manifest": MEMFS_OUT["wf_kick_inputs"], **MWF_IMAGE}, mpi_env=True,
    resources=n_plus_1_resources(2, runtime=10, mem_mb=MEMFS_NODE_MEM),
    run_config=lambda wc: memfs_json({"launcher": MWF["launcher"], "network": MWF["network"], "memcached_mb": 128,
                                      "task_timeout_s": 120}),
)
experiment_rule(  # a failed run is a result: the job's output is its exit status
    MEMFS_STUDY, "memlimit", matrix=MWF_ML_RUNS, fixed={"rep": 0}, status=memfs_layout.MEMLIMIT_STATUS, layout=False,
    code=MWF_CODE + study_code("memfs", "wf_run"), mpi_env=True,
    inputs={"manifest": "results/memfs/wf_inputs/montage/manifest.json", **MWF_IMAGE},
    resources=n_plus_1_resources(lambda wc: int(MWF_ML["nodes"]), runtime=MWF["runtime_minutes"], mem_mb=MEMFS_NODE_MEM),
    params=lambda wc: {"workflow": "montage", "nodes": int(MWF_ML.get("nodes", 2)),
                       "tasks_per_node": int(MWF_ML.get("tasks_per_node", 1))},
    run_config=lambda wc: memfs_json({k: MWF_RUN[k] for k in ("launcher", "network", "memfs_opts", "task_timeout_s")}),
)


rule memfs_site_check:
    input:
        code=study_code("memfs", "site_check"),
    output:
        memfs_layout.SITE_CHECK,
    log:
        "results/memfs/log/site_check.log",
    resources:
        **n_plus_1_resources(memfs_layout.site_check_nodes(MEMFS) - 1, runtime=10),
    params:
        cfg=memfs_json({"interfaces": MEMFS_SITE_IFACES}),
    shell:
        f"{study_module('memfs', 'site_check')} --config {{params.cfg}} --out {{output}} 2> {{log}}"
        " || {{ cat {log} >&2; exit 1; }}"


rule memfs_wf_inputs:
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
        args=lambda wc: memfs_layout.workflow_input_args(MWF, wc.app),
    shell:
        "python3 -m mtcwf.gen_{wildcards.app} --out results/memfs/wf_inputs/{wildcards.app} {params.args} > {log} 2>&1"


rule memfs_wf_kick_inputs:
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


localrules:
    memfs_expected,


def memfs_list_rule(name, key, log, paths):
    """The list of expected raw files an aggregate checks against its layout (missing ones: not run)."""

    rule:
        name:
            name
        output:
            MEMFS_OUT[key],
        log:
            f"results/memfs/log/{log}.log",
        params:
            paths=paths,
        container:
            ANALYSIS_IMAGE
        shell:
            "printf '%s\\n' {params.paths:q} > {output} 2> {log}"


memfs_list_rule("memfs_expected", "expected", "expected", memfs_layout.expected_raw(MEMFS))
memfs_list_rule("memfs_wf_expected", "wf_expected", "workflows_expected", memfs_layout.workflow_expected_raw(MWF))


def memfs_analysis_cfg(wc):
    return memfs_json({**{k: v for k, v in MEMFS.items() if k != "workflows"}, "judging_scale": JUDGING_SCALE})


def mwf_cfg(wc):
    return memfs_json({**MWF, "judging_scale": JUDGING_SCALE})


analysis_rule(
    "memfs", "memfs_aggregate", script="analyze", lib=("common", "layout", "limits"),
    raw=experiment_raw(MEMFS_STUDY, *memfs_layout.SECTION),
    inputs={"expected": MEMFS_OUT["expected"], "published": f"{STUDIES}/memfs/published.csv"},
    output={"measurements": MEMFS_OUT["measurements_envelope"]}
    | {k: MEMFS_OUT[k] for k in ("summary", "table21", "limit", "limit_runs", "issue13", "issue13_md", "claims")},
    args="--expected {input.expected} --published {input.published} --measurements {output.measurements}"
    " --summary {output.summary} --table21 {output.table21} --limit {output.limit}"
    " --limit-runs {output.limit_runs} --issue13 {output.issue13} --claims {output.claims}",
    cfg=memfs_analysis_cfg, log="results/memfs/log/aggregate.log", bench="memfs_aggregate",
)
MWF_READS = {"measurements": MEMFS_OUT["measurements_workflows"],
             "published": [f"{STUDIES}/memfs/published.csv", f"{STUDIES}/memfs/published_workflows.csv"]}
analysis_rule(
    "memfs", "memfs_wf_tidy", script="wf_tidy", lib=("layout",), raw=experiment_raw(MEMFS_STUDY, "workflow"),
    inputs={"expected": MEMFS_OUT["wf_expected"]},
    output={"measurements": MEMFS_OUT["measurements_workflows"], "summary": MEMFS_OUT["wf_summary"]},
    args="--expected {input.expected} --out {output.measurements} --summary {output.summary}",
    cfg=lambda wc: memfs_json({k: MWF[k] for k in memfs_layout.WORKFLOW_RUN_KEYS}),
    log="results/memfs/log/workflows_tidy.log",
)
analysis_rule(
    "memfs", "memfs_wf_table23", script="wf_table2_3", lib=("wf_common",), inputs=MWF_READS,
    output={"table": MEMFS_OUT["table23"]},
    args="--measurements {input.measurements} --published {input.published} --out {output.table}",
    cfg=mwf_cfg, log="results/memfs/log/workflows_table23.log", bench="memfs_wf_table23",
)
analysis_rule(
    "memfs", "memfs_wf_claims", script="wf_claims", lib=("wf_common",),
    inputs={**MWF_READS, "table23": MEMFS_OUT["table23"]}, output={"claims": MEMFS_OUT["claims_workflows"]},
    args="--measurements {input.measurements} --published {input.published} --table23 {input.table23}"
    " --out {output.claims}",
    cfg=mwf_cfg, log="results/memfs/log/workflows_claims.log",
)


def memfs_figure_rule(name, prefix, figs, *, lib, cfg, measurements, log_prefix=""):
    """figures/figure2_<fig>_<word>.png of one part from its tidy table (module <prefix>figure2_<fig>.py):
    not analysis_rule, whose {name} (the module) cannot carry the figure's word."""
    script = f"{prefix}figure2_"
    add_benchmarks("memfs", [bench_log("memfs", f"memfs_{prefix}{f}") for f in MEMFS_STUDY.figures
                             if f.split("_")[1] in figs.split("|")])

    rule:
        name:
            name
        input:
            analysis_image_input(),
            code=f"{STUDIES}/memfs/{script}{{fig}}.py",
            lib=study_code("memfs", *lib),
            measurements=measurements,
        output:
            MEMFS_STUDY.figure("figure2_{fig}_{name}"),
        log:
            f"results/memfs/log/{log_prefix}figure2_{{fig}}_{{name}}.log",
        benchmark:
            bench_log("memfs", f"memfs_{script}{{fig}}_{{name}}")
        wildcard_constraints:
            fig=figs,
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            cfg=cfg,
        shell:
            f"python3 -m studies.memfs.{script}{{wildcards.fig}} --measurements {{input.measurements}}"
            " --config {params.cfg} --out {output} > {log} 2>&1"


memfs_figure_rule("memfs_figure", "", "3|4|5|6", lib=("common",), cfg=memfs_analysis_cfg,
                  measurements=MEMFS_OUT["measurements_envelope"])
memfs_figure_rule("memfs_wf_figure", "wf_", "7|8|9", lib=("wf_common",), cfg=mwf_cfg,
                  measurements=MEMFS_OUT["measurements_workflows"], log_prefix="workflows_")


rule memfs_fusegap:
    input:
        raw=experiment_expected(MEMFS_STUDY, "fusegap"),
        code=study_code("memfs", "fusegap"),
    output:
        table=MEMFS_OUT["fusegap"],
        runs=MEMFS_OUT["fusegap_runs"],
        md=MEMFS_OUT["fusegap_md"],
    log:
        "results/memfs/log/fusegap_table.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        f"{study_module('memfs', 'fusegap')} table {{input.raw}} --runs {{output.runs}}"
        " --table {output.table} --md {output.md} > {log} 2>&1"


rule memfs_wf_memlimit:
    input:
        analysis_image_input(),
        code=study_code("memfs", "wf_memlimit"),
        done=[memfs_layout.MEMLIMIT_STATUS.format(**r) for r in MWF_ML_RUNS],
    output:
        table=MEMFS_OUT["memlimit_runs"],
        claims=MEMFS_OUT["claims_memlimit"],
        raws=MEMFS_OUT["memlimit_raws"],
    log:
        "results/memfs/log/workflows_memlimit.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        raws=experiment_expected(MEMFS_STUDY, "memlimit"),
        limit=MWF_ML.get("claim_limit_mb", 0),
        ref=MWF["memcached_mb"],
        nodes=MWF_ML.get("nodes", 2),
    shell:
        "printf '%s\\n' {params.raws:q} > {output.raws};"
        f" {study_module('memfs', 'wf_memlimit')} --raws {{output.raws}} --limit-mb {{params.limit}}"
        " --ref-mb {params.ref} --nodes {params.nodes} --table {output.table} --out {output.claims} > {log} 2>&1"


rule memfs_kick_summary:
    input:
        memfs_layout.kick_paths(MEMFS),
        analysis_image_input(),
        code=study_code("memfs", "analyze", "common", "layout"),
    output:
        MEMFS_OUT["kick"],
    log:
        "results/memfs/log/kick_summary.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        paths=lambda wc: " ".join(memfs_layout.kick_paths(MEMFS)),
    shell:
        f"{study_module('memfs', 'analyze')} --tidy-only {{params.paths}} --measurements {{output}} > {{log}} 2>&1"


rule memfs_measurements:
    input:
        analysis_image_input(),
        code="workflow/lib/repro/tidy_concat.py",
        parts=[MEMFS_OUT["measurements_envelope"]] + ([MEMFS_OUT["measurements_workflows"]] if MWF["enabled"] else []),
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


def memfs_target(name, files):
    rule:
        name:
            name
        input:
            files,


memfs_target("memfs_envelope", memfs_declaration.part_outputs(set(MEMFS_PARTS) & {"envelope", "fuse_gap"})
             if MEMFS_ON else [])
memfs_target("memfs_envelope_runs", memfs_layout.expected_raw(MEMFS) if MEMFS_ON else [])
memfs_target("memfs_kick", MEMFS_OUT["kick"])
memfs_target("memfs_workflows", memfs_declaration.part_outputs(set(MEMFS_PARTS) & {"workflows", "memlimit"}))
memfs_target("memfs_workflows_kick", MEMFS_OUT["wf_kick"])
memfs_target("memfs_workflows_runs", memfs_layout.workflow_expected_raw(MWF) if MWF["enabled"] else [])
register_study(
    MEMFS_STUDY, kick=[MEMFS_OUT["kick"], MEMFS_OUT["wf_kick"]], enabled=MEMFS_ON, stand_ins=memfs_layout.stand_ins(MEMFS),
    expected_times=memfs_declaration.expected_times(len(memfs_layout.workflow_matrix(MWF)) if MWF["enabled"] else None),
    **memfs_declaration.report_lists(MEMFS_PARTS),
)
