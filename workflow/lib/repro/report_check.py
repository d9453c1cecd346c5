#!/usr/bin/env python3
"""Look at the report as a person would: render it and check what came out.

HTML: every page under the report folder is loaded in headless Chromium (Debian's ``chromium``)
at an ordinary window width; a script run after the page's load event lists every image that did
not load (``naturalWidth`` 0) and every table whose right edge lies beyond the page's width. The
front page must link every study's page. One screenshot per page goes to ``screenshots/``.

PDF: every page is rasterised with ``pdftoppm``; a table cut off on the right leaves ink in the
right margin, so any non-white pixel in the outer 5 mm of a page is reported as an overflow.

Writes a JSON summary and exits 1 (naming each problem) when anything is wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WINDOW = (1200, 1000)
MARGIN_MM = 5.0
DPI = 50

PROBE = """
<script>
window.addEventListener('load', function () {
  var W = document.documentElement.clientWidth;
  var broken = [], wide = [], links = [];
  document.querySelectorAll('img').forEach(function (i) {
    if (!i.complete || i.naturalWidth === 0) broken.push(i.getAttribute('src').slice(0, 200));
  });
  document.querySelectorAll('table').forEach(function (t, k) {
    var r = t.getBoundingClientRect();
    if (r.right > W + 1) wide.push({table: k, right: Math.round(r.right), width: W,
                                    head: (t.rows[0] ? t.rows[0].innerText : '').slice(0, 80)});
  });
  document.querySelectorAll('a[href]').forEach(function (a) { links.push(a.getAttribute('href')); });
  var out = document.createElement('pre');
  out.id = 'repro-check';
  out.textContent = JSON.stringify({broken: broken, wide: wide, links: links,
                                    images: document.images.length, tables: document.querySelectorAll('table').length});
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("report_check: chromium is not installed (Debian: apt-get install chromium; ./repro setup does)")


def chrome_cmd(*extra: str) -> list[str]:
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--disable-dev-shm-usage", "--no-first-run", f"--window-size={WINDOW[0]},{WINDOW[1]}",
            "--virtual-time-budget=15000", *extra]


def check_page(page: Path, shots: Path | None) -> dict:
    """Render one page with the probe script; the probe's JSON from the DOM after load."""
    probe = page.with_name(f".check-{page.name}")
    text = page.read_text()
    probe.write_text(text.replace("</body>", PROBE + "</body>") if "</body>" in text else text + PROBE)
    try:
        with tempfile.TemporaryDirectory() as profile:
            out = subprocess.run(chrome_cmd(f"--user-data-dir={profile}", "--dump-dom", probe.resolve().as_uri()),
                                 capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink(missing_ok=True)
    m = re.search(r'<pre id="repro-check">(.*?)</pre>', out.stdout, re.S)
    if not m:
        return {"page": page.name, "error": f"the page did not finish loading in Chromium (rc {out.returncode}): "
                                            f"{out.stderr.strip()[-300:]}"}
    import html as _html

    res = json.loads(_html.unescape(m.group(1)))
    res["page"] = page.name
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        shot = shots / f"{page.stem}.png"
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run(chrome_cmd(f"--user-data-dir={profile}", f"--screenshot={shot}", page.resolve().as_uri()),
                           capture_output=True, text=True, timeout=180)
        res["screenshot"] = str(shot) if shot.exists() else None
    return res


def check_pdf(pdf: Path) -> list[dict]:
    """Ink in the right margin of any page = something ran off the page."""
    from PIL import Image

    if not shutil.which("pdftoppm"):
        sys.exit("report_check: pdftoppm is not installed (Debian: poppler-utils)")
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["pdftoppm", "-r", str(DPI), "-gray", "-png", str(pdf), f"{tmp}/p"], check=True, timeout=600)
        pages = sorted(Path(tmp).glob("p-*.png"), key=lambda p: int(p.stem.split("-")[-1]))
        strip = max(2, round(MARGIN_MM / 25.4 * DPI))
        for n, png in enumerate(pages, 1):
            im = Image.open(png).convert("L")
            w, h = im.size
            box = im.crop((w - strip, 0, w, h))
            lo, _ = box.getextrema()
            if lo < 200:
                problems.append({"pdf_page": n, "darkest_in_right_margin": lo})
    return problems + [{"pdf_pages": len(pages)}]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="paper", help="the report folder (index.html and the study pages)")
    ap.add_argument("--studies", default="", help="study names the front page must link (space-separated)")
    ap.add_argument("--pdf", default="", help="the PDF to check (optional)")
    ap.add_argument("--screenshots", default="", help="folder for one screenshot per page (optional)")
    ap.add_argument("--out", required=True, help="the JSON summary")
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    pages = sorted(p for p in folder.glob("*.html") if p.name != "print.html" and not p.name.startswith("."))
    shots = Path(args.screenshots) if args.screenshots else None
    results = [check_page(p, shots) for p in pages]
    problems = []
    for r in results:
        if "error" in r:
            problems.append(f"{r['page']}: {r['error']}")
            continue
        problems += [f"{r['page']}: image did not load: {b}" for b in r["broken"]]
        problems += [f"{r['page']}: table {w['table']} ({w['head']!r}) overflows the page: right edge "
                     f"{w['right']} px > {w['width']} px" for w in r["wide"]]
    front = next((r for r in results if r["page"] == "index.html"), None)
    if front is None:
        problems.append("index.html: no front page")
    elif "links" in front:
        for s in args.studies.split():
            if f"{s}.html" not in front["links"]:
                problems.append(f"index.html: the front page does not link the study {s!r}")
    pdf = []
    if args.pdf:
        pdf = check_pdf(Path(args.pdf))
        problems += [f"{args.pdf}: page {p['pdf_page']} has ink in its right margin "
                     f"(darkest {p['darkest_in_right_margin']})" for p in pdf if "pdf_page" in p]
    summary = {"pages": results, "pdf": pdf, "problems": problems, "ok": not problems}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, indent=1))
    os.replace(tmp, args.out)
    for p in problems:
        print(f"report_check: {p}", file=sys.stderr)
    print(f"report_check: {len(results)} pages, {sum(r.get('images', 0) for r in results)} images, "
          f"{sum(r.get('tables', 0) for r in results)} tables; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
