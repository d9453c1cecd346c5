# Paper 003 (Decker, Kasprzak, Kunkel 2022): OpenFaaS vs Nuclio (C++ shell runtime, Go runtime) with
# the paper's function director: image processing (Figures 1-2, Table 1), byte reversal (Figure 3,
# Tables 2-3) and the limits measured in the same run. What the study is and writes: declaration.py
# (the experiments' raw paths too); what the configuration decides: layout.py; README.md: how to run
# it. Systems: systems/faas-functions, systems/faas-standin (local), systems/openfaas and systems/nuclio
# (the cluster path), tools/fdirector.

from studies.serverless import declaration as sl_declaration
from studies.serverless import layout as sl_layout

SL = config["serverless"]
SL_STUDY = sl_declaration.STUDY
SL_PUBLISHED = f"{STUDIES}/serverless/published.csv"
SL_STANDIN = SL["mode"] == "standin"
SL_IMAGES_DIR = "results/serverless/data/images"
SL_OUT = {k: SL_STUDY.out(k) for k in SL_STUDY.outputs}


def sl_system_inputs(wc=None):
    """What a run job needs built on this host (the images on a cluster)."""
    if not SL_STANDIN:
        return system_image_input("fdirector") + [sl_layout.SITE_CHECK]
    return ["systems/faas-functions/build/imageproc", "systems/faas-standin/build/faas-standin"]


def sl_run_resources(n):
    """Locally (stand-ins): the n+1 layout's resources (the instances are processes on this host). On a
    cluster (mode kubernetes) the platform runs on the kubeconfig's Kubernetes cluster, not on Slurm
    nodes: a run job is the director alone, on one node with serverless.director_cores cores (the
    baseline runs images.baseline.parallel at a time there; Slurm refuses a node without them)."""
    if SL_STANDIN:
        res = n_plus_1_resources(n)
        if callable(n):  # a one-node job (the baseline: n = 0) is no MPI job: Slurm's plugin refuses 1 task
            mpi = res["mpi"]
            res["mpi"] = lambda wc: mpi if n(wc) > 0 else ""
        return res
    return {"nodes": 1, "tasks": 1, "cpus_per_task": SL["director_cores"], "runtime": config["cluster"]["runtime_minutes"],
            "mem_mb": min(config["cluster"]["mem_mb_per_node"], 4000), "slurm_extra": "--exclusive", "bench": 1,
            "host_share": 2}


rule serverless_build_functions:
    output:
        "systems/faas-functions/build/imageproc",
        "systems/faas-functions/build/imageproc-np",
        "systems/faas-functions/build/reverse",
        "systems/faas-functions/build/mkimages",
    log:
        "results/serverless/log/build_functions.log",
    shell:
        "make -C systems/faas-functions > {log} 2>&1"


rule serverless_build_standin:
    output:
        "systems/faas-standin/build/faas-standin",
    log:
        "results/serverless/log/build_standin.log",
    shell:
        "make -C systems/faas-standin > {log} 2>&1"


rule serverless_images:
    """The test images: 16-bit RGB PNGs of the paper's two sizes (every small_every-th small)."""
    input:
        (
            ["systems/faas-functions/build/mkimages"]
            if SL_STANDIN
            else system_image_input("faas-functions") + [sl_layout.SITE_CHECK]
        ),
    output:
        directory(SL_IMAGES_DIR),
    log:
        "results/serverless/log/images.log",
    params:
        exe=(
            "systems/faas-functions/build/mkimages"
            if SL_STANDIN
            else f"{system_exec('faas-functions')} mkimages"
        ),
        im=SL["images"],
    shell:
        "mkdir -p {output} && {params.exe} --out {output} --count {params.im[count]} --size {params.im[size]}"
        " --small-size {params.im[small_size]} --small-every {params.im[small_every]} > {log} 2>&1"


localrules:
    serverless_site_check,


rule serverless_site_check:
    """Cluster runs only (mode kubernetes): the site edits config.yaml ships unedited (kubeconfig,
    limit.iperf_host, limit.echo_url), checked before any run job; fails naming each key. Its output is
    every run job's input: it gets the run section too (run_json), so a judging key re-runs no run job."""
    input:
        code=study_code("serverless", "site_check", "layout"),
    output:
        sl_layout.SITE_CHECK,
    log:
        "results/serverless/log/site_check.log",
    params:
        cfg=lambda wc: run_json("serverless"),
        cores=config["cluster"]["cores_per_node"],
    shell:
        "python3 -m studies.serverless.site_check --config {params.cfg} --out {output}"
        " --cores-per-node {params.cores} 2> {log}"
        " || {{ cat {log} >&2; exit 1; }}"


# The experiments (declaration.py): the director on the host (locally) or in its image (a cluster).
SL_RUN = dict(input=sl_system_inputs, exec=system_exec("fdirector") if not SL_STANDIN else "",
              code=study_code("serverless", "placement"))
experiment_rule(
    SL_STUDY, "image", matrix=sl_layout.image_runs(SL), inputs={"images": SL_IMAGES_DIR},
    resources=sl_run_resources(lambda wc: 0 if wc.platform == "baseline" else int(wc.instances)), **SL_RUN,
)
for _p in sl_layout.PLATFORMS:
    experiment_rule(
        SL_STUDY, "bytes", rulename=f"serverless_bytes_run_{_p.replace('-', '_')}", fixed={"platform": _p},
        matrix=[j for j in sl_layout.bytes_jobs(SL) if j["platform"] == _p],
        each={"size": sl_layout.declared_sizes(SL, _p)}, resources=sl_run_resources(lambda wc: int(wc.instances)),
        **SL_RUN,
    )
SL_LIMIT_REPS = [{"rep": r} for r in range(SL["repeats"])] if SL["limit"]["enabled"] else []
experiment_rule(
    SL_STUDY, "limit_echo", matrix=SL_LIMIT_REPS, each={"size": sl_layout.limit_sizes(SL)},
    resources=sl_run_resources(1), params=lambda wc: {"variant": "echo"}, **SL_RUN,
)
experiment_rule(
    SL_STUDY, "limit_iperf3", matrix=SL_LIMIT_REPS, resources=sl_run_resources(1),
    params=lambda wc: {"variant": "iperf3"}, **SL_RUN,
)

register_study(SL_STUDY, kick=sl_layout.kick(SL), enabled=enabled("serverless"), stand_ins=sl_layout.stand_ins(SL))


# The tidy table (every expected configuration: ok, failed or not run), the summary and the limits
# table, from the raw files only; Tables 1-3 (tables/{name}.csv, the published values beside),
# Figures 1-3 (figures/{name}.png and the data each draws, tables/{name}.csv) and the claims, from the
# tidy table and the published values only. The engine's analysis_rule gives each its log, benchmark,
# image and resources.
SL_READS = {"measurements": SL_OUT["measurements"], "published": SL_PUBLISHED}
SL_READ_ARGS = "--measurements {input.measurements} --published {input.published}"
analysis_rule(
    "serverless", "serverless_aggregate", script="aggregate", lib=("analysis", "layout"), raw=experiment_raw(SL_STUDY),
    output={k: SL_OUT[k] for k in ("measurements", "summary", "limits")},
    args="--measurements {output.measurements} --summary {output.summary} --limits {output.limits}",
)
analysis_rule(
    "serverless", "serverless_table", script="{name}", names=tuple(SL_STUDY.tables), lib=("analysis", "layout"),
    inputs=SL_READS, output={"table": SL_STUDY.table("{name}")},
    args=SL_READ_ARGS + " --out {output.table}",
)
analysis_rule(
    "serverless", "serverless_figure", script="{name}", names=tuple(SL_STUDY.figures), lib=("analysis", "layout", "plots"),
    inputs=SL_READS,
    output={"table": SL_STUDY.table("{name}"), "figure": SL_STUDY.figure("{name}")},
    args=SL_READ_ARGS + " --table {output.table} --out {output.figure}",
)
analysis_rule(
    "serverless", "serverless_claims", script="claims", lib=("analysis", "layout"), inputs=SL_READS,
    output={"claims": SL_OUT["claims"]}, args=SL_READ_ARGS + " --out {output.claims}",
)

