"""The mpifuse study, declared once (repro.study): what it is, what it writes, how long it takes.

The speed benchmark's outputs (speed_*: not a paper experiment) are declared here with the rest; they
are part of the study only while mpifuse.speed.enabled (study.smk leaves their tables out of the
report entry, and so out of the derived `mpifuse` target, when it is off). Its raw file's path
depends on the configuration (speed.source, speed.size) and is built in study.smk."""

from repro.study import Study

# the speed benchmark's outputs: part of the study only while speed.enabled
SPEED_OUTPUTS = ("speed_table", "speed_report", "speed_issue13", "speed_issue22")

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
        "speed_table": "tables/speed.csv",
        "speed_report": "speed/report.md",
        "speed_issue13": "tables/speed_issue13.csv",
        "speed_issue22": "tables/speed_issue22.csv",
    },
    output_tables={
        "bytes": "Bytes read from the source file system, in file sizes (1x OSR/broadcast, n x native/passthrough)",
        "figure4_table": "Figure 4 components (s)",
        "summary": "Every configuration: count/mean/std/min/max, failed, not run",
        "speed_table": "Speed benchmark (not in the paper): GB/s and the per-round ratio to native on one node of "
        "the paper's user-space passthrough, OSR, OSR refined and kernel FUSE passthrough (kpassthrough; "
        "ours, beyond the paper); the per-request breakdown and idle CPU are in "
        "results/mpifuse/speed/report.md",
        "speed_issue13": "Issue 13: the FUSE data paths against native reads of the same file in the same job "
        "(per-round ratio min / median / max; the earlier values transcribed from the issue beside; "
        "target and verdict). What the per-request breakdown says about each row: "
        "results/mpifuse/speed/report.md",
        "speed_issue22": "Issue 22: refined OSR (and our map_source variant, and the paper's passthrough) per "
        "tool beside native reads and the FUSE ceiling (tools/fuseceiling: a FUSE file system serving a "
        "preloaded file from memory, no backend, mounted with OSR refined's request size, readahead and "
        "FUSE loop) in the same rounds: the ceiling's ratio to native, the variant's per-round ratio to "
        "each (min / median / max), rounds above 1.0 counted as measurement errors (never a result), "
        "reader and file-system CPU, the load, what bounds it, target (>= 0.95x native, sha256sum) and "
        "verdict",
    },
    images=("mpifuse",),
    expected_times={
        "setup_local": "none beyond ./repro setup (builds systems/mpifuse and systems/homefs)",
        "run_local": "about 21 min on an idle 2-core machine (72 runs of 8 use cases + the speed benchmark, "
        "about 5 min with 5 repeats and 8 variants; the reference run measured 14.2 min), up to 30 min while "
        "other studies load the machine",
        "analysis_local": "< 1 min",
        "run_cluster": "480 jobs of n+1 nodes (n up to 24), about 8 h of job time at 10 repeats (8 use cases; "
        "1 GB runs dominate), less where small-n jobs run side by side",
    },
    readme={
        "local": "≈19–21 min (72 runs of 8 use cases + the speed benchmark; the 7-use-case reference run measured "
        "14.2 min)",
        "cluster": "480 jobs (6 node counts × 4 sizes × 2 sources × 10 repeats), each job running all eight use "
        "cases: 3,840 runs",
    },
)
