"""Synthetic nucleotide database and queries for the BLAST workflow.

A random ACGT database of ``db_bp`` bases in contigs of ``contig_bp``, split
into ``fragments`` files with exonerate's ``fastasplit`` (as the paper split
NCBI nt).  ``queries`` query files of ``seqs_per_query`` sequences each are
cut from random contigs with ``mutation_rate`` substitutions, so that every
query's true origin (contig, fragment, offset) is known; the manifest records
it, and verification checks that blastn finds it.

Deterministic for given parameters.  Writes ``db/`` (the fragments, named
``frag_NNNN.fa``), ``queries/q_NNNN.fa`` and ``manifest.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from mtcwf import generator_main

BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def _wrap(seq: bytes, width: int = 70) -> bytes:
    return b"\n".join(seq[i:i + width] for i in range(0, len(seq), width))


def generate(outdir: str | os.PathLike, db_bp: int = 2_000_000, fragments: int = 8, queries: int = 4,
             seqs_per_query: int = 4, query_bp: int = 400, contig_bp: int = 20_000,
             mutation_rate: float = 0.02, seed: int = 7) -> dict:
    if fragments < 1 or queries < 1 or seqs_per_query < 1:
        raise ValueError("fragments, queries and seqs_per_query must be >= 1")
    ncontigs = max(fragments, db_bp // contig_bp)
    if query_bp >= contig_bp:
        raise ValueError("query_bp must be shorter than contig_bp")
    if not shutil.which("fastasplit"):
        raise RuntimeError("fastasplit (Debian package exonerate) is not installed")
    rng = np.random.default_rng(seed)
    out = Path(outdir)
    dbdir, qdir = out / "db", out / "queries"
    for d in (dbdir, qdir):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    # where the queries come from, drawn first so that the database can be streamed
    # (the paper's 57 GB would not fit in memory)
    origins = []
    for q in range(queries):
        for s in range(seqs_per_query):
            origins.append((q, s, int(rng.integers(0, ncontigs)), int(rng.integers(0, contig_bp - query_bp))))
    wanted: dict[int, list[int]] = {}
    for i, (_, _, ci, _) in enumerate(origins):
        wanted.setdefault(ci, []).append(i)
    cut: dict[int, bytes] = {}
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        whole = Path(tmp) / "db.fa"
        with open(whole, "wb") as fh:
            for i in range(ncontigs):
                seq = BASES[rng.integers(0, 4, contig_bp)].tobytes()
                for j in wanted.get(i, ()):
                    off = origins[j][3]
                    cut[j] = seq[off:off + query_bp]
                fh.write(f">contig{i:06d} synthetic\n".encode() + _wrap(seq) + b"\n")
        split = Path(tmp) / "split"
        split.mkdir()
        r = subprocess.run(["fastasplit", "-f", str(whole), "-o", str(split), "-c", str(fragments)],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"fastasplit failed: {r.stderr.strip()}")
        chunks = sorted(split.iterdir())
        if len(chunks) != fragments:
            raise RuntimeError(f"fastasplit made {len(chunks)} chunks, expected {fragments}")
        contig_frag = {}
        frag_info = []
        for k, ch in enumerate(chunks):
            name = f"frag_{k:04d}.fa"
            shutil.move(str(ch), dbdir / name)
            n = 0
            with open(dbdir / name, "rb") as fh:
                for ln in fh:
                    if ln.startswith(b">"):
                        contig_frag[ln[1:].split()[0].decode()] = name
                        n += 1
            frag_info.append({"name": name, "contigs": n, "bytes": (dbdir / name).stat().st_size})
    truth = []
    parts: dict[int, list[bytes]] = {}
    for j, (q, s, ci, off) in enumerate(origins):
        seq = bytearray(cut[j])
        nmut = int(round(mutation_rate * query_bp))
        for pos in rng.choice(query_bp, size=nmut, replace=False):
            old = seq[pos]
            seq[pos] = int(rng.choice([b for b in BASES if b != old]))
        sid = f"q{q:04d}s{s:03d}"
        cid = f"contig{ci:06d}"
        parts.setdefault(q, []).append(b">" + sid.encode() + b"\n" + _wrap(bytes(seq)) + b"\n")
        truth.append({"query_file": f"q_{q:04d}.fa", "seq": sid, "contig": cid, "fragment": contig_frag[cid],
                      "offset": off, "length": query_bp, "mutations": nmut})
    for q in range(queries):
        (qdir / f"q_{q:04d}.fa").write_bytes(b"".join(parts[q]))
    manifest = {
        "kind": "blast-synthetic", "db_bp": ncontigs * contig_bp, "contig_bp": contig_bp,
        "contigs": ncontigs, "fragments": frag_info, "queries": [f"q_{q:04d}.fa" for q in range(queries)],
        "seqs_per_query": seqs_per_query, "query_bp": query_bp, "mutation_rate": mutation_rate,
        "seed": seed, "truth": truth,
        "input_bytes": int(sum(f["bytes"] for f in frag_info)
                           + sum((qdir / q).stat().st_size for q in os.listdir(qdir))),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None):
    names = ("db_bp", "fragments", "queries", "seqs_per_query", "query_bp", "contig_bp", "mutation_rate", "seed")
    out, _, m = generator_main(generate, names, __doc__, argv)
    print(f"blast db: {m['db_bp']} bp in {len(m['fragments'])} fragments, {len(m['queries'])} query files -> {out}")


if __name__ == "__main__":
    main()
