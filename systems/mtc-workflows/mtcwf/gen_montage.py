"""Synthetic Montage sky: an N x N grid of TAN-projection FITS tiles.

Every tile sees the same star field (one catalogue of stars over the whole
region), has its own background plane ``a + b*x + c*y`` (what mBgModel /
mBackground must remove) and Gaussian noise; neighbouring tiles overlap by
``overlap`` (0.3: at 0.2 mBgModel dropped thin overlaps, MACHINE-FACTS).
The sky is centred near M17 (RA 275.2, Dec -16.2), like the paper's mosaics.

Deterministic for a given (grid, npix, seed). Writes ``raw/tile_RR_CC.fits``
and ``manifest.json`` (tile centres, planted background planes, sizes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from mtcwf import generator_main

CENTER_RA = 275.2
CENTER_DEC = -16.2


def _wcs(ra, dec, npix, scale_deg):
    from astropy.wcs import WCS

    w = WCS(naxis=2)
    w.wcs.ctype = ["RA---TAN", "DEC--TAN"]
    w.wcs.crval = [ra, dec]
    w.wcs.crpix = [(npix + 1) / 2.0, (npix + 1) / 2.0]
    w.wcs.cdelt = [-scale_deg, scale_deg]
    w.wcs.equinox = 2000.0
    w.wcs.radesys = "FK5"
    return w


def generate(outdir: str | os.PathLike, grid: int = 4, npix: int = 256, overlap: float = 0.3,
             scale_arcsec: float = 1.0, stars_per_tile: int = 60, seed: int = 1) -> dict:
    from astropy.io import fits

    if grid < 1 or npix < 32:
        raise ValueError("grid >= 1 and npix >= 32 required")
    if not 0.05 <= overlap < 0.9:
        raise ValueError("overlap must be in [0.05, 0.9)")
    rng = np.random.default_rng(seed)
    out = Path(outdir)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    scale = scale_arcsec / 3600.0
    step = npix * (1.0 - overlap)  # tile-centre spacing in pixels of the central plane
    central = _wcs(CENTER_RA, CENTER_DEC, 1, scale)  # crpix 1: offsets are pixel offsets
    # star catalogue in the central tangent plane (pixels), then to the sky
    half = (grid - 1) * step / 2.0 + npix / 2.0 + 8
    nstars = int(stars_per_tile * (2 * half / npix) ** 2)
    sx = rng.uniform(-half, half, nstars)
    sy = rng.uniform(-half, half, nstars)
    flux = rng.lognormal(mean=6.0, sigma=1.0, size=nstars)
    sra, sdec = central.all_pix2world(sx + 1, sy + 1, 1)
    sigma_psf = 1.6
    tiles = []
    yy, xx = np.mgrid[0:npix, 0:npix]
    for r in range(grid):
        for c in range(grid):
            ox = (c - (grid - 1) / 2.0) * step
            oy = (r - (grid - 1) / 2.0) * step
            ra, dec = central.all_pix2world([[ox + 1, oy + 1]], 1)[0]
            w = _wcs(float(ra), float(dec), npix, scale)
            px, py = w.all_world2pix(sra, sdec, 0)
            img = np.zeros((npix, npix), dtype=np.float64)
            inside = (px > -6) & (px < npix + 6) & (py > -6) & (py < npix + 6)
            for x0, y0, f in zip(px[inside], py[inside], flux[inside]):
                x1, x2 = max(int(x0) - 6, 0), min(int(x0) + 7, npix)
                y1, y2 = max(int(y0) - 6, 0), min(int(y0) + 7, npix)
                if x1 >= x2 or y1 >= y2:
                    continue
                gx = xx[y1:y2, x1:x2] - x0
                gy = yy[y1:y2, x1:x2] - y0
                img[y1:y2, x1:x2] += f / (2 * np.pi * sigma_psf**2) * np.exp(-(gx**2 + gy**2) / (2 * sigma_psf**2))
            bg_a = float(rng.uniform(50.0, 150.0))
            bg_b = float(rng.uniform(-0.05, 0.05))
            bg_c = float(rng.uniform(-0.05, 0.05))
            img += bg_a + bg_b * (xx - npix / 2) + bg_c * (yy - npix / 2)
            img += rng.normal(0.0, 2.0, img.shape)
            hdr = w.to_header()
            hdr["BUNIT"] = "DN"
            hdr["ORIGIN"] = "repro mtc-workflows synthetic sky"
            name = f"tile_{r:02d}_{c:02d}.fits"
            fits.PrimaryHDU(img.astype(np.float32), header=hdr).writeto(raw / name, overwrite=True)
            tiles.append({"name": name, "row": r, "col": c, "ra": float(ra), "dec": float(dec),
                          "bg": [bg_a, bg_b, bg_c], "bytes": (raw / name).stat().st_size})
    manifest = {
        "kind": "montage-synthetic", "grid": grid, "npix": npix, "overlap": overlap,
        "scale_arcsec": scale_arcsec, "seed": seed, "center": [CENTER_RA, CENTER_DEC],
        "stars": int(nstars), "tiles": tiles,
        "input_bytes": int(sum(t["bytes"] for t in tiles)),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None):
    out, opts, m = generator_main(generate, ("grid", "npix", "overlap", "seed"), __doc__, argv)
    print(f"montage sky: {len(m['tiles'])} tiles of {opts['npix']}^2, {m['input_bytes'] / 1e6:.1f} MB -> {out}")


if __name__ == "__main__":
    main()
