"""The serverless study, declared once (repro.study): what it is, what it writes, how long it takes.

Its experiments spell the raw paths. What only the configuration knows is in layout.py and rules.smk:
the stand-ins (mode standin), the kick job, the runs the configuration asks for."""

from repro.study import AGGREGATE_OUTPUTS, Experiment, Study

STUDY = Study(
    name="serverless",
    title="Serverless platforms for HPC workloads: OpenFaaS vs Nuclio",
    paper="003 (Algorithms 2022, 15, 234): Sections 2.4 and 3, Figures 1-3, Tables 1-3",
    figures={
        "figure1": "Figure 1: images/s vs function instances, image processing, OpenFaaS and Nuclio "
        "(mean of repeats, error bars: std; baseline and published peaks marked)",
        "figure2": "Figure 2: images/s vs function instances, null processing (load, sleep 1 s, return)",
        "figure3": "Figure 3: byte-reversal throughput vs request size (log2), single (left) and parallel (right), "
        "per platform at the instance count with the highest peak; box plots",
    },
    tables={
        "table1": "Table 1: peak image rates (images/s, MiB/s) and the baseline, beside the published values",
        "table2": "Table 2: peak byte-reversal throughput (MiB/s) and the instances it took, single and parallel",
        "table3": "Table 3: single requests, arithmetic, geometric and harmonic mean throughput (MiB/s)",
    },
    outputs=AGGREGATE_OUTPUTS,
    output_tables={
        "limits": "Every platform's peak byte-reversal throughput as a fraction of the director's "
        "ceiling (bare echo server) and of iperf3 on the same path; image rates as a fraction of "
        "the baseline",
        "summary": "Every configuration: count/mean/std/min/max, failed, not run",
    },
    images=("faas-functions", "fdirector"),
    # the director against one platform (or the limits), on the n+1 layout (placement.py): one image run
    # (the baseline: the function run by the director, one node); one byte-reversal sweep (every request
    # size of the config, one raw file each; one rule per platform: the sizes a platform refuses by
    # design are sent but are not outputs); one limit measurement (the director's ceiling against a bare
    # echo server at every ceiling size; iperf3 over the same path)
    experiments=(
        Experiment("image", "workload~image/variant~{variant}/platform~{platform}/instances~{instances}/rep~{rep}.json",
                   rule="serverless_image_run",
                   constraints={"variant": "processing|null-processing", "platform": "openfaas|nuclio-cpp|baseline",
                                "instances": r"[0-9]+"}),
        Experiment("bytes", "workload~bytes/variant~{variant}/platform~{platform}/instances~{instances}/size~{size}"
                   "/rep~{rep}.json", each=("size",),
                   constraints={"variant": "parallel|single", "instances": r"[0-9]+"}),
        Experiment("limit_echo", "workload~limit/variant~echo/size~{size}/rep~{rep}.json", each=("size",), run="limit",
                   rule="serverless_limit_run_echo"),
        Experiment("limit_iperf3", "workload~limit/variant~iperf3/rep~{rep}.json", run="limit",
                   rule="serverless_limit_run_iperf3"),
    ),
    not_rehearsed="the Kubernetes platforms (OpenFaaS, Nuclio) cannot run here: the stand-in platforms "
    "run on the system nodes through the same cluster path (mode: standin)",
    expected_times={
        "setup_local": "none beyond ./repro setup (builds systems/faas-functions and systems/faas-standin)",
        "run_local": "about 6-12 min on 2 shared cores: 365 s / 718 s of job time measured (quiet / "
        "load 11-14; 26 image runs, 30 bytes sweeps, 4 limit jobs; 2 repeats)",
        "analysis_local": "< 1 min",
        "run_cluster": "image runs: 1,000 images at 4.6-16 images/s = 1-4 min each, 110 runs; bytes: "
        "15 parallel sweeps (25 sizes x 100 requests) and 6 single sweeps (25 x 1,000 requests) per "
        "repeat, minutes each; roughly 10 h of job time at 10 repeats",
    },
    readme={
        "local": "≈6–12 min (365 s / 718 s of job time measured, quiet / load 11–14)",
        "cluster": "210 image runs, 210 byte sweeps, 20 limit jobs: ≈10 h of job time",
    },
)
