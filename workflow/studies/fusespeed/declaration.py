"""The fusespeed study, declared once (repro.study): how close the mpifuse file systems (and kernel FUSE
passthrough, and the FUSE ceiling) run to this machine's limits. Not a paper experiment: issues 13 and
22's benchmark, which lived inside mpifuse's folder until issue 23. Its raw file's path depends on the
configuration (fusespeed.source, fusespeed.size): the experiment below spells it."""

from repro.study import Experiment, Study

STUDY = Study(
    name="fusespeed",
    title="FUSE speed benchmark: the mpifuse file systems and kernel FUSE passthrough against native reads "
    "(not a paper experiment)",
    paper="none: how close paper 001's file systems (and ours) run to this machine's limits (issues 13 and 22)",
    outputs={
        "table": "tables/speed.csv",
        "report": "report.md",
        "issue13": "tables/issue13.csv",
        "issue22": "tables/issue22.csv",
        "claims": "claims.csv",
    },
    output_tables={
        "table": "Speed benchmark (not in the paper): GB/s and the per-round ratio to native on one node of "
        "the paper's user-space passthrough, OSR, OSR refined and kernel FUSE passthrough (kpassthrough; "
        "ours, beyond the paper); the per-request breakdown and idle CPU are in results/fusespeed/report.md",
        "issue13": "Issue 13: the FUSE data paths against native reads of the same file in the same job "
        "(per-round ratio min / median / max; the earlier values transcribed from the issue beside; "
        "target and verdict). What the per-request breakdown says about each row: results/fusespeed/report.md",
        "issue22": "Issue 22: refined OSR (and our map_source variant, and the paper's passthrough) per "
        "tool beside native reads and the FUSE ceiling (tools/fuseceiling: a FUSE file system serving a "
        "preloaded file from memory, no backend, mounted with OSR refined's request size, readahead and "
        "FUSE loop) in the same rounds: the ceiling's ratio to native, the variant's per-round ratio to "
        "each (min / median / max), rounds above 1.0 counted as measurement errors (never a result), "
        "reader and file-system CPU, the load, what bounds it, target (>= 0.95x native, sha256sum) and "
        "verdict",
    },
    images=("mpifuse",),
    # it runs mpifuse's file systems, as that study configures them: mpifuse provides them (inputs,
    # launcher wrapper, stand-ins, published values, run section) through the engine
    uses=("mpifuse",),
    # one job of max(fusespeed.nodes)+1 ranks: rank 0 writes the files, ranks 1..k read through the
    # file systems (mpifuse's, in-process through libmpifuse), the ceilings beside
    experiments=(Experiment("speed", "source~{source}/size~{size}/rep~{rep}.json", rule="fusespeed_run"),),
    expected_times={
        "setup_local": "none beyond ./repro setup (builds systems/mpifuse, systems/kpassthrough, tools/fuseceiling)",
        "run_local": "about 5 min: one job (256 MB, nodes 1, 2, 4, 5 repeats, 8 variants, the idle window), "
        "estimated from a 6-variant 3-repeat run with the idle window (190 s at load 6-12); the three "
        "measured runs in tests/fixtures/ (n = 1, 7 variants, 5 repeats, no idle window) took 110-197 s at "
        "load 2-12; about 7 min with the 3 io_uring variants config/local.yaml asks for (issue 30: 7 "
        "variants, 3 repeats of 128 MB took 62 s at load 13-15)",
        "analysis_local": "< 1 min",
        "run_cluster": "one job of max(nodes)+1 = 5 nodes: 1 GB, 5 repeats, 8 variants, minutes",
    },
    readme={
        "local": "≈5 min (one job: 256 MB, n = 1, 2, 4, 5 repeats, 8 variants; estimated, the measured runs in "
        "its tests/fixtures took 110–197 s at n = 1)",
        "cluster": "one job of 5 nodes (1 GB, 5 repeats, 8 variants): minutes",
    },
)
