# Paper 004 (MemFS): the rules of Section 2.4.1 (MTC Envelope, sweeps, limit); the workflows'
# rules (2.4.2) are in workflows.smk. The study's declaration (parameters, paths, report entry,
# helper functions) is study.smk; the Snakefile includes this file, which includes the others.


include: "study.smk"
include: "workflows.smk"


rule memfs_site_check:
    """Cluster runs only (a real network naming an interface): the nodes have each interface of
    memfs.networks with an IPv4 address, checked once before any run job; fails naming the key,
    the interface and the node (site_check.py)."""
    input:
        code=study_code("memfs", "site_check"),
    output:
        MEMFS_SITE,
    log:
        "results/memfs/log/site_check.log",
    resources:
        **n_plus_1_resources(memfs_layout.site_check_nodes(MEMFS) - 1, runtime=10),
    params:
        cfg=shlex.quote(json.dumps({"interfaces": MEMFS_SITE_IFACES}, sort_keys=True)),
    shell:
        f"{study_module('memfs', 'site_check')} --config {{params.cfg}} --out {{output}} 2> {{log}}"
        " || {{ cat {log} >&2; exit 1; }}"


# The five run rules (one job = one configuration and repeat; the driver on the job's first node,
# the agents on the others) share one shape; they differ in the experiment, its raw path (layout.py)
# and the wildcards its --params names besides network and nodes (run.py: DIMENSIONS):
#   memfs_envelope_run  MTC Envelope I/O (iozone): one design, network, node count, file size, repeat
#   memfs_metadata_run  metadata rates (mdtest or mdbench over MPI ranks on the system nodes)
#   memfs_stripe_run    Figure 2.3a: one stripe size
#   memfs_threads_run   Figure 2.3b: one prefetch thread-pool size
#   memfs_limit_run     the links' measured rate (iperf3) and raw memcached's time-bound capacity
#                       (mcbench); MemFS's limit itself is measured side by side in each MemFS
#                       envelope job (run.py, limits.py)
MEMFS_RUN_OPTIONS = {
    "envelope": ("design", "size"),
    "metadata": ("design",),
    "stripe": ("stripe",),
    "threads": ("threads",),
    "limit": (),
}


def _memfs_run_rule(exp, opts):
    """One run rule. A function, not a bare loop: Snakemake evaluates a rule's shell expression
    again when the job runs, so it must name this call's ``exp``, not a loop variable that holds
    the last experiment by then (every job would run ``run.py limit``)."""

    rule:
        name:
            f"memfs_{exp}_run"
        input:
            system_image_input("memfs"),
            code=MEMFS_BENCH_CODE,
            site=MEMFS_SITE_INPUT,
        output:
            MEMFS_PATTERNS[exp],
        log:
            memfs_layout.run_log_pattern(exp),
        benchmark:
            memfs_layout.run_benchmark_pattern(exp)
        wildcard_constraints:
            **_MEMFS_WC,
        resources:
            **n_plus_1_resources(
                lambda wc: int(wc.n),
                runtime=MEMFS["runtime_minutes"],
                mem_mb=config["cluster"]["mem_mb_per_node"],
            ),
        params:
            cfg=memfs_run_cfg(exp),
            run=memfs_run_params(opts),
        shell:
            memfs_bench_cmd(exp)


for _exp, _opts in MEMFS_RUN_OPTIONS.items():
    _memfs_run_rule(_exp, _opts)


rule memfs_fusegap_run:
    """Issue 22: one repeat of MemFS / raw memcached / the FUSE ceiling, like for like, on one host."""
    input:
        code=study_code("memfs", "fusegap") + ["tools/fuseceiling/ceiling.py", "tools/fuseceiling/transports.py"],
    output:
        MEMFS_GAP_RAW,
    log:
        "results/memfs/log/fusegap/rep~{rep}.log",
    benchmark:
        "results/memfs/benchmarks/memfs_fusegap_run/rep~{rep}.tsv"
    wildcard_constraints:
        rep=r"\d+",
    resources:
        # one node, one task, no MPI (the Slurm executor refuses an "mpi" job of one task)
        **{k: v for k, v in n_plus_1_resources(0, runtime=MEMFS["runtime_minutes"]).items() if k != "mpi"},
    params:
        cfg=lambda wc: shlex.quote(
            json.dumps({"memfs": MEMFS_RUN["memfs"], "fuse_gap": MEMFS_RUN.get("fuse_gap", {})}, sort_keys=True)
        ),
    # the run contract (repro.runner): experiment fusegap of fusegap.py, its own raw format (own_format)
    shell:
        f"({study_module('memfs', 'fusegap')} fusegap --config {{params.cfg}} --rep {{wildcards.rep}}"
        " --out {output}) > {log} 2>&1"


rule memfs_fusegap:
    """Issue 22's table: ratios to memcached, the FUSE ceiling and their composite, from the raw files."""
    input:
        raw=lambda wc: [
            MEMFS_GAP_RAW.format(rep=r) for r in range(int(MEMFS_GAP.get("reps", 5)))
        ],
        code=study_code("memfs", "fusegap"),
    output:
        **memfs_outputs(table="fusegap", runs="fusegap_runs", md="fusegap_md"),
    log:
        "results/memfs/log/fusegap_table.log",
    container:
        ANALYSIS_IMAGE
    resources:
        **analysis_resources(),
    shell:
        f"{study_module('memfs', 'fusegap')} table {{input.raw}} --runs {{output.runs}}"
        " --table {output.table} --md {output.md} > {log} 2>&1"


localrules:
    memfs_expected,


rule memfs_expected:
    """The full list of expected raw files (the tables show missing ones as not-run)."""
    output:
        MEMFS_OUT["expected"],
    log:
        "results/memfs/log/expected.log",
    params:
        paths=lambda wc: memfs_layout.expected_raw(MEMFS),
    container:
        ANALYSIS_IMAGE
    shell:
        "printf '%s\\n' {params.paths:q} > {output} 2> {log}"


# The analysis (engine: analysis_rule): the tidy table, Table 2.1, MemFS vs raw memcached and the
# claims from the raw files only; Figures 2.3 (design sweeps), 2.4 (bandwidth), 2.5 (throughput),
# 2.6 (metadata) from the tidy table (memfs_figure_rule, study.smk). Both read the section without
# memfs.workflows.
analysis_rule(
    "memfs", "memfs_aggregate", script="analyze", lib=("common", "layout", "limits"), raw=memfs_raw_inputs,
    inputs={"expected": MEMFS_OUT["expected"], "published": MEMFS_PUBLISHED},
    output={"measurements": MEMFS_OUT["measurements_envelope"]}
    | {k: MEMFS_OUT[k] for k in ("summary", "table21", "limit", "limit_runs", "issue13", "issue13_md", "claims")},
    args="--expected {input.expected} --published {input.published} --measurements {output.measurements}"
    " --summary {output.summary} --table21 {output.table21} --limit {output.limit}"
    " --limit-runs {output.limit_runs} --issue13 {output.issue13} --claims {output.claims}",
    cfg=memfs_analysis_cfg, log="results/memfs/log/aggregate.log", bench="memfs_aggregate",
)
memfs_figure_rule(
    "memfs_figure", "figure2_", "3|4|5|6", lib=("common",), cfg=memfs_analysis_cfg,
    measurements=MEMFS_OUT["measurements_envelope"],
)


rule memfs_kick_summary:
    """memfs_kick: the tidy table of the tiny configurations."""
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


rule memfs_envelope:
    """Section 2.4.1: every run, the tables, figures and claims (the declaration's envelope and FUSE gap parts)."""
    input:
        memfs_declaration.part_outputs(set(MEMFS_PARTS) & {"envelope", "fuse_gap"}) if MEMFS_ON else [],


rule memfs_envelope_runs:
    """Only the runs of Section 2.4.1 (every expected raw file)."""
    input:
        memfs_layout.expected_raw(MEMFS) if MEMFS_ON else [],


rule memfs_kick:
    """One tiny configuration of every experiment (2 nodes, 1 MiB files) and their tidy table."""
    input:
        MEMFS_OUT["kick"],


# `memfs` (the whole study: both parts' claims, figures and tables and the one tidy table) is the
# Snakefile's, derived from the report entry (register_study, study.smk).
