"""MemFS against its limit, side by side (issue 13): every ratio comes from one envelope job.

Each MemFS-design envelope run (run.py) measures, on its own cluster, network and layout, after
the MemFS phases, raw memcached with mcbench at the same value size and bytes per node, with as many
threads per node as the benchmark's processes and as MemFS's own pool (the faster counts; a single
sequential mcbench thread is latency-bound and no upper bound for MemFS's parallel stripe fetches;
metrics ``limit_set_bw`` / ``limit_get_bw``) and keeps the counter deltas of every MemFS phase
(``extra.memfs_stats.<phase>``). Here, from the raw files only:

* ``pairs``: one row per run and operation (write / 1-1 read): MemFS bandwidth, the limit measured
  in the same job, their ratio, the load average and the per-request breakdown of that phase;
* ``limit_table``: per configuration and operation the ratio's min/median/max over the repeats and
  a verdict: ``measurement error`` when any repeat's ratio is above 1.0 (MemFS cannot beat the
  store it runs on: the comparison, not MemFS, is wrong, and no value is reported), else ``met``
  when the median is >= 0.8 (issue 13's target), else ``not met``; ``not run`` / ``failed`` where
  no run has the side-by-side limit;
* ``issue13_table``: issue 13's rows, the earlier runs' values (transcribed from the issue) beside
  this run's.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd

from repro import rawio
from studies.memfs import common as mc

TARGET = 0.8  # issue 13: MemFS at >= 0.8 x raw memcached
VALID_MAX = 1.0  # a ratio above this is a measurement error, never a result
MET, NOT_MET, MEASUREMENT_ERROR = "met", "not met", "measurement error"
NOT_RUN, FAILED = "not run", "failed"
TARGET_TEXT = f">= {TARGET:g}x (median of the repeats); every repeat <= {VALID_MAX:g}x to be valid"

# op -> (MemFS metric, limit metric, MemFS stats phase, mcbench operation, io counters)
OPS = {
    "write": ("write_bw", "limit_set_bw", "write", "memcached set", ("io.bytes_written", "io.write_calls")),
    "read11": ("read11_bw", "limit_get_bw", "read11", "memcached get", ("io.bytes_read", "io.read_calls")),
}
MIB = 1 << 20


def _num(stats: dict, key: str) -> float:
    v = stats.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _div(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) and b != 0 else math.nan


def _sum_prefix(stats: dict, prefix: str, skip=()) -> float:
    keys = [k for k in stats if k.startswith(prefix) and k not in skip]
    return float(sum(stats[k] for k in keys)) if keys else math.nan


# The breakdown columns: (column, function(stats of the phase, op) -> value). Keys MemFS does not
# write (an older binary) give blanks. Counter names: systems/memfs/src/stats.h (MEMFS_COUNTERS).
def _bytes_of(stats, op):
    return _num(stats, OPS[op][4][0])


def _per_mib(stats, op, key_read, key_write, scale=1e-6):
    """A counter of the phase (read or write variant) per MiB of the phase's bytes; ns -> ms by default."""
    key = key_write if op == "write" else key_read
    return _div(_num(stats, key) * scale, _bytes_of(stats, op) / MIB)


def _wait_ms_per_mib(stats, op):
    keys = ("wait.write_slot_ns", "wait.flush_ns") if op == "write" else ("wait.read_stripe_ns", "wait.inline_fetch_ns")
    vals = [_num(stats, k) for k in keys]
    return math.nan if all(math.isnan(v) for v in vals) else _div(
        sum(v for v in vals if not math.isnan(v)) * 1e-6, _bytes_of(stats, op) / MIB)


BREAKDOWN = [
    ("fuse_request_kib", lambda s, op: _div(_num(s, OPS[op][4][0]), _num(s, OPS[op][4][1])) / 1024,
     "mean FUSE request size (bytes / read or write requests MemFS served)"),
    ("fuse_requests_per_mib", lambda s, op: _div(_num(s, OPS[op][4][1]), _bytes_of(s, op) / MIB),
     "FUSE read or write requests per MiB"),
    ("data_round_trips_per_mib", lambda s, op: _div(_num(s, "stripes.set" if op == "write" else "stripes.get"),
                                                    _bytes_of(s, op) / MIB),
     "memcached stripe set (write) or get (read) round trips per MiB"),
    ("mc_rtt_ms", lambda s, op: _div(_num(s, "mc_rtt.set_ns" if op == "write" else "mc_rtt.get_ns"),
                                     _num(s, "mc_rtt.set_count" if op == "write" else "mc_rtt.get_count")) * 1e-6,
     "mean memcached stripe round trip (ms)"),
    ("mc_ms_per_mib", lambda s, op: _per_mib(s, op, "mc_rtt.get_ns", "mc_rtt.set_ns"),
     "memcached stripe round-trip time per MiB (ms, summed over threads)"),
    ("pool_queue_ms_per_mib", lambda s, op: _per_mib(s, op, "pool.read_queue_ns", "pool.write_queue_ns"),
     "time stripe jobs waited in the prefetch (read) or write-behind (write) pool queue per MiB (ms)"),
    ("client_wait_ms_per_mib", _wait_ms_per_mib,
     "time FUSE requests blocked per MiB (ms): read = on a stripe being fetched + inline demand fetches; "
     "write = on full buffer slots + flush/close until stored"),
    ("lock_wait_ms_per_mib", lambda s, op: _per_mib(s, op, "lock.wait_ns", "lock.wait_ns"),
     "time waiting for the per-file handle lock per MiB (ms)"),
    ("copies_per_byte", lambda s, op: _div(_num(s, "copy.write_bytes" if op == "write" else "copy.read_bytes"),
                                           _bytes_of(s, op)),
     "bytes memcpy'd in MemFS per byte served (FUSE buffer <-> stripe; libmemcached's own copy not counted)"),
    ("meta_round_trips_per_mib", lambda s, op: _div(_sum_prefix(s, "memcached_meta.", ("memcached_meta.cas_conflicts",
                                                                                       "memcached_meta.compactions")),
                                                    _bytes_of(s, op) / MIB),
     "memcached metadata round trips (get/add/set/append/cas/delete) per MiB"),
    ("demand_fetch_share", lambda s, op: _div(_num(s, "stripes.demand_fetches"), _num(s, "stripes.get"))
     if op == "read11" else math.nan, "stripes fetched on demand / stripes fetched (read)"),
    ("prefetch_hit_share", lambda s, op: _div(_num(s, "stripes.prefetch_hits"), _num(s, "stripes.get"))
     if op == "read11" else math.nan, "reads served by a prefetched stripe / stripes fetched (read)"),
]
# groups shown in their own columns above (or not per-request); every other nonzero counter goes to
# other_counters_per_mib (systems/memfs/README.md and /.memfs-stats name them)
KNOWN_PREFIXES = ("io.", "stripes.", "per_server.", "memcached_meta.", "meta_ops.", "locality.", "errors.",
                  "open_files.", "mc_rtt.")


def other_counters(stats: dict, op: str) -> str:
    """Every counter outside the known groups (what a newer MemFS adds: time, waits, copies), per MiB of
    the phase's bytes, so a new counter shows up in the table without a change here."""
    mib = _bytes_of(stats, op) / MIB
    out = []
    for k in sorted(stats):
        if k.startswith(KNOWN_PREFIXES) or not stats[k]:
            continue
        out.append(f"{k}={mc.fmt(_div(float(stats[k]), mib), 4)}/MiB")
    return "; ".join(out)


# ----------------------------------------------------------------------------- raw files -> pairs
def pairs(paths: list[str]) -> pd.DataFrame:
    """One row per MemFS envelope run with a side-by-side limit and per operation (raw files only)."""
    rows = []
    for p in paths:
        if "/raw/envelope/" not in str(p) or "design~memfs" not in str(p) or not Path(p).exists():
            continue
        rec = rawio.read(p)
        if rec["status"] != "ok":
            continue
        m = {x["metric"]: float(x["value"]) for x in rec["metrics"]}
        if "limit_set_bw" not in m:
            continue  # a run without the side-by-side limit (older code, or side_by_side_limit off)
        par, ex = rec["params"], rec.get("extra", {})
        side = ex.get("side_by_side_limit", {})
        for op, (mm, lm, phase, _, _) in OPS.items():
            stats = ex.get("memfs_stats", {}).get(phase, {})
            row = {"network": par["network"], "nodes": int(par["nodes"]), "size": par["size"], "rep": int(rec["rep"]),
                   "op": op, "memfs_bw": m.get(mm, math.nan), "limit_bw": m.get(lm, math.nan),
                   "value_size": side.get("value_size"),
                   "threads_per_node": side.get("set_threads" if op == "write" else "get_threads", side.get("threads")),
                   "bytes_per_node": side.get("bytes_per_node"),
                   "load_start": (rec.get("load_start") or [math.nan])[0],
                   "load_end": (rec.get("load_end") or [math.nan])[0], "raw_file": str(p)}
            row["ratio"] = _div(row["memfs_bw"], row["limit_bw"])
            # like for like (issue 22): the streams and transfer size of the MemFS phase, and the limit at the
            # same number of streams (mcbench threads = the benchmark's processes per node) beside the limit
            # at MemFS's in-flight stripe requests (its pool); the verdict uses the faster (an upper bound)
            procs = side.get("procs_per_node", ex.get("procs_per_node"))
            row["streams_per_node"] = procs
            row["transfer_bytes"] = ex.get("record_bytes")
            key = "set_bw" if op == "write" else "get_bw"
            by_threads = {r.get("threads"): r.get(key) for r in side.get("runs", [])}
            row["limit_same_streams_bw"] = float(by_threads.get(procs) or math.nan)
            row["limit_inflight_bw"] = float(by_threads.get(side.get("pool_threads_per_node")) or math.nan)
            row["ratio_same_streams"] = _div(row["memfs_bw"], row["limit_same_streams_bw"])
            # a node's elapsed time per MiB it moved (bandwidths are sums over the nodes): the scale the
            # summed counters (ms per MiB, over all threads and nodes) compare with
            n = int(par["nodes"])
            row["client_ms_per_mib"] = _div(n * MIB / 1e6 * 1e3, row["memfs_bw"])
            row["limit_ms_per_mib"] = _div(n * MIB / 1e6 * 1e3, row["limit_bw"])
            for col, fn, _ in BREAKDOWN:
                row[col] = fn(stats, op) if stats else math.nan
            row["other_counters_per_mib"] = other_counters(stats, op) if stats else ""
            rows.append(row)
    cols = ["network", "nodes", "size", "rep", "op", "streams_per_node", "transfer_bytes", "memfs_bw", "limit_bw",
            "ratio", "limit_same_streams_bw", "limit_inflight_bw", "ratio_same_streams", "client_ms_per_mib",
            "limit_ms_per_mib", "value_size", "threads_per_node",
            "bytes_per_node", "load_start", "load_end", "raw_file"] + [c for c, _, _ in BREAKDOWN] + [
            "other_counters_per_mib"]
    return pd.DataFrame(rows, columns=cols)


def verdict(ratios: list[float], failed: int = 0) -> str:
    """``measurement error`` if any ratio > 1.0; else ``met`` (median >= 0.8) or ``not met``."""
    ratios = [r for r in ratios if not math.isnan(r)]
    if not ratios:
        return FAILED if failed else NOT_RUN
    if any(r > VALID_MAX for r in ratios):
        return MEASUREMENT_ERROR
    return MET if statistics.median(ratios) >= TARGET else NOT_MET


def _mmm(xs: list[float]) -> tuple[float, float, float]:
    xs = [x for x in xs if not math.isnan(x)]
    return (min(xs), statistics.median(xs), max(xs)) if xs else (math.nan,) * 3


def memfs_configs(cfg: dict) -> list[tuple[str, int, str]]:
    """(network, nodes, size) of every MemFS-design envelope configuration the config asks for
    (the envelope matrix plus Table 2.1's, as layout.configs expands them)."""
    env, tab = cfg["envelope"], cfg["table"]
    if "memfs" not in env.get("designs", ["memfs"]):
        return []
    out = []
    keys = [(net, int(n), s) for net in env["networks"] for n in env["nodes"] for s in env["sizes"]]
    keys += [(net, int(n), tab["size"]) for net in tab["networks"] for n in tab["nodes"]]
    for k in keys:
        if k not in out:
            out.append(k)
    return out


def limit_table(pr: pd.DataFrame, df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per configuration and operation: MemFS, its side-by-side limit, the ratio (min/median/max over the
    repeats), the verdict and the median per-request breakdown. ``df`` (the tidy table) gives the
    failed / not-run counts."""
    rows = []
    for net, n, size in memfs_configs(cfg):
        for op, (mm, lm, _, lname, _) in OPS.items():
            sel = pr[(pr["network"] == net) & (pr["nodes"] == n) & (pr["size"] == size) & (pr["op"] == op)] \
                if not pr.empty else pr
            st = mc.stat(df, "envelope", mm, network=net, design="memfs", nodes=n, size=size)
            ratios = list(sel["ratio"].astype(float))
            rmin, rmed, rmax = _mmm(ratios)
            v = verdict(ratios, st["failed"])
            bad = v == MEASUREMENT_ERROR
            row = {"network": net, "nodes": n, "size": size, "op": op, "memfs_metric": mm,
                   "limit": f"mcbench {lname} (same job; the faster of streams_per_node and MemFS's pool "
                            f"threads per node; ratio_same_streams_median: against the same-streams run alone)",
                   "reps": len(sel),
                   "reps_above_1": int(sum(r > VALID_MAX for r in ratios if not math.isnan(r))),
                   "verdict": v, "target": TARGET_TEXT,
                   # a measurement error is never reported as a result: the ratio columns stay blank
                   "ratio_min": math.nan if bad else rmin, "ratio_median": math.nan if bad else rmed,
                   "ratio_max": math.nan if bad else rmax,
                   "measured_ratios_invalid": "" if not bad else " / ".join(mc.fmt(r) for r in ratios)}
            row["streams_per_node"] = sel["streams_per_node"].iloc[0] if len(sel) else ""
            row["transfer_bytes"] = sel["transfer_bytes"].iloc[0] if len(sel) else ""
            row["ratio_same_streams_median"] = _mmm(list(sel["ratio_same_streams"].astype(float)))[1]
            for name, col in (("memfs_bw", "memfs_bw"), ("limit_bw", "limit_bw"),
                              ("limit_same_streams_bw", "limit_same_streams_bw")):
                lo, med, hi = _mmm(list(sel[col].astype(float)))
                row.update({f"{name}_min": lo, f"{name}_median": med, f"{name}_max": hi})
            for col in ["client_ms_per_mib", "limit_ms_per_mib"] + [c for c, _, _ in BREAKDOWN]:
                row[col] = _mmm(list(sel[col].astype(float)))[1]
            row["other_counters_per_mib"] = sel["other_counters_per_mib"].iloc[0] if len(sel) else ""
            first = sel.iloc[0] if len(sel) else {}
            row.update({"value_size": first.get("value_size", ""),
                        "threads_per_node": first.get("threads_per_node", ""),
                        "bytes_per_node": first.get("bytes_per_node", ""),
                        "load_start_max": float(sel["load_start"].max()) if len(sel) else math.nan,
                        "load_end_max": float(sel["load_end"].max()) if len(sel) else math.nan,
                        "failed": st["failed"], "not_run": st["not_run"],
                        # ok MemFS runs without a side-by-side limit (older code, or the switch off): no ratio
                        "ok_runs_without_limit": max(0, st["count"] - len(sel)), "system_kind": st["system_kind"]})
            rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- issue 13
# (label, network, nodes (None: the Table 2.1 scale), size, op, earlier runs as the issue gives them)
ISSUE13_ROWS = [
    ("MemFS write 128 MiB, 4 nodes, IPoIB", "IPoIB", 4, "128MiB", "write", "0.26x / 0.15x"),
    ("MemFS 1-1 read, same", "IPoIB", 4, "128MiB", "read11", "0.66x / 0.53x"),
    ("MemFS vs memcached at 1 MiB (1GbE)", "1GbE", None, "1MiB", "read11",
     "read 1.24x / 1.03x (above its limit: the comparison was wrong)"),
    ("MemFS vs memcached at 1 MiB (1GbE), write", "1GbE", None, "1MiB", "write", ""),
    ("MemFS vs memcached at 1 MiB (IPoIB), 1-1 read", "IPoIB", None, "1MiB", "read11", ""),
    ("MemFS vs memcached at 1 MiB (IPoIB), write", "IPoIB", None, "1MiB", "write", ""),
]
EARLIER_HOW = ("earlier runs (issue 13: an earlier one / a fresh-machine one): mcbench run separately, 8 threads, "
               "time-bound, against MemFS's 1-process envelope run; the 1 MiB row at 2 nodes")


def issue13_table(lim: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    n_tab = int(max(cfg["table"]["nodes"]))
    rows = []
    for label, net, n, size, op, earlier in ISSUE13_ROWS:
        n = n_tab if n is None else n
        sel = lim[(lim["network"] == net) & (lim["nodes"] == n) & (lim["size"] == size) & (lim["op"] == op)] \
            if not lim.empty else lim
        r = sel.iloc[0] if len(sel) else None
        if r is None:
            this, v, reps = "", NOT_RUN, 0
        elif r["verdict"] == MEASUREMENT_ERROR:
            this, v, reps = f"invalid (ratio > {VALID_MAX:g}: {r['measured_ratios_invalid']})", r["verdict"], r["reps"]
        elif r["reps"]:
            this = f"{r['ratio_min']:.2f}x / {r['ratio_median']:.2f}x / {r['ratio_max']:.2f}x"
            v, reps = r["verdict"], r["reps"]
        else:
            this, v, reps = "", r["verdict"], 0
        row = {"row": label, "network": net, "nodes": n, "size": size, "op": op, "earlier_runs": earlier,
               "this_run_min_median_max": this, "reps": reps, "target": TARGET_TEXT, "verdict": v,
               "memfs_bw_median": r["memfs_bw_median"] if r is not None else math.nan,
               "limit_bw_median": r["limit_bw_median"] if r is not None else math.nan}
        for col in ["client_ms_per_mib", "limit_ms_per_mib"] + [c for c, _, _ in BREAKDOWN]:
            row[col] = r[col] if r is not None else math.nan
        row["what_stops_it"] = reading(row) if r is not None and v != MET else ""
        rows.append(row)  # every other counter: memfs_vs_memcached.csv (other_counters_per_mib)
    return pd.DataFrame(rows)


SMALL_REQUEST_KIB = 64  # below this, per-request cost (a FUSE round trip per request) dominates


def reading(r) -> str:
    """What the breakdown says stops this row, in words, from its numbers only (issue 13: 'the report
    shows, from the per-request breakdown, what physically stops them'). Empty where the row has no run."""
    def g(col):
        v = r.get(col, math.nan)
        return float(v) if v is not None and v == v else math.nan
    client, limit, kib = g("client_ms_per_mib"), g("limit_ms_per_mib"), g("fuse_request_kib")
    wait, queue, lock, rtt = (g("client_wait_ms_per_mib"), g("pool_queue_ms_per_mib"), g("lock_wait_ms_per_mib"),
                              g("mc_rtt_ms"))
    if math.isnan(client) or math.isnan(limit):
        return ""
    if r.get("verdict") == MEASUREMENT_ERROR:
        return (f"MemFS {client:.3g} ms/MiB and raw memcached {limit:.3g} ms/MiB are within timing noise of each "
                f"other: both run at the emulated link's rate, so the ratio straddles 1.0; MemFS is at its limit "
                f"here, and a longer window (more bytes per node) would be needed to tell them apart")
    gap = client - limit
    if gap <= 0:
        return f"MemFS {client:.3g} ms/MiB against raw memcached {limit:.3g} ms/MiB: no gap"
    if not math.isnan(kib) and kib < SMALL_REQUEST_KIB:
        return (f"requests reach MemFS at {kib:.3g} KiB each ({1024 / kib:.0f} per MiB: the application's record "
                f"size, passed on unchanged without the kernel's writeback cache); they blocked only {wait:.3g} "
                f"ms/MiB on the store, so the {gap:.3g} ms/MiB gap to raw memcached is per-request cost "
                f"(a FUSE round trip and a user-space handler per {kib:.3g} KiB), not memcached")
    waits = {"blocked on stripes": wait, "stripe jobs queued in the pool": queue, "waiting for the file lock": lock}
    name, worst = max(((k, v) for k, v in waits.items() if v == v), key=lambda kv: kv[1], default=("", math.nan))
    if not math.isnan(worst) and worst >= 0.25 * gap:
        return (f"requests are {kib:.3g} KiB; of the {gap:.3g} ms/MiB gap, {worst:.3g} ms/MiB is {name} (queued "
                f"{queue:.3g}, lock {lock:.3g}, blocked {wait:.3g} ms/MiB; a stripe round trip inside MemFS "
                f"{rtt:.3g} ms): the stripe fetches wait for CPU and each other, with every node's pool threads, "
                f"memcached and the clients sharing the machine's cores")
    return (f"requests are {kib:.3g} KiB and waits are small (blocked {wait:.3g}, queued {queue:.3g}, lock "
            f"{lock:.3g} ms/MiB): the {gap:.3g} ms/MiB gap is CPU in the FUSE path (kernel round trips, page "
            f"cache, the copy to the reader)")


def breakdown_legend() -> str:
    return "; ".join(f"{c}: {d}" for c, _, d in BREAKDOWN)


def write_markdown(tab: pd.DataFrame, path: str) -> None:
    """The issue-13 table as markdown (beside its CSV)."""
    cols = ["row", "earlier_runs", "this_run_min_median_max", "verdict", "client_ms_per_mib", "limit_ms_per_mib",
            "fuse_request_kib", "mc_rtt_ms", "mc_ms_per_mib", "pool_queue_ms_per_mib", "client_wait_ms_per_mib",
            "lock_wait_ms_per_mib", "copies_per_byte", "meta_round_trips_per_mib", "demand_fetch_share"]
    lines = ["# MemFS against raw memcached, side by side (issue 13)", "",
             f"Ratios MemFS / mcbench, measured in the same job (same cluster, network emulation, client count, "
             f"value size and bytes per node); {EARLIER_HOW}.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in tab.iterrows():
        lines.append("| " + " | ".join(mc.fmt(r[c]) if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    readings = [f"- **{r['row']}** ({r['verdict']}): {r['what_stops_it']}" for _, r in tab.iterrows()
                if r.get("what_stops_it")]
    if readings:
        lines += ["", "What stops each row, read from its breakdown:", ""] + readings
    lines += ["", f"Target: {TARGET_TEXT}. client_ms_per_mib / limit_ms_per_mib: a node's elapsed time per MiB "
              "through MemFS / through raw memcached. Breakdown (median over the repeats, MemFS's own counters for the "
              "phase, summed over threads and nodes, per MiB moved): " + breakdown_legend()
              + ". Every other counter per MiB: memfs_vs_memcached.csv, column other_counters_per_mib."]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n")
