"""The serverless study's start-up check of the site edits a cluster run needs (mode kubernetes):
the first job of a cluster run; every run job takes its output as input, so an unedited
placeholder stops the run before any platform is touched, naming the key (layout.site_problems).
Locally (mode standin) it is not part of the plan.

    python3 -m studies.serverless.site_check --config CFG --out results/serverless/site_check.json
        [--cores-per-node N]     # cluster.cores_per_node: the driver node needs serverless.director_cores

With the edits in place it also compares the kubeconfig's nodes with serverless.cluster_shape (the
paper's 4 nodes x 4 vCPUs, 8 GB) and writes the comparison into its output; a mismatch is reported
there and in every run's raw record, not refused (cluster_shape.py).
"""

from __future__ import annotations

import json
import sys

from repro import cli

from studies.serverless import layout


def main(argv=None) -> int:
    a, cfg = cli.finish(cli.options(cli.parser(__doc__, "out"), cores_per_node=0), argv)
    problems = layout.site_problems(cfg, a.cores_per_node or None)
    if problems:
        print("serverless: the cluster config needs site edits (config/config.yaml or an overlay):\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    from pathlib import Path

    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    from studies.serverless import cluster_shape

    shape = cluster_shape.check(cfg) if cfg["mode"] == "kubernetes" else None
    if shape and shape["mismatch"]:
        print("serverless: the cluster differs from the paper's (reported in the records):\n  "
              + "\n  ".join(shape["mismatch"]), file=sys.stderr)
    Path(a.out).write_text(json.dumps({"mode": cfg["mode"], "kubeconfig": cfg["kubeconfig"],
                                       "iperf_host": cfg["limit"]["iperf_host"],
                                       "echo_url": cfg["limit"]["echo_url"],
                                       "director_cores": cfg["director_cores"], "cores_per_node": a.cores_per_node,
                                       "cluster_shape": shape}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
