"""The mpifuse study's claims: shapes that should hold on any hardware, absolute numbers as info."""

from __future__ import annotations

import math

import pandas as pd
from repro import claims as C

from . import analysis
from .layout import STUDY, VARIANTS, expected_source_reads, fs_options

OUT = {
    "table1": "results/mpifuse/tables/table1.csv",
    "ratios": "results/mpifuse/tables/ratios.csv",
    "figure4": "results/mpifuse/tables/figure4.csv",
    "figure5": "results/mpifuse/tables/figure5.csv",
    "bytes": "results/mpifuse/tables/bytes_from_source.csv",
    "measurements": "results/mpifuse/measurements.csv",
}


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _f(x, nd=3) -> str:
    return "n/a" if _nan(x) else f"{x:.{nd}f}"


def build(df: pd.DataFrame, cfg: dict, pub: pd.DataFrame) -> list[C.Claim]:
    t1 = analysis.table1(df, cfg, pub)
    rt = analysis.ratios(df, cfg, pub)
    f4 = analysis.figure4(df, cfg)
    f5 = analysis.figure5(df, cfg)
    stats = analysis.time_stats(df)
    size = analysis.largest_size(cfg["sizes"])
    small = min(cfg["sizes"], key=analysis.size_bytes)
    n1, nmax = min(cfg["nodes"]), max(cfg["nodes"])
    srcs = cfg["sources"]
    out: list[C.Claim] = []
    source_of: dict[int, str | None] = {}  # claim -> the source whose runs it reads (None: all)

    def base(cid, text, ref, output, kind_src=None, unit=""):
        kinds = analysis.kinds(df, kind_src) if kind_src else analysis.kinds(df)
        c = C.Claim(STUDY, cid, text, ref, "mpifuse", output, unit=unit, system_kind=kinds or "real")
        source_of[id(c)] = kind_src
        return c

    def row(source, variant):
        r = t1[(t1.source == source) & (t1.variant == variant)]
        return r.iloc[0] if len(r) else None

    def cell(source, variant, col):
        r = row(source, variant)
        return r[col] if r is not None else math.nan

    def holds(cond_values, cond):
        return None if any(_nan(v) for v in cond_values) else bool(cond)

    # S1: OSR slows down less than native Home from the smallest to the largest node count
    if "home" in srcs:
        inc_o, inc_n = cell("home", "osr", "increase"), cell("home", "native", "increase")
        out.append(C.shape_claim(
            base("osr_scales_better_than_native_home",
                 f"OSR's slowdown from {n1} to {nmax} nodes is smaller than native Home's ({size} file)",
                 "Table I; Section VI (1.617 vs 2.910)", OUT["table1"], "home"),
            holds([inc_o, inc_n], inc_o < inc_n),
            f"OSR x{_f(inc_o)} < native Home x{_f(inc_n)}", "OSR x1.617 < /home x2.910"))
        # S6: native home is bandwidth-bound
        out.append(C.shape_claim(
            base("native_home_bandwidth_bound",
                 f"native Home gets clearly slower with more nodes on the largest file (increase >= 1.5 from "
                 f"{n1} to {nmax} nodes)", "Table I; Section V (7.35 s -> 21.41 s)", OUT["table1"], "home"),
            holds([inc_n], inc_n >= 1.5), f"x{_f(inc_n)}", ">= 1.5 (paper x2.910)"))

    # S2: native Scratch is the fastest use case at the largest size and node count
    if "scratch" in srcs:
        cand = t1[["source", "variant", "time_max_nodes_s"]].dropna()
        if len(cand) and not cand[(cand.source == "scratch") & (cand.variant == "native")].empty:
            best = cand.loc[cand["time_max_nodes_s"].idxmin()]
            ok = best["source"] == "scratch" and best["variant"] == "native"
            obs = (f"fastest: {best['source']} {best['variant']} {_f(best['time_max_nodes_s'])} s; native Scratch "
                   f"{_f(float(cand[(cand.source == 'scratch') & (cand.variant == 'native')]['time_max_nodes_s'].iloc[0]))} s")
        else:
            ok, obs = None, "not run"
        out.append(C.shape_claim(
            base("native_scratch_fastest", f"native Scratch is the fastest of all use cases ({size}, {nmax} nodes)",
                 "Table I (1.427 s vs >= 12.4 s)", OUT["table1"]), ok, obs, "native Scratch fastest"))
        # S9: passthrough pays the FUSE overhead on the fast file system
        tp, tn = cell("scratch", "passthrough", "time_max_nodes_s"), cell("scratch", "native", "time_max_nodes_s")
        out.append(C.shape_claim(
            base("passthrough_fuse_overhead_scratch",
                 f"FUSE passthrough is slower than native Scratch ({size}, {nmax} nodes): the FUSE overhead",
                 "Table I; Section VI (12.426 s vs 1.427 s)", OUT["table1"], "scratch"),
            holds([tp, tn], tp > tn), f"passthrough {_f(tp)} s > native {_f(tn)} s",
            "passthrough > native"))

    # S3: broadcast no copy is slower than broadcast to /dev/shm (largest size, most nodes)
    for source in srcs:
        a, b = row(source, "bcast-nocopy"), row(source, "bcast-shm")
        ta, tb = cell(source, "bcast-nocopy", "time_max_nodes_s"), cell(source, "bcast-shm", "time_max_nodes_s")
        pa, pb = (a["published_time_24_nodes_s"], b["published_time_24_nodes_s"]) if a is not None and b is not None \
            else (math.nan, math.nan)
        out.append(C.shape_claim(
            base(f"bcast_nocopy_slower_than_shm_{source}",
                 f"Bcast no copy is slower than Bcast to /dev/shm on {source} ({size}, {nmax} nodes)",
                 "Table I; Section VI", OUT["table1"], source),
            holds([ta, tb], ta > tb), f"{_f(ta)} s > {_f(tb)} s", f"{_f(pa)} s > {_f(pb)} s"))

    # S10: the broadcast use cases scale worse than OSR on Home
    if "home" in srcs:
        inc_o = cell("home", "osr", "increase")
        incs = {v: row("home", v)["increase"] for v in ("bcast-local", "bcast-shm", "bcast-nocopy")
                if v in cfg["variants"] and row("home", v) is not None}
        out.append(C.shape_claim(
            base("bcast_scales_worse_than_osr_home",
                 f"every broadcast use case slows down more than OSR from {n1} to {nmax} nodes on Home ({size})",
                 "Table I (3.175 / 3.486 / 6.518 vs 1.617)", OUT["table1"], "home"),
            holds([inc_o] + list(incs.values()), all(x > inc_o for x in incs.values())) if incs else None,
            "OSR x" + _f(inc_o) + "; " + ", ".join(f"{v} x{_f(x)}" for v, x in incs.items()),
            "every Bcast increase > OSR increase"))

    # S4: bytes read from the source: 1x for the designs that read once, n x otherwise
    b = analysis.ok(df, "bytes_from_source").copy()
    if len(b):
        b["factor"] = b["value"] / b["size"].map(analysis.size_bytes)
        b["want"] = [expected_source_reads(v, int(n)) for v, n in zip(b["variant"], b["nodes"])]
        big = b[b["size"].map(analysis.size_bytes) >= 1_000_000]
        dev = (big["factor"] / big["want"] - 1).abs()
        once = big[big["want"] == 1]["factor"]
        many = big[(big["want"] > 1)]
        obs = (f"read-once designs {_f(once.min(), 3)}-{_f(once.max(), 3)}x the file over {len(once)} runs; "
               f"native/passthrough {_f((many['factor'] / many['want']).min(), 3)}-"
               f"{_f((many['factor'] / many['want']).max(), 3)} x n over {len(many)} runs (files >= 1 MB)")
        ok = bool((dev <= cfg["sanity"]["bytes_rel_tol"] + 1e-9).all()) if len(big) else None
    else:
        ok, obs = None, "not run"
    out.append(C.shape_claim(
        base("bytes_from_source_once",
             "OSR, OSR refined and the broadcast use cases read the file once from the source file system (1x), "
             "native and passthrough n times", "Section III; Section VII (< 4 % of the bandwidth at 24 nodes)",
             OUT["bytes"]), ok, obs, "1x vs n x the file size"))
    link = analysis.ok(df, "link_bytes")
    if len(link):
        d = link[(link["size"] == size) & (link["nodes"] == nmax)].copy()
        d["factor"] = d["value"] / analysis.size_bytes(size)
        f = d.groupby("variant")["factor"].mean()
        once = [f[v] for v in f.index if VARIANTS[v].reads == "1"]
        many = [f[v] / nmax for v in f.index if VARIANTS[v].reads == "n"]
        ok = bool(once and many and max(once) < 1.3 and min(many) > 0.9) if once and many else None
        out.append(C.shape_claim(
            base("home_link_bytes", f"on the emulated Home server link ({size}, {nmax} nodes) the read-once designs "
                 f"carry ~1x the file, native and passthrough ~{nmax}x", "Section III", OUT["bytes"], "home"),
            ok, "; ".join(f"{v} {x:.2f}x" for v, x in f.items()), f"1x vs {nmax}x (+ protocol overhead)"))

    # S5: OSR without the metadata buffer is faster than OSR with it (largest size, every node count)
    for source in srcs:
        d = f5[(f5.source == source) & (f5["size"] == size)]
        sv = d["saving_s"].tolist()
        out.append(C.shape_claim(
            base(f"refined_faster_than_osr_{source}",
                 f"OSR without the metadata buffer is faster than with it at every node count ({source}, {size})",
                 "Figure 5; Section V (>= 5 s saved at 1 GB)", OUT["figure5"], source),
            holds(sv, all(x > 0 for x in sv)) if sv else None,
            "saving " + ", ".join(f"n={n}: {_f(x)} s" for n, x in zip(d["nodes"], sv)), "saving > 0 at every n"))
        s_small = f5[(f5.source == source) & (f5["size"] == small)]["saving_s"].mean()
        s_big = f5[(f5.source == source) & (f5["size"] == size)]["saving_s"].mean()
        out.append(C.shape_claim(
            base(f"refined_saving_grows_with_size_{source}",
                 f"the metadata buffer's cost grows with the file size ({source}: saving at {size} > at {small})",
                 "Section VI (depends on the size, not the node count)", OUT["figure5"], source),
            holds([s_small, s_big], s_big > s_small), f"{_f(s_big)} s > {_f(s_small)} s",
            "saving(largest) > saving(smallest)"))

    # S8: refined OSR beats native Home with enough nodes
    if "home" in srcs:
        d = f5[(f5.source == "home") & (f5["size"] == size)].sort_values("nodes")
        beats = d[d["osr-refined_mean_s"] < d["native_mean_s"]]["nodes"].tolist()
        at_max = d[d.nodes == nmax]
        r = float(at_max["refined_vs_native"].iloc[0]) if len(at_max) else math.nan
        out.append(C.shape_claim(
            base("refined_beats_native_home", f"OSR without the metadata buffer is faster than native Home at "
                 f"{nmax} nodes ({size})", "Figure 5; Abstract (8 % faster at 16 nodes, from 8 nodes on)",
                 OUT["figure5"], "home"),
            holds([r], r < 1), f"t(refined)/t(native) = {_f(r)}; faster at n = {beats}",
            "< 1 (paper: from 8 nodes on)"))

    # S7: ratio OSR > ratio Bcast no copy (paper ~22 vs ~8)
    if "home" in srcs:
        ro = rt[(rt.source == "home") & (rt.variant == "osr")]["ratio"]
        rb = rt[(rt.source == "home") & (rt.variant == "bcast-nocopy")]["ratio"]
        ro = float(ro.iloc[0]) if len(ro) else math.nan
        rb = float(rb.iloc[0]) if len(rb) else math.nan
        out.append(C.shape_claim(
            base("ratio_osr_above_bcast", "OSR's bandwidth-reduction to latency-increase ratio is larger than the "
                 "broadcast's (Bcast no copy) on Home", "Section VII (~22 vs ~8)", OUT["ratios"], "home"),
            holds([ro, rb], ro > rb), f"OSR {_f(ro, 2)} > Bcast no copy {_f(rb, 2)}", "~22 > ~8"))
        for v in ("osr", "osr-refined", "bcast-local", "bcast-shm", "bcast-nocopy"):
            r = rt[(rt.source == "home") & (rt.variant == v)]
            if not len(r):
                continue
            r = r.iloc[0]
            out.append(C.info_claim(
                base(f"ratio_{v}", f"bandwidth-reduction to latency-increase ratio, {VARIANTS[v].label} on Home "
                     f"({nmax} nodes: reduction {nmax}, latency x{_f(r['latency_increase'], 2)})",
                     "Section VII; Table I", OUT["ratios"], "home", unit="ratio"),
                _f(r["ratio"], 2), _ratio_pub(r)))

    # S11: OSR is the slowest use case with small files on many nodes (Home)
    if "home" in srcs and nmax > 2:
        d = stats[(stats.source == "home") & (stats["size"] == small) & (stats.nodes == nmax)
                  & (stats.variant.isin([v for v in cfg["variants"] if v != "osr-refined"]))]
        if len(d) and "osr" in set(d.variant):
            worst = d.loc[d["mean"].idxmax()]
            ok, obs = bool(worst["variant"] == "osr"), f"slowest: {worst['variant']} {_f(worst['mean'])} s"
        else:
            ok, obs = None, "not run"
        out.append(C.shape_claim(
            base("osr_slowest_small_files", f"OSR is the slowest use case with the smallest file on {nmax} nodes "
                 f"({small}, Home)", "Section V (worst with small files and more than two nodes)", OUT["table1"],
                 "home"), ok, obs, "OSR slowest"))

    # S12: Figure 4 -- MPI communication is the largest factor
    for fs, comp in (("OSR", "read (MPI_Get)"), ("Naive", "broadcast")):
        d = f4[(f4.file_system == fs) & (~f4.component.isin(["total", "remaining", "read calls per node"]))]
        if len(d) and d["mean_s"].notna().all():
            top = d.loc[d["mean_s"].idxmax()]
            ok, obs = bool(top["component"] == comp), f"largest: {top['component']} {_f(top['mean_s'])} s"
        else:
            ok, obs = None, "not run"
        c4 = cfg["figure4"]
        out.append(C.shape_claim(
            base(f"figure4_mpi_dominates_{fs.lower()}",
                 f"{fs}: the MPI communication ({comp}) is the largest performance factor "
                 f"({c4['size']}, {c4['nodes']} nodes, {c4['source']})", "Figure 4; Section VI", OUT["figure4"],
                 c4["source"]), ok, obs, f"{comp} largest (paper: {'16.7 of 26.4' if fs == 'OSR' else '13.4 of 21.4'} s)"))

    # info: Table I times beside the published ones
    for _, r in t1.iterrows():
        for col, pcol, nn in (("time_min_nodes_s", "published_time_1_node_s", r["nodes_min"]),
                              ("time_max_nodes_s", "published_time_24_nodes_s", r["nodes_max"])):
            pn = 1 if col == "time_min_nodes_s" else 24
            out.append(C.info_claim(
                base(f"table1_{r['source']}_{r['variant']}_n{nn}", f"{r['source']} {r['use_case']}: time at {nn} "
                     f"node(s), {r['size']} (paper: {pn} node(s), 1 GB)", "Table I", OUT["table1"], r["source"], "s"),
                None if _nan(r[col]) else round(float(r[col]), 4),
                "" if _nan(r[pcol]) else r[pcol]))
    # info: OSR vs native Home at the largest node count (paper: 7.85 % slower)
    if "home" in srcs:
        o, nat = row("home", "osr"), row("home", "native")
        if o is not None and nat is not None and not _nan(nat["time_max_nodes_s"]):
            pct = (o["time_max_nodes_s"] / nat["time_max_nodes_s"] - 1) * 100
            out.append(C.info_claim(
                base("osr_vs_native_home_max_nodes", f"OSR vs native Home at {nmax} nodes ({size}): slower by",
                     "Section V (1.68 s or 7.85 % slower at 24 nodes)", OUT["table1"], "home", "%"),
                None if _nan(pct) else round(float(pct), 1), _pub(pub, "slower_than_native", "OSR")))
    for _, r in f4[f4.component != "read calls per node"].iterrows():
        pub_v = pub[(pub["source"] == "001 Figure 4 text")]
        out.append(C.info_claim(
            base(f"figure4_{r['file_system'].lower()}_{r['component'].split(' ')[0].lower()}",
                 f"Figure 4 {r['file_system']}: {r['component']} ({r['size']}, {r['nodes']} nodes, {r['source']})",
                 "Figure 4; Section V", OUT["figure4"], r["source"], "s"),
            None if _nan(r["mean_s"]) else round(float(r["mean_s"]), 4),
            _fig4_pub(pub_v, r["file_system"], r["component"])))
    _mark_failed(out, df, source_of)
    notes = _notes(cfg)
    for c in out:
        for prefix, note in notes.items():
            if c.claim_id.startswith(prefix) and not c.note:
                c.note = note
    return out


def _mark_failed(out: list[C.Claim], df: pd.DataFrame, source_of: dict[int, str | None]) -> None:
    """A claim with nothing to evaluate because runs it reads failed is 'failed', not 'not run'."""
    failed = df[df["status"] == "failed"].drop_duplicates(subset=analysis.KEYS + ["rep"])
    for c in out:
        if c.verdict != C.NOT_RUN:
            continue
        src = source_of.get(id(c))
        f = failed if src is None else failed[failed["source"] == src]
        if len(f):
            c.verdict = C.FAILED
            where = f"on {src} " if src else ""
            c.note = (f"{len(f)} run(s) {where}failed, so nothing to evaluate (failure records under "
                      f"results/mpifuse/failed/)" + (f"; {c.note}" if c.note else ""))


_STREAM = ("mpifuse's broadcast file system streams the file in fixed blocks from one MPI thread per file and "
           "read() never calls MPI (MPI_Bcast inside read() callbacks hangs when readers' request patterns "
           "differ), so a reader no longer waits for the slowest node between broadcasts -- the paper's "
           "explanation of Bcast no copy's slowness")
_ONE_HOST = ("on one host the n nodes share its CPU cores: every sha256sum, FUSE copy and MPI transfer "
             "competes for them, so CPU-bound use cases slow down with n where separate nodes would not")


def _bcast_note(cfg: dict) -> str:
    """How the broadcast file system of these runs was paced (fs_options of mode bcast)."""
    o = fs_options(cfg, "bcast")
    if not o.get("bcast_on_demand"):
        return _STREAM
    depth = int(o.get("bcast_depth", 4))
    pace = ("in lockstep, block by block" if depth == 1
            else f"at most {depth - 1} block(s) ahead of the slowest reader")
    sync = ("with an MPI barrier before every block" if o.get("bcast_sync", "auto") in ("auto", "barrier")
            else "without a barrier (paced by the broadcast's own rendezvous)")
    req = o.get("max_read", "")
    return ("mpifuse's broadcast file system ran on demand, paced like the paper's Naive design: the file is "
            f"broadcast in {o.get('block', '4MiB')} blocks {pace}, {sync}, each block only once every node "
            "that holds the file open has asked for it"
            + (f" (FUSE requests of {req}, one block each, as the paper's ~7630 read calls per GB)"
               if req and str(req) == str(o.get("block")) else "")
            + ", so every node waits for the slowest node's reader before each broadcast; unlike the paper the "
            "broadcasts are posted by one MPI thread per file instead of inside read() (MPI_Bcast inside read() "
            "callbacks hangs when the readers' request patterns differ), and a node that closed the file stops "
            "holding the others back")


def _notes(cfg: dict) -> dict:
    bcast = _bcast_note(cfg)
    shared = ("on one host the n nodes share its CPU cores, so a node waiting for the slowest reader leaves its "
              "core to the others, which can soften the cost of waiting that separate nodes pay in full")
    if bcast is _STREAM:
        shared = ""
    return {
        "bcast_nocopy_slower_than_shm": bcast + ("; " + shared if shared else ""),
        "bcast_scales_worse_than_osr": bcast + "; and OSR's first version does per-byte metadata work on every "
                                       "node (" + _ONE_HOST + ")",
        "ratio_osr_above_bcast": bcast,
        "native_scratch_fastest": "scratch here is a page-cached local directory, so every use case is CPU-bound; "
                                  + _ONE_HOST,
        "passthrough_fuse_overhead_scratch": "scratch here is a page-cached local directory; " + _ONE_HOST,
        "figure4_mpi_dominates": "hashing in memory is timed with all n nodes hashing at once, as in the test; "
                                 + _ONE_HOST,
        "osr_scales_better_than_native_home": "home is link-bound here (the emulated server link), as on the "
                                              "paper's cluster",
        "refined_faster_than_osr": "the saving is the per-byte metadata work, which grows with the file size",
    }


NOTES = _notes({})  # the notes of a configuration without bcast options (streaming)


def _ratio_pub(r) -> str:
    parts = []
    if not _nan(r["published_ratio_text"]):
        parts.append(f"{_f(r['published_ratio_text'], 0)} (text)")
    if not _nan(r["published_ratio_from_table1"]):
        parts.append(f"{_f(r['published_ratio_from_table1'], 1)} (Table I, 24 nodes)")
    return "; ".join(parts)


def _pub(pub, metric, use_case):
    r = pub[(pub["metric"] == metric) & (pub["use_case"] == use_case)]
    return r["value"].iloc[0] if len(r) else ""


def _fig4_pub(pub, fs, comp):
    m = {"total": "total", "open": "open", "read (MPI_Get)": "read", "read (source)": "read", "broadcast": "bcast",
         "FUSE overhead": "fuse_overhead", "hashing in memory": "hash_in_memory", "remaining": "remaining"}[comp]
    r = pub[(pub["metric"] == m) & (pub["use_case"].isin([fs, "both"]))]
    return r["value"].iloc[0] if len(r) else ""
