"""Figure 5 (paper 002): COSBench throughput (main stage, all operations, op/s) vs object size and
workers, per stack, with the COSBench driver's own ceiling (dashed); published statements in the title.

    python3 -m studies.storage.figure5 --config CFG --measurements M --published P --table T --out F
"""

from repro import cli

from studies.storage import cosfig

if __name__ == "__main__":
    args, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    cosfig.draw(args, "throughput", "throughput (op/s)",
                "Fig. 5: COSBench throughput vs object size and workers",
                ["peak_throughput", "cosbench_advantage", "anomaly"], ceiling=True)
