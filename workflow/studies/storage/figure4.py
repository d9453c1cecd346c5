"""Figure 4 (paper 002): COSBench average response time (main stage, all operations, ms) vs object
size and workers, per stack; the published statements in the title.

    python3 -m studies.storage.figure4 --config CFG --measurements M --published P --table T --out F
"""

from repro import cli

from studies.storage import cosfig

if __name__ == "__main__":
    args, cfg = cli.parse(__doc__, "measurements", "published", "table", "out")
    cosfig.draw(args, "avg_res_time", "average response time (ms)",
                "Fig. 4: COSBench Avg-ResTime vs object size and workers",
                ["best_response_time", "ceph_vs_size", "juicefs_vs_ceph"])
