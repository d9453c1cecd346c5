#!/usr/bin/env python3
"""Figure 2.4: MTC Envelope bandwidth vs nodes, per file size (from the tidy table only)."""

from studies.memfs import common as mc

if __name__ == "__main__":
    a, cfg = mc.figure_args(__doc__)
    mc.plot_envelope(mc.load(a.measurements), cfg, "bw", a.out)
