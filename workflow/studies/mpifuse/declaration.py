"""The mpifuse study, declared once (repro.study): what it is, what it writes, how long it takes.

The FUSE speed benchmark (not a paper experiment) is a study of its own: workflow/studies/fusespeed/."""

from repro.study import Experiment, Study

STUDY = Study(
    name="mpifuse",
    title="MPI-based FUSE file systems for distributing large files (OSR and broadcast vs native)",
    paper="001 (SCALABILITY 2024): Section IV benchmark, Table I, Figures 3-5, Section VII ratios",
    figures={
        "figure3": "Figure 3: time until every node has hashed the file vs nodes, per size, Home and Scratch, "
        "one line per use case (mean of repeats, error bars: std)",
        "figure4": "Figure 4: composition of performance factors of OSR and the Naive broadcast file system "
        "(reproduced beside published); both ran with the kernel's default FUSE request size, 128 KiB "
        "(max_read 128KiB, readahead 128 KiB), as the paper did (7630 read calls per GB)",
        "figure5": "Figure 5: OSR without (osr-nometa: osr with meta_buffer=off, nothing else changed) vs "
        "with the per-byte metadata buffer, native Home for reference; our refined design (osr-refined, "
        "beyond the paper: own-part window, cached 4 MiB chunks, 1 MiB requests) beside them",
    },
    tables={
        "table1": "Table I: largest file, time at the smallest and largest node count, increase, aggregate "
        "throughput, beside the published values",
        "variants": "Use cases: mode and library options of each; differs_from_osr shows that the Figure 5 "
        "variant (osr-nometa) differs from OSR only in meta_buffer",
        "ratios": "Bandwidth-reduction to latency-increase ratios (Section VII: ~8 broadcast, ~22 OSR)",
    },
    outputs={
        "measurements": "measurements.csv",
        "summary": "tables/summary.csv",
        "bytes": "tables/bytes_from_source.csv",
        "figure4_table": "tables/figure4.csv",  # figure4's data (the figure rule writes it), listed as a table
        "claims": "claims.csv",
    },
    output_tables={
        "bytes": "Bytes read from the source file system, in file sizes (1x OSR/broadcast, n x native/passthrough)",
        "figure4_table": "Figure 4 components (s)",
        "summary": "Every configuration: count/mean/std/min/max, failed, not run",
    },
    images=("mpifuse",),
    # one job = one run of the paper: one source x n nodes x size x repeat, every use case (variant) in
    # turn, a raw file for each (the benchmarker: n+1 MPI ranks, rank 0 writes, ranks 1..n read)
    experiments=(
        Experiment(
            "read_scaling", "source~{source}/variant~{variant}/nodes~{nodes}/size~{size}/rep~{rep}.json",
            each=("variant",), rule="mpifuse_run",
            constraints={"source": "home|scratch", "nodes": r"[0-9]+", "size": r"[0-9.]+[KMGT]?i?B"},
        ),
    ),
    expected_times={
        "setup_local": "none beyond ./repro setup (builds systems/mpifuse and systems/homefs)",
        "run_local": "about 16 min on an idle 2-core machine (72 runs of 8 use cases: the 7-use-case reference run "
        "measured 14.2 min, one more OSR use case adds about 1/7; the speed benchmark's estimated 5 min, "
        "earlier counted here, is the fusespeed study's now), up to 30 min while other studies load the machine",
        "analysis_local": "< 1 min",
        "run_cluster": "480 jobs of n+1 nodes (n up to 24), about 8 h of job time at 10 repeats (8 use cases; "
        "1 GB runs dominate), less where small-n jobs run side by side",
    },
    readme={
        "local": "≈15–16 min (72 runs of 8 use cases; the 7-use-case reference run measured 14.2 min with the "
        "speed benchmark, now the fusespeed study)",
        "cluster": "480 jobs (6 node counts × 4 sizes × 2 sources × 10 repeats), each job running all eight use "
        "cases: 3,840 runs",
    },
)
