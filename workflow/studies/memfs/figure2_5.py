#!/usr/bin/env python3
"""Figure 2.5: MTC Envelope throughput (read()/write() calls per second) vs nodes, per file size."""

from studies.memfs import common as mc

if __name__ == "__main__":
    a, cfg = mc.figure_args(__doc__)
    mc.plot_envelope(mc.load(a.measurements), cfg, "tput", a.out)
