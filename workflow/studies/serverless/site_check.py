"""The serverless study's start-up check of the site edits a cluster run needs (mode kubernetes):
the first job of a cluster run; every run job takes its output as input, so an unedited
placeholder stops the run before any platform is touched, naming the key (layout.site_problems).
Locally (mode standin) it is not part of the plan.

    python3 -m studies.serverless.site_check --config CFG --out results/serverless/site_check.json
"""

from __future__ import annotations

import json
import sys

from repro import cli

from studies.serverless import layout


def main(argv=None) -> int:
    a, cfg = cli.parse(__doc__, "out", argv=argv)
    problems = layout.site_problems(cfg)
    if problems:
        print("serverless: the cluster config needs site edits (config/config.yaml or an overlay):\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    from pathlib import Path

    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"mode": cfg["mode"], "kubeconfig": cfg["kubeconfig"],
                                       "iperf_host": cfg["limit"]["iperf_host"],
                                       "echo_url": cfg["limit"]["echo_url"]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
