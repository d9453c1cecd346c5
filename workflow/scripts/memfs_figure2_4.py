#!/usr/bin/env python3
"""Figure 2.4: MTC Envelope bandwidth vs nodes, per file size (from the tidy table only)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memfs_common as mc

if __name__ == "__main__":
    a = mc.figure_args(__doc__)
    mc.plot_envelope(mc.load(a.measurements), json.loads(a.cfg), "bw", a.out)
