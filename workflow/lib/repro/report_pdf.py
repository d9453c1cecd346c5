#!/usr/bin/env python3
"""paper/report.pdf from paper/print.html (every report page in one document; weasyprint)."""

import argparse
import os
import sys

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--html", required=True)
ap.add_argument("--pdf", required=True)
args = ap.parse_args()
try:
    import weasyprint
except ImportError:
    sys.exit("report_pdf: weasyprint is not installed (set report.pdf: false, or run ./repro setup)")
tmp = args.pdf + ".tmp"
weasyprint.HTML(filename=args.html).write_pdf(tmp)
os.replace(tmp, args.pdf)
print(f"report: {args.pdf}")
