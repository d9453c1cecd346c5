#!/usr/bin/env python3
"""fusespeed report -- from the speed benchmark's raw file only (every number recomputed here):

* read throughput on one node per variant and tool: GB/s min/median/max over the repeats and the
  per-round ratio to native (throughput(variant) / throughput(native) of the same repeat: native and
  the variant run seconds apart, so the pair's ratio follows the load of a shared machine better
  than a ratio of medians), min/median/max;
* the variants: paper-faithful or ours (beyond the paper), the paper's passthrough cost beside;
* issue 13's table: today's earlier values, this run's ratios, the target and met / not met;
* issue 22's table: refined OSR (and our map_source variant, and the paper's passthrough) per tool
  beside native and the FUSE ceiling (tools/fuseceiling with OSR refined's knobs) of the same
  rounds: the ceiling's own ratio to native, the variant's ratio to each (min/median/max), rounds
  above 1.0 counted as measurement errors, CPU of reader and file system, what bounds it;
* issue 30's table (where the run has the io_uring variants): refined OSR over /dev/fuse and over
  FUSE-over-io_uring beside both FUSE ceilings (over /dev/fuse and over io_uring) and the composite
  limit each gives with reading the source (1/composite = 1/native dd + 1/ceiling: the file system's
  read of its page-cached source, at native dd's rate, and the FUSE path with the reader's own work, at
  the ceiling's rate for the same tool, their per-byte costs added), per round: the ratio to each,
  what bounds it; a read asked over io_uring whose stats show the ring unused is failed;
* the per-request breakdown: FUSE requests the file system saw (count, mean size), time in its read
  path, MPI_Get, waits, copies where its counters have them, its CPU and the reader's;
* idle CPU per rank (fraction of a core) with every file system mounted and nothing read;
* bytes read from the source as the node count grows.

A measurement recorded as failed has no throughput and shows as failed; a kpassthrough measurement
whose server answered READ requests (the kernel did not pass the reads through) is failed too."""

from __future__ import annotations

import math
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd

from repro import cli, published, rawio, tidy
from repro.plotting import variant_label

# what each speed variant is: (paper-faithful?, description)
VARIANTS = {
    "native": (True, "the source file itself, no FUSE"),
    "passthrough": (True, "the paper's user-space FUSE passthrough (libmpifuse, libfuse 3.14: every READ "
                          "answered by the server with a pread)"),
    "passthrough-threads-on": (True, "the same, FUSE loop multithreaded (the study's option switched)"),
    "passthrough-threads-off": (True, "the same, FUSE loop single-threaded (the study's option switched)"),
    "osr": (True, "the paper's One-Sided Reading (MPI window, per-byte metadata buffer)"),
    "osr-refined": (False, "our refined OSR (own-part window, cached chunks)"),
    "kpassthrough": (False, "kernel FUSE passthrough (systems/kpassthrough, Rust/fuser): the server "
                            "registers each opened file as a backing file, the kernel serves the reads"),
    "osr-refined-map": (False, "our refined OSR with map_source: the own part's window is a mapping of the "
                               "source file (no load copy, open does not wait for the load)"),
    "fuse-ceiling": (False, "the FUSE ceiling (tools/fuseceiling): a preloaded file served from the daemon's "
                            "memory, no backend, with OSR refined's request size, readahead and threads"),
    "osr-refined-io_uring": (False, "our refined OSR over FUSE-over-io_uring (tools/fuseuring, libmpifuse -o "
                                    "io_uring: requests from per-CPU io_uring queues, not /dev/fuse reads)"),
    "osr-refined-map-io_uring": (False, "our refined OSR with map_source over FUSE-over-io_uring"),
    "fuse-ceiling-io_uring": (False, "the FUSE ceiling over FUSE-over-io_uring (fuseceiling --transport io_uring), "
                                     "otherwise the same as fuse-ceiling"),
}
CEILING = "fuse-ceiling"
CEILING_URING = "fuse-ceiling-io_uring"
URING_SUFFIX = "-io_uring"
# issue 30's rows: refined OSR (and map_source) over each transport, against both ceilings
ISSUE30 = ["osr-refined", "osr-refined-io_uring", "osr-refined-map", "osr-refined-map-io_uring"]
# issue 22's rows: (variant, tool, target on the median per-round ratio to native or None)
# (the paper's passthrough is not among them: it runs with other knobs, 128 KiB requests, than the
# ceiling, which takes OSR refined's)
ISSUE22 = [("osr-refined", "sha256sum", 0.95), ("osr-refined-map", "sha256sum", 0.95),
           ("osr-refined", "dd", None), ("osr-refined-map", "dd", None)]
NEAR_CEILING = 0.9  # x ceiling at or above this: the FUSE path bounds it, not the file system's own work
# issue 13's rows: what the issue measured before, the target on the per-round ratio to native
ISSUE13 = [
    {"row": "mpifuse refined OSR, n=1, {size}, {source}", "variant": "osr-refined", "tool": "sha256sum",
     "earlier": "0.303 vs native 0.347 GB/s (0.87x)", "target": 0.95},
    {"row": "FUSE passthrough (the paper's, user space), dd from a hot page cache", "variant": "passthrough",
     "tool": "dd", "earlier": "2.72 vs 7.8 GB/s (0.35x) / 1.34 vs 5.68 GB/s (0.24x)", "target": None},
    {"row": "kernel FUSE passthrough (ours), dd from a hot page cache", "variant": "kpassthrough", "tool": "dd",
     "earlier": "- (new; systems/kpassthrough/bench.py alone: per-round median 0.90-1.43x)", "target": 0.9},
    {"row": "kernel FUSE passthrough (ours), sha256sum", "variant": "kpassthrough", "tool": "sha256sum",
     "earlier": "- (new; systems/kpassthrough/bench.py alone: per-round median 0.91-1.31x)", "target": 0.9},
]
# libmpifuse counters shown in the breakdown when present (any other *_time_s / *cpu* counter too)
# libmpifuse's absolute process clocks (systems/mpifuse/README: "now (not reset)", "when the mount went
# live", ...): not per-read numbers by themselves; the breakdown shows the interval from the first open
ABSOLUTE = ("cpu_process_s", "cpu_at_mount_s", "cpu_at_first_open_s", "cpu_at_unmount_s")
FS_KEYS = ["read_calls", "read_bytes", "read_time_s", "read_wait_time_s", "mpi_get_calls", "mpi_get_time_s",
           "source_read_time_s", "meta_time_s", "open_time_s", "bytes_fetched_remote"]


def metrics(rec: dict) -> pd.DataFrame:
    rows = [{**m.get("labels", {}), "metric": m["metric"], "value": m["value"], "unit": m["unit"]}
            for m in rec["metrics"]]
    return pd.DataFrame(rows)


def failures(rec: dict) -> pd.DataFrame:
    """Failed one-node measurements: the raw file's own, plus kpassthrough rounds whose server
    answered READ requests (the kernel did not pass through: not the variant being measured)."""
    f = [dict(x) for x in rec.get("extra", {}).get("failures", []) if x.get("tool") != "idle"]
    for s in rec.get("extra", {}).get("fs_stats", []):
        why = ring_not_used(s)
        if why:
            f.append({"variant": s["variant"], "tool": s["tool"], "nodes": s.get("nodes", 1), "rep": int(s["rep"]),
                      "why": why})
    df = metrics(rec)
    if "metric" in df:
        bad = df[(df.metric == "server_read_requests") & (df.value > 0)]
        for _, r in bad.iterrows():
            f.append({"variant": r["variant"], "tool": r["tool"], "nodes": 1, "rep": int(r["rep"]),
                      "why": f"the server answered {int(r['value'])} READ requests: the kernel did not "
                             "pass the reads through"})
    return pd.DataFrame(f, columns=["variant", "tool", "nodes", "rep", "why"])


def ring_not_used(s: dict) -> str:
    """Why a read asked over io_uring (a *-io_uring variant) is not that variant: its stats show no request
    through the ring, or READs from /dev/fuse; "" when it is (or the variant is not an io_uring one)."""
    if not str(s.get("variant", "")).endswith(URING_SUFFIX):
        return ""
    st = s.get("stats") or {}
    tr = (st.get("fuseceiling") or st).get("transport")
    if not isinstance(tr, dict):
        return "asked for io_uring, its stats name no transport (a build without it)"
    if tr.get("transport") != "io_uring" or not tr.get("ring_reqs") or tr.get("dev_rw_reqs"):
        return (f"asked for io_uring, served through {tr.get('transport', '?')}: ring_reqs {tr.get('ring_reqs')}, "
                f"dev_rw_reqs {tr.get('dev_rw_reqs')} ({tr.get('message', '')})")
    return ""


def throughput(rec: dict) -> pd.DataFrame:
    """One row per (variant, tool) of the one-node part: GB/s and per-round ratios to native."""
    df = metrics(rec)
    fails = failures(rec)
    failed = {(r.variant, r.tool, int(r.rep)) for r in fails.itertuples()}
    one = df[(df.metric == "throughput") & (df.nodes == 1)].copy()
    one = one[[(v, t, int(r)) not in failed for v, t, r in zip(one.variant, one.tool, one.rep)]]
    nat = {(t, int(r)): v for t, r, v, var in zip(one.tool, one.rep, one.value, one.variant) if var == "native"}
    ceil = {(t, int(r)): v for t, r, v, var in zip(one.tool, one.rep, one.value, one.variant) if var == CEILING}
    order = rec.get("extra", {}).get("variants") or sorted(set(one.variant) | set(fails.variant))
    out = []
    for tool in ("dd", "sha256sum"):
        for v in order:
            g = one[(one.variant == v) & (one.tool == tool)]
            nf = int(((fails.variant == v) & (fails.tool == tool)).sum())
            ratios = [x / nat[(tool, int(r))] for r, x in zip(g.rep, g.value) if (tool, int(r)) in nat]
            cr = [x / ceil[(tool, int(r))] for r, x in zip(g.rep, g.value) if (tool, int(r)) in ceil]
            row = {"variant": v, "tool": tool, "ok": len(g), "failed": nf}
            if cr:
                c = pd.Series(cr)
                row.update(ceiling_ratio_min=c.min(), ceiling_ratio_median=c.median(), ceiling_ratio_max=c.max())
            if len(g):
                row.update(gbps_min=g.value.min(), gbps_median=g.value.median(), gbps_max=g.value.max())
            if ratios:
                s = pd.Series(ratios)
                row.update(ratio_min=s.min(), ratio_median=s.median(), ratio_max=s.max(), pairs=len(ratios),
                           time_vs_native=1 / s.median() - 1)
            dt = df[(df.metric == "dd_time") & (df.nodes == 1) & (df.tool == "dd")]
            if tool == "dd" and len(dt):  # the same pairs by dd's own elapsed time (no process start)
                dt = dt[[(x, "dd", int(r)) not in failed for x, r in zip(dt.variant, dt.rep)]]
                nd = {int(r): x for r, x, var in zip(dt.rep, dt.value, dt.variant) if var == "native"}
                own = [nd[int(r)] / x for r, x in zip(dt[dt.variant == v].rep, dt[dt.variant == v].value)
                       if int(r) in nd and x > 0]
                if own:
                    row["dd_own_ratio_median"] = float(pd.Series(own).median())
            for m, col in (("reader_cpu", "reader_cpu_s"), ("fs_cpu", "fs_cpu_s"), ("dd_time", "dd_time_s")):
                x = df[(df.metric == m) & (df.variant == v) & (df.tool == tool) & (df.nodes == 1)]
                if len(x):
                    row[col] = x.value.median()
            out.append(row)
    cols = ["variant", "tool", "ok", "failed", "gbps_min", "gbps_median", "gbps_max", "pairs", "ratio_min",
            "ratio_median", "ratio_max", "time_vs_native", "ceiling_ratio_min", "ceiling_ratio_median",
            "ceiling_ratio_max", "dd_own_ratio_median", "reader_cpu_s", "fs_cpu_s", "dd_time_s"]
    t = pd.DataFrame(out)
    for c in cols:
        if c not in t:
            t[c] = float("nan")
    t["paper_faithful"] = [VARIANTS.get(v, (True, ""))[0] for v in t.variant]
    t["label"] = [variant_label(v, ours=not VARIANTS.get(v, (True, ""))[0]) for v in t.variant]
    return t[["label", "paper_faithful"] + cols]


def verdict(ratio: float | None, target: float | None, ok: int) -> str:
    if not ok:
        return "not run" if ratio is None else "failed"
    if target is None:
        return "no target"
    return "met" if ratio >= target else "not met"


def issue13(rec: dict, thr: pd.DataFrame) -> pd.DataFrame:
    p = rec.get("params", {})
    rows = []
    for spec in ISSUE13:
        r = thr[(thr.variant == spec["variant"]) & (thr.tool == spec["tool"])]
        have = len(r) and not pd.isna(r.iloc[0]["ratio_median"])
        x = r.iloc[0] if len(r) else None
        ratio = float(x["ratio_median"]) if have else None
        state = verdict(ratio, spec["target"], int(x["ok"]) if x is not None else 0)
        if x is not None and not have and int(x["failed"]):
            state = "failed"
        rows.append({
            "row": spec["row"].format(size=p.get("size", "?"), source=p.get("source", "?")),
            "earlier (issue 13)": spec["earlier"],
            "this run: variant GB/s median": x["gbps_median"] if have else None,
            "native GB/s median": (thr[(thr.variant == "native") & (thr.tool == spec["tool"])]["gbps_median"]
                                   .iloc[0] if have else None),
            "x native per round: min": x["ratio_min"] if have else None,
            "median": ratio, "max": x["ratio_max"] if have else None,
            "dd's own time: x native (median)": x["dd_own_ratio_median"] if have and spec["tool"] == "dd" else None,
            "reader CPU: native / variant (medians)": (
                float(thr[(thr.variant == "native") & (thr.tool == spec["tool"])]["reader_cpu_s"].iloc[0])
                / float(x["reader_cpu_s"]) if have and x["reader_cpu_s"] else None),
            "target": f">= {spec['target']:.2f}x" if spec["target"] else "- (see the kernel passthrough rows)",
            "verdict": state})
    return pd.DataFrame(rows)


def _mmm(vals: list[float]) -> str:
    return f"{min(vals):.2f} / {pd.Series(vals).median():.2f} / {max(vals):.2f}" if vals else "-"


def per_round(rec: dict, variant: str, tool: str, base: str) -> list[tuple[int, float]]:
    """(rep, throughput(variant) / throughput(base)) of every round where both were measured (not failed)."""
    df = metrics(rec)
    if "metric" not in df:
        return []
    failed = {(r.variant, r.tool, int(r.rep)) for r in failures(rec).itertuples()}
    one = df[(df.metric == "throughput") & (df.nodes == 1) & (df.tool == tool)]
    got = {(v, int(r)): x for v, r, x in zip(one.variant, one.rep, one.value) if (v, tool, int(r)) not in failed}
    return sorted((r, x / got[(base, r)]) for (v, r), x in got.items() if v == variant and (base, r) in got)


def per_round_cpu(rec: dict, variant: str, tool: str) -> list[float]:
    """Per round: native's reader CPU / (the variant's reader CPU + its file system's CPU): what the
    variant reaches of native when both run on one free core without overlap -- the work ratio, which
    the load of other jobs moves far less than the wall time."""
    df = metrics(rec)
    if "metric" not in df:
        return []
    failed = {(r.variant, r.tool, int(r.rep)) for r in failures(rec).itertuples()}
    d = df[(df.nodes == 1) & (df.tool == tool) & df.metric.isin(["reader_cpu", "fs_cpu"])]
    cpu: dict = {}
    for v, r, m, x in zip(d.variant, d.rep, d.metric, d.value):
        if (v, tool, int(r)) not in failed:
            cpu.setdefault((v, int(r)), {})[m] = x
    out = []
    for (v, r), c in sorted(cpu.items()):
        nat = cpu.get(("native", r), {}).get("reader_cpu")
        work = c.get("reader_cpu", 0) + (c.get("fs_cpu") or 0)
        if v == variant and nat and work > 0 and "reader_cpu" in c:
            out.append(nat / work)
    return out


def bound_reading(x_native: float, x_ceiling: float | None, ceiling_native: float | None, target: float) -> str:
    """What bounds a FUSE read path, from the medians of its per-round ratios: native itself (target met),
    the FUSE path (within NEAR_CEILING of the ceiling, which is itself below the target) or the file
    system's own work (well below the ceiling)."""
    if x_native >= target:
        return f"at native ({x_native:.2f}x >= {target:.2f}x): nothing of the file system stops it"
    if x_ceiling is None or ceiling_native is None:
        return "unknown: no FUSE ceiling measured in this run"
    if x_ceiling >= NEAR_CEILING:
        return (f"the FUSE path: {x_ceiling:.2f}x the FUSE ceiling, which itself reaches only {ceiling_native:.2f}x "
                "native; a file system with no backend and no copy in its daemon is no faster, so what is left "
                "is FUSE's own path: the reader's extra CPU filling the FUSE file's page cache (see the "
                "reader-CPU bound), the round trip per request (two processes scheduled per request), the "
                "reader waiting for a core")
    return (f"the file system's own work: {x_ceiling:.2f}x the FUSE ceiling (which reaches {ceiling_native:.2f}x "
            "native): its daemon does more per request than the ceiling's (see its CPU beside)")


def issue22(rec: dict, thr: pd.DataFrame) -> pd.DataFrame:
    """Issue 22: each FUSE read path of ISSUE22 beside native and the FUSE ceiling, per round."""
    df = metrics(rec)
    rows = []
    for v, tool, target in ISSUE22:
        r = thr[(thr.variant == v) & (thr.tool == tool)]
        if not len(r):
            continue
        x = r.iloc[0]
        xn = [q for _, q in per_round(rec, v, tool, "native")]
        xc = [q for _, q in per_round(rec, v, tool, CEILING)]
        cn = [q for _, q in per_round(rec, CEILING, tool, "native")]

        def med(t, col, var=v):
            y = thr[(thr.variant == var) & (thr.tool == t)]
            return float(y.iloc[0][col]) if len(y) and not pd.isna(y.iloc[0][col]) else None
        above = [f"{n} of {len(q)} x {name}" for name, q in (("native", xn), ("ceiling", xc)) for n in
                 [sum(1 for y in q if y > 1.0)] if n]
        load = df[(df.metric == "load1") & (df.tool == tool) & (df.nodes == 1)] if "metric" in df else df
        row = {"path": variant_label(v, ours=not VARIANTS.get(v, (True, ""))[0]), "variant": v, "tool": tool,
               "rounds": len(xn), "native GB/s": med(tool, "gbps_median", "native"),
               "FUSE ceiling GB/s": med(tool, "gbps_median", CEILING), "variant GB/s": med(tool, "gbps_median"),
               "ceiling x native: min / median / max": _mmm(cn),
               "x native: min / median / max": _mmm(xn), "x ceiling: min / median / max": _mmm(xc),
               "rounds above 1.0 (measurement errors)": "; ".join(above) or "none",
               "CPU x native: min / median / max": _mmm(per_round_cpu(rec, v, tool)),
               # the reader's own CPU through any page-cached FUSE mount: what even a file system whose
               # daemon costs nothing (or runs on another, free core) cannot beat when the reader is CPU-bound
               "reader-CPU bound: native / ceiling reader CPU (medians)": (
                   med(tool, "reader_cpu_s", "native") / med(tool, "reader_cpu_s", CEILING)
                   if med(tool, "reader_cpu_s", "native") and med(tool, "reader_cpu_s", CEILING) else None),
               "ceiling CPU x native: min / median / max": _mmm(per_round_cpu(rec, CEILING, tool)),
               "reader CPU s: variant / native": (f"{med(tool, 'reader_cpu_s'):.3f} / "
                                                  f"{med(tool, 'reader_cpu_s', 'native'):.3f}"
                                                  if med(tool, "reader_cpu_s") is not None
                                                  and med(tool, "reader_cpu_s", "native") is not None else "-"),
               "file system CPU s: variant / ceiling": (f"{med(tool, 'fs_cpu_s'):.3f} / "
                                                        f"{med(tool, 'fs_cpu_s', CEILING):.3f}"
                                                        if med(tool, "fs_cpu_s") is not None
                                                        and med(tool, "fs_cpu_s", CEILING) is not None else "-"),
               "load (1 min) over the rounds": (f"{load.value.min():.1f}-{load.value.max():.1f}" if len(load)
                                                else "-"),
               "target": f">= {target:.2f}x native" if target else "-"}
        if not xn:
            row.update(bound="-", verdict="failed" if int(x["failed"]) else "not run")
        else:
            mn = float(pd.Series(xn).median())
            mc = float(pd.Series(xc).median()) if xc else None
            mcn = float(pd.Series(cn).median()) if cn else None
            row["bound"] = bound_reading(mn, mc, mcn, target or 0.95)
            if mn > 1.0 or (mc is not None and mc > 1.0):
                row["verdict"] = "measurement error (median above 1.0 of a limit)"
            elif target is None:
                row["verdict"] = "no target"
            else:
                row["verdict"] = "met" if mn >= target else "not met"
        rows.append(row)
    return pd.DataFrame(rows)


def composite(native: float, ceiling: float) -> float:
    """The file system's read of its source (native dd: raw page-cache reading, no reader work) and the FUSE
    path with the reader's own work (the ceiling, same tool) on the same cores, their per-byte costs added:
    1/composite = 1/native + 1/ceiling."""
    return 1.0 / (1.0 / native + 1.0 / ceiling) if native > 0 and ceiling > 0 else float("nan")


def issue30(rec: dict) -> pd.DataFrame:
    """Issue 30: per tool, how far the FUSE ceiling moved over io_uring, and each refined-OSR path over either
    transport against both ceilings and both composites, per round (min / median / max)."""
    df = metrics(rec)
    if "metric" not in df:
        return pd.DataFrame()
    failed = {(r.variant, r.tool, int(r.rep)) for r in failures(rec).itertuples()}
    have = set(df.variant.dropna())
    if CEILING_URING not in have and not any(v.endswith(URING_SUFFIX) for v in have):
        return pd.DataFrame()
    rows = []
    # the source read's rate: native dd of the same round (sha256sum's native rate is its hashing)
    dd = df[(df.metric == "throughput") & (df.nodes == 1) & (df.tool == "dd") & (df.variant == "native")]
    src = {int(r): x for r, x in zip(dd.rep, dd.value) if ("native", "dd", int(r)) not in failed}
    for tool in ("sha256sum", "dd"):
        one = df[(df.metric == "throughput") & (df.nodes == 1) & (df.tool == tool)]
        g = {(v, int(r)): x for v, r, x in zip(one.variant, one.rep, one.value) if (v, tool, int(r)) not in failed}
        reps = sorted({r for _, r in g})
        load = df[(df.metric == "load1") & (df.tool == tool) & (df.nodes == 1)]

        def med(xs):
            return float(pd.Series(xs).median()) if xs else None
        for v in [CEILING_URING] + ISSUE30:
            if v not in have:
                continue
            transport = "io_uring" if v.endswith(URING_SUFFIX) else "dev-fuse"
            own_ceiling = CEILING_URING if transport == "io_uring" else CEILING
            vals = {n: [] for n in ("x", "nat", "src", "cd", "cu", "compd", "compu", "xn", "xcd", "xcu", "xkd",
                                    "xku", "cn_own")}
            for r in reps:
                x, nat, cd, cu = g.get((v, r)), g.get(("native", r)), g.get((CEILING, r)), g.get((CEILING_URING, r))
                sr = src.get(r)
                if x is None:
                    continue
                if sr:
                    vals["src"].append(sr)
                vals["x"].append(x)
                if nat:
                    vals["nat"].append(nat)
                    vals["xn"].append(x / nat)
                if cd:
                    vals["cd"].append(cd)
                    vals["xcd"].append(x / cd)
                if cu:
                    vals["cu"].append(cu)
                    vals["xcu"].append(x / cu)
                if sr and cd:
                    vals["compd"].append(composite(sr, cd))
                    vals["xkd"].append(x / composite(sr, cd))
                if sr and cu:
                    vals["compu"].append(composite(sr, cu))
                    vals["xku"].append(x / composite(sr, cu))
                own = g.get((own_ceiling, r))
                if nat and own:
                    vals["cn_own"].append(own / nat)
            nf = sum(1 for (fv, ft, _) in failed if fv == v and ft == tool)
            row = {"path": variant_label(v, ours=True), "variant": v, "transport": transport, "tool": tool,
                   "rounds": len(vals["x"]), "failed": nf,
                   "variant GB/s": med(vals["x"]), "native GB/s": med(vals["nat"]),
                   "source read (native dd) GB/s": med(vals["src"]),
                   "ceiling /dev/fuse GB/s": med(vals["cd"]), "ceiling io_uring GB/s": med(vals["cu"]),
                   "composite /dev/fuse GB/s": med(vals["compd"]), "composite io_uring GB/s": med(vals["compu"]),
                   "x native": _mmm(vals["xn"]), "x ceiling /dev/fuse": _mmm(vals["xcd"]),
                   "x ceiling io_uring": _mmm(vals["xcu"]), "x composite /dev/fuse": _mmm(vals["xkd"]),
                   "x composite io_uring": _mmm(vals["xku"]),
                   "load (1 min) over the rounds": (f"{load.value.min():.1f}-{load.value.max():.1f}" if len(load)
                                                    else "-")}
            if v == CEILING_URING:  # how far the ceiling itself moved: x ceiling /dev/fuse is the move
                row["bound"] = "-"
                row["verdict"] = ("measurement error (median above 1.0 of native)"
                                  if vals["xn"] and med(vals["xn"]) > 1.0 else "no target")
            elif not vals["xn"]:
                row.update(bound="-", verdict="failed" if nf else "not run")
            else:
                mn = med(vals["xn"])
                own_x = vals["xcu"] if transport == "io_uring" else vals["xcd"]
                mc = med(own_x)
                row["bound"] = f"{transport}: " + bound_reading(mn, mc, med(vals["cn_own"]), 0.95)
                if mn > 1.0 or (mc is not None and mc > 1.0):
                    row["verdict"] = "measurement error (median above 1.0 of a limit)"
                elif tool != "sha256sum":
                    row["verdict"] = "no target"
                else:
                    row["verdict"] = "met" if mn >= 0.95 else "not met"
            rows.append(row)
    return pd.DataFrame(rows)


def findings(thr: pd.DataFrame, brk: pd.DataFrame) -> list[str]:
    """What the breakdown shows, sentence by sentence, every number from this raw file."""
    out = []
    if not len(brk):
        return out
    b = brk.set_index(["variant", "tool"])

    def get(v, t, c):
        try:
            x = b.loc[(v, t), c]
        except KeyError:
            return None
        return None if pd.isna(x) else float(x)
    for v in [x for x in b.index.get_level_values(0).unique() if x not in ("native", "kpassthrough")]:
        for tool in ("dd",):
            n, wall, nat = get(v, tool, "READ requests at the server"), get(v, tool, "wall s"), get("native", tool,
                                                                                                  "wall s")
            rt, kib = get(v, tool, "read_time_s"), get(v, tool, "mean request KiB")
            op = get(v, tool, "open_time_s") or 0.0
            if n and wall is not None and nat is not None and rt is not None:
                out.append(f"* {v}, dd: {n:.0f} READ requests of {kib:.0f} KiB; {wall - nat:.3f} s more than native "
                           f"({wall:.3f} vs {nat:.3f} s), of which {rt:.3f} s inside the file system's read path "
                           f"and {op:.3f} s in its open: the rest, {(wall - nat - rt - op) / n * 1e6:.0f} us per "
                           "request, is the request's way through the kernel and back (context switches, the "
                           "copies to and from the server, waiting for a core).")
    for tool in ("dd", "sha256sum"):
        n = get("kpassthrough", tool, "READ requests at the server")
        r = thr[(thr.variant == "kpassthrough") & (thr.tool == tool)]
        nr = thr[(thr.variant == "native") & (thr.tool == tool)]
        if n is None or not len(r) or not len(nr) or pd.isna(r.iloc[0]["ratio_median"]):
            continue
        x = r.iloc[0]
        cpu = nr.iloc[0]["reader_cpu_s"] / x["reader_cpu_s"] if x["reader_cpu_s"] else float("nan")
        out.append(f"* kpassthrough, {tool}: {n:.0f} READ requests at the server (median), server CPU "
                   f"{get('kpassthrough', tool, 'fs CPU s') or 0:.3f} s; the reader's CPU is {cpu:.2f}x native's "
                   f"(native / kernel passthrough) while the wall-time ratio spans {x['ratio_min']:.2f}-"
                   f"{x['ratio_max']:.2f}x: no request reaches user space, so a gap in wall time beyond the reader's "
                   "CPU is time the reader waited for a core (see the load average), not work of the file system.")
    for v in ("osr-refined", "osr"):
        for tool in ("sha256sum",):
            ot, wall, src = get(v, tool, "open_time_s"), get(v, tool, "wall s"), get(v, tool, "source_read_time_s")
            fs = get(v, tool, "fs CPU s")
            if ot is not None and wall:
                out.append(f"* {v}, {tool}: open {ot:.3f} s of {wall:.3f} s wall ({ot / wall:.0%}); source reads "
                           f"{src or 0:.3f} s; the rank's process (the file system) used {fs or 0:.3f} s CPU beside "
                           f"the reader's {get(v, tool, 'reader CPU s') or 0:.3f} s on this machine's cores.")
    return out


def paper_passthrough_cost(pub: pd.DataFrame | None) -> tuple[float, str] | None:
    """The paper's FUSE passthrough cost on scratch: Table I, 1 node, 1 GB, passthrough vs native."""
    if pub is None:
        return None
    fuse = published.number(pub, source="001 Table I", source_fs="scratch", use_case="Passthrough", nodes="1",
                            size="1GB", metric="time")
    nat = published.number(pub, source="001 Table I", source_fs="scratch", use_case="native", nodes="1",
                           size="1GB", metric="time")
    if not fuse or not nat:
        return None
    return fuse / nat - 1, f"Table I, scratch, 1 node, 1 GB: {fuse:.3f} s vs native {nat:.3f} s"


def variants_table(rec: dict, thr: pd.DataFrame, pub: pd.DataFrame | None) -> pd.DataFrame:
    cost = paper_passthrough_cost(pub)
    opts = rec.get("extra", {}).get("fs_options", {})
    rows = []
    for v in rec.get("extra", {}).get("variants") or sorted(set(thr.variant)):
        faithful, what = VARIANTS.get(v, (True, ""))
        this = {}
        for tool in ("dd", "sha256sum"):
            r = thr[(thr.variant == v) & (thr.tool == tool)]
            tv = r.iloc[0]["time_vs_native"] if len(r) else float("nan")
            this[tool] = "failed" if len(r) and not r.iloc[0]["ok"] else (
                f"{tv * 100:+.0f} %" if not pd.isna(tv) else "-")
        rows.append({"variant": variant_label(v, ours=not faithful),
                     "design": "paper-faithful" if faithful else "ours, beyond the paper",
                     "what": what, "options": ",".join(f"{k}={o}" for k, o in
                                                       sorted(opts.get(v, {}).get("options", {}).items())) or "-",
                     "this run: time vs native, dd (median per round)": this["dd"] if v != "native" else "0",
                     "sha256sum": this["sha256sum"] if v != "native" else "0",
                     "the paper's passthrough cost on scratch": (f"{cost[0] * 100:+.0f} % ({cost[1]})"
                                                                if cost and v in ("passthrough", "kpassthrough")
                                                                else "")})
    return pd.DataFrame(rows)


def breakdown(rec: dict) -> pd.DataFrame:
    """Per (variant, tool): what the file system saw per request (median over the repeats)."""
    df = metrics(rec)
    rows = []
    by = {}
    for s in rec.get("extra", {}).get("fs_stats", []):
        by.setdefault((s["variant"], s["tool"]), []).append(s["stats"])
    extra_keys = sorted({k for sts in by.values() for st in sts for k, val in st.items()
                         if isinstance(val, (int, float)) and not isinstance(val, bool) and k not in FS_KEYS
                         and k not in ABSOLUTE
                         and (k.endswith("_time_s") or "cpu" in k or "memcpy" in k or "copy" in k)})
    for (v, tool), sts in by.items():
        row = {"variant": v, "tool": tool, "repeats": len(sts)}
        if all("fuseceiling" in st for st in sts):  # the FUSE ceiling's counters
            reqs = [st["fuseceiling"].get("read_reqs", 0) for st in sts]
            byts = [st["fuseceiling"].get("read_bytes", 0) for st in sts]
            row["READ requests at the server"] = float(pd.Series(reqs).median())
            row["mean request KiB"] = (sum(byts) / sum(reqs) / 1024) if sum(reqs) else None
        elif all("ops" in st for st in sts):  # kpassthrough: the server's op counters
            reqs = [st["ops"].get("read", 0) for st in sts]
            byts = [st["ops"].get("read_bytes", 0) for st in sts]
            row["READ requests at the server"] = float(pd.Series(reqs).median())
            row["mean request KiB"] = (sum(byts) / sum(reqs) / 1024) if sum(reqs) else None
            row["opens passed through"] = float(pd.Series([st["ops"].get("open_passthrough", 0)
                                                           for st in sts]).median())
        else:
            calls = [st.get("read_calls", 0) for st in sts]
            byts = [st.get("read_bytes", 0) for st in sts]
            row["READ requests at the server"] = float(pd.Series(calls).median())
            row["mean request KiB"] = (sum(byts) / sum(calls) / 1024) if sum(calls) else None
            if sum(calls):
                rt = [st.get("read_time_s", 0) for st in sts]
                row["us per request in read"] = sum(rt) / sum(calls) * 1e6
            for k in FS_KEYS[2:] + extra_keys:
                vals = [st[k] for st in sts if isinstance(st.get(k), (int, float))]
                if vals:
                    row[k] = float(pd.Series(vals).median())
            since = [st["cpu_process_s"] - st["cpu_at_first_open_s"] for st in sts
                     if "cpu_process_s" in st and "cpu_at_first_open_s" in st]
            if since:  # the library's own clock over the open and the read (the rank's whole process)
                row["lib: process CPU first open -> end s"] = float(pd.Series(since).median())
        for m, col in (("fs_cpu", "fs CPU s"), ("reader_cpu", "reader CPU s"), ("time", "wall s")):
            x = df[(df.metric == m) & (df.variant == v) & (df.tool == tool) & (df.nodes == 1)]
            if len(x):
                row[col] = float(x.value.median())
        rows.append(row)
    # native: no file system; its rank CPU is the benchmark's own floor
    for tool in ("dd", "sha256sum"):
        row = {"variant": "native", "tool": tool}
        for m, col in (("fs_cpu", "fs CPU s"), ("reader_cpu", "reader CPU s"), ("time", "wall s")):
            x = df[(df.metric == m) & (df.variant == "native") & (df.tool == tool) & (df.nodes == 1)]
            if len(x):
                row[col] = float(x.value.median())
        if len(row) > 2:
            rows.insert(0, row)
    t = pd.DataFrame(rows)
    if not len(t):
        return t
    for k in extra_keys:  # a counter of another mode (e.g. bcast_* under passthrough) that stayed 0
        if k in t and not (t[k].fillna(0) != 0).any():
            t = t.drop(columns=k)
    first = ["variant", "tool", "repeats", "READ requests at the server", "mean request KiB",
             "us per request in read", "opens passed through", "wall s", "fs CPU s", "reader CPU s"]
    return t[[c for c in first if c in t] + [c for c in t if c not in first]]


def idle_table(rec: dict) -> pd.DataFrame:
    """Per file system: each rank's CPU over the idle window as a fraction of a core."""
    df = metrics(rec)
    if "metric" not in df or not (df.metric == "idle_cpu").any():
        return pd.DataFrame()
    rows = []
    idle = df[df.metric == "idle_cpu"]
    win = df[df.metric == "idle_window"].set_index(["variant", "rank"])["value"]
    for v, g in idle.groupby("variant", sort=False):
        frac = {}
        for _, r in g.iterrows():
            frac.setdefault(r["proc"], []).append(r["value"] / win[(v, r["rank"])])
        per_rank = g.groupby("rank").apply(lambda x: sum(x.value) / win[(v, x.name)], include_groups=False)
        row = {"variant": v, "ranks": g["rank"].nunique(), "window s": float(win[v].median()),
               "rank process: mean / max of a core": f"{pd.Series(frac['rank']).mean():.3f} / "
                                                     f"{max(frac['rank']):.3f}"}
        if "server" in frac:
            row["server process: mean / max"] = f"{pd.Series(frac['server']).mean():.3f} / {max(frac['server']):.3f}"
        row["all ranks together (cores)"] = float(per_rank.sum())
        for m, col in (("mount_cpu", "mount CPU s (median rank)"), ("unmount_cpu", "unmount CPU s (median rank)")):
            x = df[(df.metric == m) & (df.variant == v) & (df.proc == "rank")]
            if len(x):
                row[col] = float(x.value.median())
        rows.append(row)
    # the file systems' own CPU counters, where their stats have them (named by the library)
    for s in rec.get("extra", {}).get("idle_stats", []):
        for r in rows:
            if r["variant"] == s["variant"]:
                for k, val in s["stats"].items():
                    if ("cpu" in k and k not in ABSOLUTE and isinstance(val, (int, float))
                            and not isinstance(val, bool)):
                        r.setdefault(f"stats {k} (median rank)", []).append(val)
    for r in rows:
        for k in [k for k in r if k.startswith("stats ")]:
            r[k] = float(pd.Series(r[k]).median())
    return pd.DataFrame(rows)


COUNTS = {"repeats", "READ requests at the server", "opens passed through", "ok", "failed", "pairs", "ranks",
          "count", "nodes", "rep", "mpi_get_calls"}


def md(df: pd.DataFrame, digits: int = 3) -> str:
    """A markdown table (numbers with `digits` decimals, missing cells as -)."""
    if df is None or not len(df):
        return "(none)"

    def cell(x, col=""):
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "-"
        if isinstance(x, bool):
            return "yes" if x else "no"
        if isinstance(x, float) and col in COUNTS and x.is_integer():
            return str(int(x))
        if isinstance(x, float):
            return f"{x:.{digits}f}"
        return str(x).replace("|", "/")
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(x, c) for x, c in zip(row, df.columns)) + " |"
            for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def duration_s(rec: dict) -> float | None:
    try:
        return (datetime.fromisoformat(rec["finished_at"]) - datetime.fromisoformat(rec["started_at"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def report(rec: dict, pub: pd.DataFrame | None = None) -> tuple[str, pd.DataFrame]:
    thr = throughput(rec)
    brk = breakdown(rec)
    ex = rec.get("extra", {})
    fails = failures(rec)
    df = metrics(rec)
    b = df[df.metric == "file_sizes_from_source"] if "metric" in df else pd.DataFrame()
    bt = (b.groupby(["variant", "nodes"])["value"].agg(["count", "mean", "min", "max"]).reset_index()
          if len(b) else pd.DataFrame())
    dur = duration_s(rec)
    lines = [
        "# mpifuse speed benchmark",
        "",
        (f"File {rec['params']['size']} on {rec['params']['source']} ({rec['system_kind']}), host {rec['host']}, "
         f"kernel {ex.get('kernel', '?')}, {ex.get('cpus', '?')} CPUs, {ex.get('repeats')} repeat(s); "
         f"{rec.get('started_at')} to {rec['finished_at']}"
         + (f" ({dur:.0f} s)." if dur is not None else ".")),
        "",
        (f"**Load average (1/5/15 min)** at the start of the job: {rec.get('load_start')}, at its end: "
         f"{rec.get('load_end')}. The job holds the whole machine in the local profile, but other sessions "
         "outside Snakemake may still run beside it: a load well above 1 makes every number below provisional."),
        "",
        f"Note: {ex.get('note', '')}",
        "",
        "## Issue 13: the paths against their limits",
        "",
        ("x native = the median over the repeats of throughput(variant) / throughput(native) of the same repeat "
         "(min / median / max); the verdict uses the median."),
        "",
        md(issue13(rec, thr)),
        "",
        "## Issue 22: refined OSR against native and the FUSE ceiling",
        "",
        ("Per round (the variants of one repeat run seconds apart): throughput(variant) / throughput(native) and / "
         "throughput(FUSE ceiling) of the same round, min / median / max; the ceiling's own ratio to native beside. "
         "The FUSE ceiling is tools/fuseceiling mounted with OSR refined's request size, readahead and FUSE loop "
         f"({ex.get('fs_options', {}).get(CEILING, {}).get('options', {}).get('fuseceiling', '?')}), serving a "
         "preloaded file of the same size. A ratio above 1.0 cannot be a result (no FUSE path beats native "
         "reading or the ceiling): such rounds are counted as measurement errors (the load moved between the two "
         "readers); a median above 1.0 makes the row a measurement error. Bound: from the medians (see "
         "bound_reading). CPU x native = native's reader CPU / (the variant's reader CPU + its file system's "
         "CPU) per round: the ratio on one free core without overlap, which the other jobs' load moves far "
         "less than the wall time (on two free cores the file system can overlap the reader). Reader-CPU bound "
         "= native's reader CPU / the reader's CPU on the FUSE ceiling: a CPU-bound reader through any "
         "page-cached FUSE mount spends that much more in its own process (the FUSE file's page cache filled "
         "per read), so no FUSE file system reaches more than it while the reader waits for nothing else."),
        "",
        md(issue22(rec, thr)),
        "",
        "## Issue 30: over /dev/fuse and over FUSE-over-io_uring",
        "",
        ("Both FUSE ceilings (tools/fuseceiling with OSR refined's knobs, its requests read from /dev/fuse or "
         "fetched from per-CPU io_uring queues, tools/fuseuring), the composite limit each gives with reading the "
         "source (1/composite = 1/native dd + 1/ceiling of the same tool: the file system reads its page-cached "
         "source at native dd's rate and the FUSE path carries the reader's own work at the ceiling's rate, on "
         "the same cores, the two per-byte costs added) and refined OSR over each transport (libmpifuse -o "
         "io_uring), per round: the variant's throughput / each limit of the same round, min / median / max. "
         "The ceiling-over-io_uring row's 'x ceiling /dev/fuse' is how far the ceiling itself moved. A ratio "
         "above 1.0 of a composite means the two costs overlapped (two cores), not an error; above 1.0 of "
         "native or of its own ceiling (median) is a measurement error. Bound: from the medians against the "
         "ceiling of the row's own transport (see bound_reading); target as issue 22 (>= 0.95x native, "
         "sha256sum). A read asked over io_uring whose stats show requests from /dev/fuse (or none through the "
         "ring) is failed, never a number; every sha256sum read is checked against the source's hash."),
        "",
        md(issue30(rec)) if len(issue30(rec)) else "(no io_uring variant in this run: fusespeed.variants)",
        "",
        "## Variants: paper-faithful and ours",
        "",
        md(variants_table(rec, thr, pub)),
        "",
        "## Read throughput on one node",
        "",
        ("GB/s over the repeats; x native per round as above; time vs native = 1 / median ratio - 1; CPU "
         "seconds are medians: the reader's (dd/sha256sum user+sys) and the file system's (libmpifuse runs in the "
         "rank's process: that process's CPU; kpassthrough: its server process; native: the rank's own, the "
         "benchmark's floor). dd_time_s is dd's own elapsed time (the wall time adds the process start)."),
        "",
        md(thr.drop(columns=["paper_faithful"])),
        "",
        "Failed measurements (no throughput; never counted as a number):",
        "",
        md(fails) if len(fails) else "none",
        "",
        "## Per-request breakdown (one node, median over the repeats)",
        "",
        ("READ requests the FUSE server answered and their mean size (libmpifuse: read_calls, read_bytes; "
         "kpassthrough: its op counters, 0 requests = the kernel served every read), time inside the file "
         "system's read path and its parts where the counters have them (seconds, summed over the read), and CPU. "
         "Counters are the file system's own (libmpifuse's stats JSON as it stands, any *_time_s / *cpu* / copy "
         "counter it adds shows as a column)."),
        "",
        md(brk),
        "",
        "What the breakdown shows (computed from the rows above):",
        "",
        *(findings(thr, brk) or ["(no file-system counters in this raw file)"]),
        "",
        (f"## Idle CPU per rank ({ex.get('idle_s', '?')} s mounted, no reads, on max(nodes) ranks)"),
        "",
        ("CPU time (utime + stime from /proc/<pid>/stat, 10 ms ticks) over the window / the window's length: "
         "the fraction of one core each rank's process burns while its file system waits; native = the rank with "
         "no file system (the MPI library's own floor); kpassthrough's server is its own process. mount / "
         "unmount CPU: the rank's process over start and stop."),
        "",
        md(idle_table(rec)),
        "",
        "## Bytes read from the source (x the file size) as the node count grows",
        "",
        md(bt),
        "",
    ]
    return "\n".join(lines), thr


def main() -> int:
    # --config: the study's section, as every study script takes it (the numbers come from the raw file)
    ap = cli.parser(__doc__, "raw", "table", "report")
    ap.add_argument("--published")
    ap.add_argument("--issue13", help="issue 13's table (earlier values, this run's ratios, target, verdict) as CSV")
    ap.add_argument("--issue22", help="issue 22's table (native, FUSE ceiling, ratios to each, bound) as CSV")
    ap.add_argument("--issue30", help="issue 30's table (both ceilings and composites, ratios to each) as CSV")
    a, _ = cli.finish(ap)
    rec = rawio.read(a.raw)
    pub = published.load(a.published) if a.published else None
    text, thr = report(rec, pub)
    thr = thr.copy()
    thr["system_kind"] = rec["system_kind"]
    tidy.write_csv(thr, a.table)
    if a.issue13:
        tidy.write_csv(issue13(rec, thr).assign(system_kind=rec["system_kind"]), a.issue13)
    if a.issue22:
        i22 = issue22(rec, thr)
        tidy.write_csv((i22 if len(i22) else pd.DataFrame(columns=["path", "variant", "tool", "verdict"]))
                       .assign(system_kind=rec["system_kind"]), a.issue22)
    if a.issue30:
        i30 = issue30(rec)
        tidy.write_csv((i30 if len(i30) else pd.DataFrame(columns=["path", "variant", "transport", "tool", "verdict"]))
                       .assign(system_kind=rec["system_kind"]), a.issue30)
    Path(a.report).parent.mkdir(parents=True, exist_ok=True)
    Path(a.report).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
