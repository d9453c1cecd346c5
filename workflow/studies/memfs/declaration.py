"""The memfs study, declared once (repro.study): paper 004's Chapter 2, the MTC Envelope (Section 2.4.1)
and the Montage/BLAST workflows (Section 2.4.2), its parts experiments of this one declaration.

The configuration turns parts on and off: the envelope (memfs.enabled), the FUSE gap of issue 22
(memfs.fuse_gap.enabled), the workflows (memfs.workflows.enabled) and their montage-memlimit experiment
(memfs.workflows.memlimit.enabled). PARTS names each part's declared outputs and figures; report_lists()
gives the report's claims, tidy table, figures and tables of the parts that are on, in the declaration's
order, and expected_times() the times of the parts that are on.
"""

from repro.study import Experiment, Study

_SIZE = r"[0-9]+[KMG]i?B"
_NET = r"[A-Za-z0-9_.+-]+"

STUDY = Study(
    name="memfs",
    title="MemFS: an in-memory runtime file system with symmetric data distribution",
    paper="004 (FGCS 54, 2016), Chapter 2: MTC Envelope (Section 2.4.1, Figures 2.3-2.6, Table 2.1); "
    "Montage/BLAST workflows (Section 2.4.2)",
    figures={
        "figure2_3_design":
        "Figure 2.3: MemFS design decisions - (a) write bandwidth vs stripe size, (b) read bandwidth vs "
        "prefetch threads (mean and std over repeats). The paper picks 512 KiB stripes; reads depend on "
        "the prefetch threads, not on the stripe size.",
        "figure2_4_bandwidth":
        "Figure 2.4: MTC Envelope bandwidth (MB/s) vs nodes for 1 KB, 1 MB and 128 MB files: write, 1-1 "
        "read, N-1 read of MemFS and of the locality-based design (our re-implementation of AMFS's "
        "policy; its N-1 bandwidth includes the 'multicast', a unicast stand-in: every reader replicates "
        "the file from the writer; dashed: its remote 1-1 read).",
        "figure2_5_throughput":
        "Figure 2.5: MTC Envelope throughput (read()/write() calls per second, iozone's own timing; the "
        "locality design's N-1 throughput excludes the multicast) vs nodes.",
        "figure2_6_metadata":
        "Figure 2.6: metadata throughput (create, open) vs nodes, mdtest phases (tools/mdtest/mdbench "
        "where mdtest is absent).",
        "figure2_7_vertical":
        "Figure 2.7 (vertical scalability): time of the parallel stages vs tasks per node on the largest "
        "node count, MemFS vs the locality design (and local disk), Montage and BLAST. The paper: MemFS "
        "scales to 8 tasks per node, AMFS to 4 (Montage) and 4 (BLAST).",
        "figure2_8_horizontal":
        "Figure 2.8 (horizontal scalability): time of the parallel stages vs nodes. The paper: both scale"
        " out, MemFS faster.",
        "figure2_9_memory":
        "Figure 2.9: aggregate memory at the end of the run vs nodes (memcached + FUSE RSS, and data "
        "held). The paper: MemFS lower at every scale, and growing more slowly.",
    },
    outputs={
        # the whole study's tidy table (memfs_measurements: the parts' tidy tables concatenated)
        "measurements": "measurements.csv",
        # envelope (memfs_expected, memfs_aggregate, memfs_kick_summary)
        "expected": "expected_raw_envelope.txt",
        "measurements_envelope": "measurements_envelope.csv",
        "summary": "tables/envelope_summary.csv",
        "table21": "tables/table2_1.csv",
        "limit": "tables/memfs_vs_memcached.csv",
        "limit_runs": "tables/memfs_vs_memcached_runs.csv",
        "issue13": "tables/issue13_limits.csv",
        "issue13_md": "tables/issue13_limits.md",
        "claims": "claims_envelope.csv",  # the envelope's (the report's first claims file)
        "kick": "kick/measurements.csv",
        # FUSE gap (memfs_fusegap)
        "fusegap": "tables/fuse_gap.csv",
        "fusegap_runs": "tables/fuse_gap_runs.csv",
        "fusegap_md": "tables/fuse_gap.md",
        # workflows (memfs_wf_expected, memfs_wf_tidy, memfs_wf_table23, memfs_wf_claims, the kick run)
        "wf_expected": "wf_expected_raw.txt",
        "measurements_workflows": "measurements_workflows.csv",
        "wf_summary": "tables/workflows_summary.csv",
        "table23": "tables/table2_3_memory_distribution.csv",
        "claims_workflows": "claims_workflows.csv",
        "wf_kick_inputs": "kick/workflows/inputs/montage/manifest.json",
        "wf_kick": "kick/workflows/raw/workflow~montage/design~locality/nodes~2/tasks_per_node~1/rep~0.json",
        # montage-memlimit (memfs_wf_memlimit)
        "memlimit_runs": "tables/memlimit_runs.csv",
        "claims_memlimit": "claims_workflows_memlimit.csv",
        "memlimit_raws": "memlimit/raws.txt",
    },
    output_tables={
        "table21": "Table 2.1: MTC Envelope at the largest node count, 1 MB files, both network settings, published "
        "(64 nodes, DAS4) beside reproduced (mean, std, count; our scale).",
        "issue13": "Issue 13: MemFS against raw memcached, measured side by side in each envelope job (same cluster,"
        " network emulation, clients per node, value size and bytes per node). Earlier runs (transcribed "
        "from the issue: mcbench run apart, 8 threads, time-bound) beside this run's min / median / max "
        "over the repeats; target >= 0.8x, a ratio above 1.0 in any repeat is a measurement error (no "
        "value). Breakdown from MemFS's own counters for the phase (median): mean FUSE request size, "
        "memcached data and metadata round trips per MiB, demand-fetch share; other counters per MiB.",
        "fusegap": "Issue 22: MemFS against raw memcached, the FUSE ceiling (tools/fuseceiling: a FUSE file system "
        "serving from memory, no backend) and their composite (1/composite = 1/memcached + 1/ceiling: "
        "both per-byte costs on the same cores), like for like - per path (write/read), concurrent "
        "streams (mcbench threads = dd streams), transfer size (dd block) and variant (the ceiling with "
        "the variant's matching mount options), the same bytes, all measured interleaved in one job per "
        "repeat on one host. Min / median / max over the repeats; bound = the lower limit; limit used = "
        "the composite, or the slower stage alone (pipelined) where MemFS beat the composite in a repeat "
        "(its costs overlapped); verdict: met = median ratio to the limit used >= 0.8 (1 MiB rows), "
        "measurement error = any repeat above 1.0 of memcached, the ceiling or the limit used (ratios "
        "listed apart, never a result). CPU seconds and the daemon's page faults per GiB; load average "
        "beside every row. Issue 30 (fuse_gap.io_uring): NAME-io_uring rows are the variant over "
        "FUSE-over-io_uring (tools/fuseuring); every row also gets both ceilings of its options (over /dev/fuse "
        "and over io_uring), the composite each gives, its ratio to each and what bounds it; every mount is "
        "data-checked (bytes read back equal those written) and an io_uring row whose requests did not go "
        "through the ring is 'transport not used'.",
        "limit": "MemFS as a fraction of raw memcached, every MemFS envelope configuration: mcbench in the same "
        "job (set for write, get for 1-1 read), ratio min / median / max over the repeats and verdict "
        "(met: median >= 0.8; measurement error: any repeat > 1.0, ratios blank), the per-request "
        "breakdown and the largest load average at a job's start and end.",
        "summary": "MTC Envelope, metadata, sweeps and limit: per-configuration summary (count/mean/std/min/max, "
        "failed, not run).",
        "table23": "Table 2.3: data held by the scheduler node vs the other nodes (locality design; MemFS "
        "alongside), published values beside",
        "wf_summary": "Montage and BLAST: per-configuration summary (parallel-stage times, memory; "
        "count/mean/std/min/max)",
        "memlimit_runs": "Montage under a per-node memory limit (the mechanism behind 004's 'AMFS's scheduler node "
        "runs out of memory on Montage 12x12', at local scale): every node's memcached limited to the same -m "
        "MB with -M (refuse, never evict); per design and limit, the run's status, which node's store "
        "refused and what each store held. The unlimited reference run is the last limit.",
    },
    images=("memfs",),
    # memfs's parts are experiments of this one study (README.md): the envelope's five (run.py), the
    # FUSE gap (fusegap.py), the workflow runs (wf_run.py) and the memory-limit runs (wf_memlimit_run.py)
    experiments=(
        Experiment("envelope", "envelope/network~{network}/design~{design}/nodes~{nodes}/size~{size}/rep~{rep}.json",
                   rule="memfs_envelope_run", constraints={"network": _NET, "design": "memfs|locality", "size": _SIZE}),
        Experiment("metadata", "metadata/network~{network}/design~{design}/nodes~{nodes}/rep~{rep}.json",
                   rule="memfs_metadata_run", constraints={"network": _NET, "design": "memfs|locality"}),
        Experiment("stripe", "stripe/network~{network}/nodes~{nodes}/stripe~{stripe}/rep~{rep}.json",
                   rule="memfs_stripe_run", constraints={"network": _NET, "stripe": _SIZE}),
        Experiment("threads", "threads/network~{network}/nodes~{nodes}/threads~{threads}/rep~{rep}.json",
                   rule="memfs_threads_run", constraints={"network": _NET, "threads": "[0-9]+"}),
        Experiment("limit", "limit/network~{network}/nodes~{nodes}/rep~{rep}.json", rule="memfs_limit_run",
                   constraints={"network": _NET}),
        Experiment("fusegap", "fusegap/rep~{rep}.json", rule="memfs_fusegap_run", module="fusegap"),
        Experiment("workflow", "workflow~{workflow}/design~{design}/nodes~{nodes}/tasks_per_node~{tasks_per_node}"
                   "/rep~{rep}.json", rule="memfs_wf_run", module="wf_run", run="workflow_{workflow}",
                   constraints={"workflow": "montage|blast", "design": "memfs|locality|local-disk"}),
        Experiment("memlimit", "experiment~montage-memlimit/design~{design}/memcached_mb~{memcached_mb}/rep~{rep}.json",
                   rule="memfs_wf_memlimit_run", module="wf_memlimit_run", run="workflow_montage",
                   constraints={"design": "memfs|locality"}),
    ),
    # the envelope's (always on); the workflows' are WORKFLOW_TIMES, joined by expected_times()
    expected_times={
        "setup_local": "envelope: iozone from Debian non-free (tools/iozone/setup.sh) and make -C tools/mdtest "
        "tools/iozone systems/memfs, < 1 min",
        "run_local": "envelope, metadata, sweeps, limit (120 runs): ~10 min (the reference run measured 9.3 min of "
        "job time on 2 cores), up to ~20 min while other studies run beside it",
        "analysis_local": "envelope: < 1 min",
        "run_cluster": "envelope: ~3-5 h (1-29 nodes, 3 sizes, 2 designs, 3 repeats; 64 nodes with a larger "
        "partition)",
    },
    readme={
        "local": "≈21 min: envelope, metadata, sweeps and limit ≈10 min (with the side-by-side memcached limit in "
        "every envelope job: 120 jobs and the 134-s mpifuse speed job took 11 min 11 s wall together), Montage "
        "and BLAST ≈10 min (10.1 measured), Montage under a per-node memory limit ≈1 min (57 s measured)",
        "cluster": "up to 64 nodes: envelope ≈3–5 h, workflows hours",
    },
)

# Which part each declared output (outputs' key) or figure (its name) belongs to; the others: "envelope".
PARTS = {
    "fuse_gap": ("fusegap", "fusegap_runs", "fusegap_md"),
    "workflows": ("wf_expected", "measurements_workflows", "wf_summary", "table23", "claims_workflows",
                  "figure2_7_vertical", "figure2_8_horizontal", "figure2_9_memory"),
    "memlimit": ("memlimit_runs", "claims_memlimit", "memlimit_raws"),
}

# The claims files (outputs' keys), the report's order
CLAIMS = ("claims", "claims_workflows", "claims_memlimit")

# The workflows' expected times ({runs}: how many runs the configuration asks for)
WORKFLOW_TIMES = {
    "run_local": "workflows: ~10 min ({runs} runs of 3-20 s on 2 shared cores; the reference run measured 10.1 min)",
    "analysis_local": "workflows: < 1 min",
    "run_cluster": "workflows: hours (Montage 50x50 and BLAST 512 fragments on 8-64 nodes, 3 repeats)",
}


def part(key: str) -> str:
    """The part an output key or a figure name belongs to."""
    return next((p for p, keys in PARTS.items() if key in keys), "envelope")


def part_outputs(parts) -> list[str]:
    """The claims, figures and listed tables of ``parts`` (a part's target: memfs_envelope, memfs_workflows)."""
    lists = report_lists(parts)
    return lists["claims"] + [e["path"] for e in lists["figures"] + lists["tables"]]


def report_lists(parts) -> dict:
    """The report's claims, tidy table (the whole study's, always), figures and tables of the parts that
    are on (``parts``: names of PARTS or "envelope"), in the declaration's order (register_study's overrides)."""
    on = set(parts)
    figures = [e for name, e in zip(STUDY.figures, STUDY.figure_entries()) if part(name) in on]
    # the listed tables are all aggregate outputs (output_tables: STUDY.tables is empty)
    tables = [e for key, e in zip(STUDY.output_tables, STUDY.table_entries()) if part(key) in on]
    assert not STUDY.tables
    return {
        "claims": [STUDY.out(k) for k in CLAIMS if part(k) in on],
        "measurements": [STUDY.out("measurements")],
        "figures": figures,
        "tables": tables,
    }


def expected_times(workflow_runs: int | None = None) -> dict[str, str]:
    """The report's expected times: the envelope's, joined by '; ' with the workflows' where that part is
    on (``workflow_runs``: its number of runs; None: off)."""
    times = dict(STUDY.expected_times)
    if workflow_runs is not None:
        for k, v in WORKFLOW_TIMES.items():
            v = v.format(runs=workflow_runs)
            times[k] = f"{times[k]}; {v}" if times.get(k) else v
    return times
