# Paper 004, Section 2.4.2: the Montage and BLAST many-task workflows on MemFS,
# on the locality-based design (our re-implementation of AMFS's policy) and on
# a local-disk baseline, scaled up (tasks per node) and out (nodes).
# Table 2.3, Figures 2.7, 2.8, 2.9. Code: systems/mtc-workflows/ (generators,
# DAGs, MTC scheduler), on the shared launcher systems/mtc/ (agents in network
# namespaces locally, srun in the n+1 allocation on Slurm).
#
#   ./repro snakemake memfs_workflows           # the whole matrix + tables, figures, claims
#   ./repro snakemake memfs_workflows_kick      # one tiny run (Montage, locality design)

import glob as _glob
from pathlib import Path

MWF = config["memfs"]["workflows"]
MWF_ON = bool(MWF["enabled"])
MWF_CODE = sorted(_glob.glob("systems/mtc-workflows/mtcwf/*.py"))
MWF_ENV = "PYTHONPATH=systems/mtc-workflows:$PYTHONPATH"
MWF_RAW = "results/memfs/raw/workflow~{app}/design~{design}/nodes~{n}/tasks_per_node~{k}/rep~{rep}.json"
MWF_OUT = {
    "expected": "results/memfs/wf_expected_raw.txt",
    "measurements": "results/memfs/measurements_workflows.csv",
    "summary": "results/memfs/tables/workflows_summary.csv",
    "table23": "results/memfs/tables/table2_3_memory_distribution.csv",
    "figure27": "results/memfs/figures/figure2_7_vertical.png",
    "figure28": "results/memfs/figures/figure2_8_horizontal.png",
    "figure29": "results/memfs/figures/figure2_9_memory.png",
    "claims": "results/memfs/claims_workflows.csv",
}
MWF_PUBLISHED = [f"{MEMFS_DIR}/published.csv", f"{MEMFS_DIR}/published_workflows.csv"]


def mwf_configs():
    """(nodes, tasks_per_node) of every sweep (vertical, horizontal), union, sorted."""
    out = set()
    for sweep in MWF["sweeps"].values():
        for n in sweep["nodes"]:
            for k in sweep["tasks_per_node"]:
                out.add((int(n), int(k)))
    return sorted(out)


def mwf_expected():
    return [
        MWF_RAW.format(app=a, design=d, n=n, k=k, rep=r)
        for a in MWF["applications"]
        for d in MWF["designs"]
        for n, k in mwf_configs()
        for r in range(MWF["repeats"])
    ]


def mwf_raw_inputs(wildcards):
    """All expected raw files; with allow_incomplete only those that exist."""
    paths = mwf_expected()
    return [p for p in paths if os.path.exists(p)] if ALLOW_INCOMPLETE else paths


def mwf_input_args(app):
    if app == "montage":
        m = MWF["montage"]
        return f"--grid {m['grid']} --npix {m['npix']} --overlap {m['overlap']} --seed {m['seed']}"
    b = MWF["blast"]
    return (
        f"--db-bp {b['db_bp']} --contig-bp {b['contig_bp']} --fragments {b['fragments']}"
        f" --queries {b['queries']} --seqs-per-query {b['seqs_per_query']} --query-bp {b['query_bp']}"
        f" --mutation-rate {b['mutation_rate']} --seed {b['seed']}"
    )


def mwf_bench(raw):
    """Per-run Snakemake benchmark file of a raw file."""
    rel = ",".join(Path(raw).with_suffix("").parts[3:])
    return f"results/memfs/benchmarks/memfs_wf_run/{rel}.tsv"


def _mwf_report_add(key, items):
    st = STUDY_REPORT.setdefault(
        "memfs", {"title": "memfs", "paper": "", "enabled": enabled("memfs")}
    )
    cur = st.get(key)
    cur = [] if not cur else ([cur] if isinstance(cur, (str, dict)) else list(cur))
    st[key] = cur + list(items)


if MWF_ON:
    _mwf_report_add("claims", [MWF_OUT["claims"]])
    _mwf_report_add("measurements", [MWF_OUT["measurements"]])
    _mwf_report_add(
        "figures",
        [
            {
                "path": MWF_OUT["figure27"],
                "caption": "Figure 2.7 (vertical scalability): time of the parallel stages vs tasks per node on the largest node count, MemFS vs the locality design (and local disk), Montage and BLAST. The paper: MemFS scales to 8 tasks per node, AMFS to 4 (Montage) and 4 (BLAST).",
            },
            {
                "path": MWF_OUT["figure28"],
                "caption": "Figure 2.8 (horizontal scalability): time of the parallel stages vs nodes. The paper: both scale out, MemFS faster.",
            },
            {
                "path": MWF_OUT["figure29"],
                "caption": "Figure 2.9: aggregate memory at the end of the run vs nodes (memcached + FUSE RSS, and data held). The paper: MemFS lower at every scale, and growing more slowly.",
            },
        ],
    )
    _mwf_report_add(
        "tables",
        [
            {
                "path": MWF_OUT["table23"],
                "caption": "Table 2.3: data held by the scheduler node vs the other nodes (locality design; MemFS alongside), published values beside",
            },
            {
                "path": MWF_OUT["summary"],
                "caption": "Montage and BLAST: per-configuration summary (parallel-stage times, memory; count/mean/std/min/max)",
            },
        ],
    )
    _mwf_report_add(
        "benchmarks",
        [mwf_bench(p) for p in mwf_expected()]
        + [
            bench_log("memfs", f"memfs_wf_{x}")
            for x in (
                "tidy",
                "table23",
                "figure2_7_vertical",
                "figure2_8_horizontal",
                "figure2_9_memory",
                "claims",
            )
        ],
    )
    _mwf_report_add(
        "stand_ins",
        [
            "Workflows (2.4.2): the cluster is emulated by systems/mtc: n+1 'nodes' on one host, each system node a network namespace with its own memcached and MemFS mounts, links shaped with tc HTB; on Slurm the same code runs on real nodes.",
            "Workflows (2.4.2): synthetic inputs instead of the M17 mosaic (an N x N grid of TAN tiles with a shared star field, per-tile background planes, 30 % overlap) and instead of the NCBI nt database (random ACGT split with fastasplit; mutated queries with known origins).",
            "Workflows (2.4.2): the locality design is our re-implementation of AMFS's policy inside MemFS (writes to the local memcached only, replicate-on-read, placement by the first input's owner via memfs-locate / user.memfs.owners), not AMFS itself; AMFS Shell is our MTC scheduler (systems/mtc-workflows).",
            f"Workflows (2.4.2): this run's scale: a {MWF['montage']['grid']} x {MWF['montage']['grid']} mosaic of "
            f"{MWF['montage']['npix']}^2 tiles, a {MWF['blast']['db_bp'] / 1e6:g} Mbp database in "
            f"{MWF['blast']['fragments']} fragments x {MWF['blast']['queries']} query files, "
            f"(nodes, tasks per node) in {mwf_configs()}, {MWF['repeats']} repeats; on one 2-core host the "
            "emulated nodes share the cores, so times are dominated by process start-up and CPU sharing, not by "
            "the network (config/config.yaml has the paper's scale).",
        ],
    )
    _exp = STUDY_REPORT["memfs"].setdefault("expected_times", {})
    for _k, _v in {
        "run_local": f"workflows: ~10 min ({len(mwf_expected())} runs of 3-20 s on 2 shared cores; the reference run measured 10.1 min)",
        "analysis_local": "workflows: < 1 min",
        "run_cluster": "workflows: hours (Montage 50x50 and BLAST 512 fragments on 8-64 nodes, 3 repeats)",
    }.items():
        _exp[_k] = (_exp[_k] + "; " if _exp.get(_k) else "") + _v


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
        mwf_env=MWF_ENV,
    shell:
        "{params.mwf_env} python3 -m mtcwf.gen_{wildcards.app} --out results/memfs/wf_inputs/{wildcards.app}"
        " {params.args} > {log} 2>&1"


rule memfs_wf_run:
    """One run: a workflow on one design, n system nodes (+ the driver), k tasks per node."""
    input:
        system_image_input("memfs"),
        manifest="results/memfs/wf_inputs/{app}/manifest.json",
        code=MWF_CODE,
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
        launcher=MWF["launcher"],
        network=lambda wc: shlex.quote(json.dumps(MWF["network"])),
        memfs_opts=lambda wc: shlex.quote(json.dumps(MWF["memfs_opts"])),
        memcached_mb=MWF["memcached_mb"],
        timeout=MWF["task_timeout_s"],
        image=(
            f"--image {sif('memfs')}"
            if config["containers"]["use_for_benchmarks"]
            else ""
        ),
        mpi_env=MPI_ENV,
        mwf_env=MWF_ENV,
    shell:
        "({params.mpi_env}; {params.mwf_env} python3 -m mtcwf.run --workflow {wildcards.app}"
        " --inputs results/memfs/wf_inputs/{wildcards.app} --design {wildcards.design}"
        " --nodes {wildcards.n} --tasks-per-node {wildcards.k} --rep {wildcards.rep} --raw {output}"
        " --launcher {params.launcher} --network {params.network} --memfs-opts {params.memfs_opts}"
        " --memcached-mb {params.memcached_mb} --task-timeout {params.timeout} {params.image}) > {log} 2>&1"


rule memfs_wf_expected:
    """The full list of expected raw files (aggregation shows missing ones as not-run)."""
    output:
        MWF_OUT["expected"],
    log:
        "results/memfs/log/workflows_expected.log",
    params:
        paths=lambda wc: mwf_expected(),
    shell:
        "printf '%s\\n' {params.paths:q} > {output} 2> {log}"


rule memfs_wf_tidy:
    """The tidy table and per-configuration summary, from the raw files only."""
    input:
        mwf_raw_inputs,
        analysis_image_input(),
        code=study_code("memfs", "wf_tidy"),
        expected=MWF_OUT["expected"],
    output:
        measurements=MWF_OUT["measurements"],
        summary=MWF_OUT["summary"],
    log:
        "results/memfs/log/workflows_tidy.log",
    benchmark:
        bench_log("memfs", "memfs_wf_tidy")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        f"{study_module('memfs', 'wf_tidy')} --expected {{input.expected}} --out {{output.measurements}}"
        " --summary {output.summary} > {log} 2>&1"


rule memfs_wf_table23:
    """Table 2.3: data on the scheduler node vs the other nodes, published beside."""
    input:
        analysis_image_input(),
        code=study_code("memfs", "wf_table2_3", "wf_common"),
        measurements=MWF_OUT["measurements"],
        published=MWF_PUBLISHED,
    output:
        MWF_OUT["table23"],
    log:
        "results/memfs/log/workflows_table23.log",
    benchmark:
        bench_log("memfs", "memfs_wf_table23")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: shlex.quote(json.dumps(MWF, sort_keys=True)),
    shell:
        f"{study_module('memfs', 'wf_table2_3')} --measurements {{input.measurements}} --config {{params.cfg}}"
        " --published {input.published} --out {output} > {log} 2>&1"


rule memfs_wf_figure:
    """Figures 2.7 (vertical), 2.8 (horizontal) and 2.9 (aggregate memory)."""
    input:
        analysis_image_input(),
        code=f"{MEMFS_DIR}/wf_figure2_{{fig}}.py",
        lib=study_code("memfs", "wf_common"),
        measurements=MWF_OUT["measurements"],
    output:
        "results/memfs/figures/figure2_{fig}_{name}.png",
    log:
        "results/memfs/log/workflows_figure2_{fig}_{name}.log",
    benchmark:
        bench_log("memfs", "memfs_wf_figure2_{fig}_{name}")
    wildcard_constraints:
        fig="7|8|9",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: shlex.quote(json.dumps(MWF, sort_keys=True)),
    shell:
        "python3 -m studies.memfs.wf_figure2_{wildcards.fig} --measurements {input.measurements}"
        " --config {params.cfg} --out {output} > {log} 2>&1"


rule memfs_wf_claims:
    """Claims: shape claims (memory imbalance, aggregate memory, mDiffFit, scale-out), times as info."""
    input:
        analysis_image_input(),
        code=study_code("memfs", "wf_claims", "wf_common"),
        measurements=MWF_OUT["measurements"],
        table23=MWF_OUT["table23"],
        published=MWF_PUBLISHED,
    output:
        MWF_OUT["claims"],
    log:
        "results/memfs/log/workflows_claims.log",
    benchmark:
        bench_log("memfs", "memfs_wf_claims")
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    params:
        cfg=lambda wc: shlex.quote(json.dumps(MWF, sort_keys=True)),
    shell:
        f"{study_module('memfs', 'wf_claims')} --measurements {{input.measurements}} --config {{params.cfg}}"
        " --published {input.published} --table23 {input.table23} --out {output} > {log} 2>&1"


rule memfs_workflows:
    input:
        []
        if not MWF_ON
        else [
            MWF_OUT[k]
            for k in ("claims", "table23", "figure27", "figure28", "figure29")
        ],


rule memfs_wf_kick_inputs:
    """Tiny inputs of the kick-the-tires run: a 3 x 3 mosaic of 128^2 tiles."""
    input:
        code=MWF_CODE,
    output:
        "results/memfs/kick/workflows/inputs/montage/manifest.json",
    log:
        "results/memfs/log/kick_workflows_inputs.log",
    params:
        mwf_env=MWF_ENV,
    shell:
        "{params.mwf_env} python3 -m mtcwf.gen_montage --out results/memfs/kick/workflows/inputs/montage"
        " --grid 3 --npix 128 > {log} 2>&1"


rule memfs_wf_kick_run:
    """One tiny run: Montage on the locality design, 2 nodes x 1 task (about 10 s)."""
    input:
        system_image_input("memfs"),
        manifest="results/memfs/kick/workflows/inputs/montage/manifest.json",
        code=MWF_CODE,
    output:
        "results/memfs/kick/workflows/raw/workflow~montage/design~locality/nodes~2/tasks_per_node~1/rep~0.json",
    log:
        "results/memfs/log/kick_workflows_run.log",
    resources:
        **n_plus_1_resources(2, runtime=10, mem_mb=config["cluster"]["mem_mb_per_node"]),
    params:
        launcher=MWF["launcher"],
        network=lambda wc: shlex.quote(json.dumps(MWF["network"])),
        image=(
            f"--image {sif('memfs')}"
            if config["containers"]["use_for_benchmarks"]
            else ""
        ),
        mpi_env=MPI_ENV,
        mwf_env=MWF_ENV,
    shell:
        "({params.mpi_env}; {params.mwf_env} python3 -m mtcwf.run --workflow montage"
        " --inputs results/memfs/kick/workflows/inputs/montage --design locality --nodes 2"
        " --tasks-per-node 1 --rep 0 --raw {output} --launcher {params.launcher}"
        " --network {params.network} --memcached-mb 128 --task-timeout 120 {params.image}) > {log} 2>&1"


rule memfs_workflows_kick:
    """Kick the tires: one tiny Montage run through the real tools on the shared launcher."""
    input:
        "results/memfs/kick/workflows/raw/workflow~montage/design~locality/nodes~2/tasks_per_node~1/rep~0.json",


rule memfs_workflows_runs:
    """Only the runs (every expected raw file), no analysis."""
    input:
        mwf_expected() if MWF_ON else [],


# One tidy table for the whole MemFS study: the envelope's and the workflows' parts.
MEMFS_MEASUREMENT_PARTS = list(STUDY_REPORT["memfs"]["measurements"])
STUDY_REPORT["memfs"]["measurements"] = ["results/memfs/measurements.csv"]


rule memfs_measurements:
    input:
        analysis_image_input(),
        code="workflow/lib/repro/tidy_concat.py",
        parts=MEMFS_MEASUREMENT_PARTS,
    output:
        "results/memfs/measurements.csv",
    log:
        "results/memfs/log/measurements.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        "python3 -m repro.tidy_concat --out {output} {input.parts} > {log} 2>&1"
