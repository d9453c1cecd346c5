"""The synthetic inputs are valid FITS / FASTA with the structure the workflows need."""

from __future__ import annotations

import json

import numpy as np


def test_montage_tiles_are_tan_fits_with_overlap(montage_inputs):
    from astropy.io import fits
    from astropy.wcs import WCS

    man = json.loads((montage_inputs / "manifest.json").read_text())
    assert len(man["tiles"]) == 9
    ws = {}
    for t in man["tiles"]:
        with fits.open(montage_inputs / "raw" / t["name"]) as hdul:
            hdul.verify("exception")
            data, hdr = hdul[0].data, hdul[0].header
        assert data.shape == (128, 128) and np.isfinite(data).all()
        assert hdr["CTYPE1"] == "RA---TAN" and hdr["CTYPE2"] == "DEC--TAN"
        ws[(t["row"], t["col"])] = WCS(hdr)
        # the planted background is there: the tile's median is near its plane's offset
        assert abs(np.median(data) - t["bg"][0]) < 15
    # neighbours overlap by ~30 %: tile (0,1)'s centre is 0.7 tile widths from (0,0)'s
    ra, dec = ws[(0, 1)].all_pix2world([[63.5, 63.5]], 0)[0]
    x, y = ws[(0, 0)].all_world2pix([[ra, dec]], 0)[0]
    assert abs(np.hypot(x - 63.5, y - 63.5) / 128 - 0.7) < 0.02


def test_montage_generator_is_deterministic(tmp_path, montage_inputs):
    from mtcwf import gen_montage

    gen_montage.generate(tmp_path, grid=3, npix=128, overlap=0.3, seed=3)
    for t in json.loads((montage_inputs / "manifest.json").read_text())["tiles"]:
        assert (tmp_path / "raw" / t["name"]).read_bytes() == (montage_inputs / "raw" / t["name"]).read_bytes()


def _read_fasta(path):
    seqs, name = {}, None
    for ln in path.read_text().splitlines():
        if ln.startswith(">"):
            name = ln[1:].split()[0]
            seqs[name] = []
        elif name:
            seqs[name].append(ln.strip())
    return {k: "".join(v) for k, v in seqs.items()}


def test_blast_fasta_fragments_and_planted_queries(blast_inputs):
    man = json.loads((blast_inputs / "manifest.json").read_text())
    frags = {f["name"]: _read_fasta(blast_inputs / "db" / f["name"]) for f in man["fragments"]}
    assert len(frags) == 4
    contigs = {}
    for name, seqs in frags.items():
        for cid, s in seqs.items():
            assert cid not in contigs, "a contig is in two fragments"
            assert set(s) <= set("ACGT") and len(s) == man["contig_bp"]
            contigs[cid] = (name, s)
    assert len(contigs) == man["contigs"]
    queries = {}
    for q in man["queries"]:
        queries.update(_read_fasta(blast_inputs / "queries" / q))
    assert len(queries) == len(man["truth"]) == 6
    for t in man["truth"]:
        frag, s = contigs[t["contig"]]
        assert frag == t["fragment"]
        origin = s[t["offset"]:t["offset"] + t["length"]]
        q = queries[t["seq"]]
        diffs = sum(a != b for a, b in zip(q, origin))
        assert len(q) == len(origin) and diffs == t["mutations"] > 0



def test_generator_command_lines_pass_their_options_with_generate_s_defaults(tmp_path, monkeypatch):
    """Each generator's own command line (no engine): every option reaches generate() with the
    type and default of generate()'s signature, and a given value wins."""
    import functools
    import inspect

    from mtcwf import gen_blast, gen_montage

    cases = ((gen_montage, {"grid": 3, "overlap": 0.25}, {"scale_arcsec", "stars_per_tile"}),
             (gen_blast, {"seqs_per_query": 5, "mutation_rate": 0.1}, set()))
    for mod, given, not_on_cli in cases:
        sig = inspect.signature(mod.generate)
        defaults = {k: p.default for k, p in sig.parameters.items() if k != "outdir"}
        seen = {}

        @functools.wraps(mod.generate)  # the fake has generate's signature
        def fake(*args, _sig=sig, _seen=seen, **kw):
            _seen.clear()
            _seen.update(_sig.bind(*args, **kw).arguments)
            return {"tiles": [], "input_bytes": 0, "db_bp": 0, "fragments": [], "queries": []}

        monkeypatch.setattr(mod, "generate", fake)
        mod.main(["--out", str(tmp_path)])
        passed = {k: v for k, v in seen.items() if k != "outdir"}
        assert set(passed) == set(defaults) - not_on_cli, mod.__name__
        assert {k: (v, type(v)) for k, v in passed.items()} == \
            {k: (defaults[k], type(defaults[k])) for k in passed}, mod.__name__
        mod.main(["--out", str(tmp_path)] + [a for k, v in given.items() for a in (f"--{k.replace('_', '-')}", str(v))])
        assert {k: seen[k] for k in given} == given, mod.__name__
