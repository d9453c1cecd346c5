#!/usr/bin/env python3
"""MemFS study (paper 004, 2.4.1): tidy table, Table 2.1, MemFS vs raw memcached, claims.

Everything is computed from the raw files listed in --expected (a missing one
is a ``not-run`` row, a failure record a ``failed`` row); the published values
come from workflow/studies/memfs/published.csv.

    python3 -m studies.memfs.analyze --expected results/memfs/expected_raw_envelope.txt --config '<memfs config JSON>' \
        --published workflow/studies/memfs/published.csv --measurements results/memfs/measurements_envelope.csv \
        --summary ... --table21 ... --limit ... --claims ...
    python3 -m studies.memfs.analyze --tidy-only RAW... --measurements OUT      # the kick target
"""

from __future__ import annotations

import argparse
import math
import sys

import pandas as pd

from repro import claims as C
from repro import cli, published, tidy
from studies.memfs import common as mc
from studies.memfs.layout import system_kind as net_system_kind

STUDY = "memfs"
TARGET = "memfs_envelope"
SUMMARY_BY = ["experiment", "network", "design", "nodes", "size", "stripe", "threads"]
TABLE21_ROWS = [  # (published metric, experiment, our metric, designs)
    ("Write Bw", "envelope", "write_bw", ("locality", "memfs")),
    ("1-1 Read Bw", "envelope", "read11_bw", ("locality", "memfs")),
    ("1-1 Read Bw (remote)", "envelope", "read11_remote_bw", ("locality",)),
    ("N-1 Read Bw", "envelope", "readN1_bw", ("locality", "memfs")),
    ("Create", "metadata", "create_rate", ("locality", "memfs")),
    ("Open", "metadata", "open_rate", ("locality", "memfs")),
]


def experiment_of(path: str) -> str:
    rest = path.split("/raw/", 1)[1]
    return rest.split("/", 1)[0]


def collect(paths: list[str], cfg: dict | None) -> pd.DataFrame:
    def kind_of(path):
        if not cfg:
            return ""
        net = path.split("network~", 1)[1].split("/", 1)[0] if "network~" in path else ""
        n = cfg.get("networks", {}).get(net)
        return net_system_kind(dict(n, name=net)) if n else ""

    df = tidy.collect(paths, STUDY, experiment_of=experiment_of, system_kind_of=kind_of)
    for col in ("nodes", "threads"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    return df


# ----------------------------------------------------------------------------- tables
def published_lookup(pub: pd.DataFrame, metric: str, network: str, design: str):
    sel = pub[(pub["metric"] == metric) & (pub["network"] == network) & (pub["design"] == design)]
    if sel.empty:
        return math.nan, "", ""
    r = sel.iloc[0]
    return float(r["value"]), r["unit"], r["source"]


def table21(df: pd.DataFrame, cfg: dict, pub: pd.DataFrame) -> pd.DataFrame:
    tab = cfg["table"]
    n = int(tab["nodes"][0])
    rows = []
    for label, exp, metric, designs in TABLE21_ROWS:
        for net in tab["networks"]:
            for d in designs:
                eq = {"network": net, "design": d, "nodes": n}
                if exp == "envelope":
                    eq["size"] = tab["size"]
                s = mc.stat(df, exp, metric, **eq)
                pv, pu, _src = published_lookup(pub, label, net, mc.PUBLISHED_DESIGN[d])
                rows.append({
                    "metric": label, "network": net, "design": mc.DESIGNS[d],
                    "published": pv, "published_unit": pu, "published_nodes": 64,
                    "reproduced_mean": s["mean"], "reproduced_std": s["std"], "count": s["count"],
                    "failed": s["failed"], "not_run": s["not_run"], "unit": s["unit"] or pu,
                    "nodes": n, "size": tab["size"] if exp == "envelope" else "",
                    "our_metric": metric, "system_kind": s["system_kind"],
                })
    return pd.DataFrame(rows)


def limit_table(df: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    lim = cfg["limit"]
    rows = []
    env = df[(df["experiment"] == "envelope") & (df["status"] == "ok") & (df["design"] == "memfs")]
    for net in lim["networks"]:
        for n in lim["nodes"]:
            setbw = mc.stat(df, "limit", "memcached_set_bw", network=net, nodes=int(n))
            getbw = mc.stat(df, "limit", "memcached_get_bw", network=net, nodes=int(n))
            link = mc.stat(df, "limit", "link_rate_measured", network=net, nodes=int(n))
            conf = mc.stat(df, "limit", "link_rate_configured", network=net, nodes=int(n))
            sizes = sorted({s for s in env[(env["network"] == net) & (env["nodes"] == int(n))]["size"]},
                           key=mc.size_key)
            size = sizes[-1] if sizes else ""
            wbw = mc.stat(df, "envelope", "write_bw", network=net, design="memfs", nodes=int(n), size=size) \
                if size else {"mean": math.nan, "std": math.nan, "count": 0}
            rbw = mc.stat(df, "envelope", "read11_bw", network=net, design="memfs", nodes=int(n), size=size) \
                if size else {"mean": math.nan, "std": math.nan, "count": 0}
            rows.append({
                "network": net, "nodes": int(n), "value_size": lim.get("value_size") or cfg["memfs"]["stripe_size"],
                "memcached_set_bw": setbw["mean"], "memcached_set_std": setbw["std"],
                "memcached_get_bw": getbw["mean"], "memcached_get_std": getbw["std"],
                "memfs_size": size, "memfs_write_bw": wbw["mean"], "memfs_read11_bw": rbw["mean"],
                "write_fraction_of_set": wbw["mean"] / setbw["mean"] if setbw["count"] and wbw["count"] else math.nan,
                "read_fraction_of_get": rbw["mean"] / getbw["mean"] if getbw["count"] and rbw["count"] else math.nan,
                "link_configured_mbit": conf["mean"], "link_measured_mbit": link["mean"],
                "link_measured_std": link["std"], "count": setbw["count"],
                "failed": setbw["failed"], "not_run": setbw["not_run"], "system_kind": setbw["system_kind"],
            })
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- claims
def _base(cid, text, ref, unit="", kind_sk="real", note=""):
    return C.Claim(study=STUDY, claim_id=cid, claim=text, paper_ref=ref, target=TARGET,
                   output="results/memfs/claims_envelope.csv", unit=unit, system_kind=kind_sk or "real",
                   note=note)


def _verdict_missing(claim: C.Claim, *stats) -> C.Claim:
    if any(s["count"] == 0 for s in stats):
        claim.verdict = C.FAILED if any(s["failed"] for s in stats) else C.NOT_RUN
    return claim


def _both(a: dict, b: dict, holds):
    """``holds``, or None where either side has no runs."""
    return None if (a["count"] == 0 or b["count"] == 0) else holds


def _kinds(*stats) -> str:
    ks = sorted({k for s in stats for k in s["system_kind"].split(";") if k})
    return ";".join(ks) or "real"


def build_claims(df: pd.DataFrame, cfg: dict, pub: pd.DataFrame, t21: pd.DataFrame, lim: pd.DataFrame) -> list:
    env = cfg["envelope"]
    fig_net = env["networks"][0]
    n_max = int(max(env["nodes"]))
    out = []

    def versus(metric, size, winner):
        """MemFS's and the locality design's stats of an envelope metric (figure network, most nodes) and
        whether ``winner`` has the higher mean."""
        m, loc = (mc.stat(df, "envelope", metric, network=fig_net, design=d, nodes=n_max, size=size)
                  for d in ("memfs", "locality"))
        hi, lo = (m, loc) if winner == "memfs" else (loc, m)
        return m, loc, _both(m, loc, hi["mean"] > lo["mean"])

    # --- N-1 read: MemFS beats the locality design at every size
    for size in sorted(env["sizes"], key=mc.size_key):
        m, loc, ok = versus("readN1_bw", size, "memfs")
        c = _base(f"envelope-n1-read-{size}", f"MemFS beats the locality-based design on N-1 read ({mc.size_label(size)} files)",
                  "Section 2.4.1, Figures 2.4a-c ('For all file sizes, MemFS outperforms AMFS for the N-1 read operation')",
                  "MB/s", _kinds(m, loc), note=f"{n_max} nodes, {fig_net}; locality N-1 bandwidth includes the multicast (replicate-on-read)")
        C.shape_claim(c, ok, f"MemFS {mc.fmt(m['mean'])} vs locality {mc.fmt(loc['mean'])} MB/s"
                      + (f" (x{m['mean'] / loc['mean']:.2f})" if ok is not None and loc["mean"] > 0 else ""),
                      "MemFS N-1 read > locality N-1 read")
        out.append(_verdict_missing(c, m, loc))

    # --- 1-1 read at 128 MB: the locality design wins (local reads)
    big = max(env["sizes"], key=mc.size_key)
    m, loc, ok = versus("read11_bw", big, "locality")
    c = _base(f"envelope-11-read-{big}", f"The locality-based design wins 1-1 read at {mc.size_label(big)} (all its reads are local)",
              "Section 2.4.1, Figure 2.4c; Section 2.4.3 ('AMFS achieves better bandwidth for 1-1 read for large file sizes (128MB)')",
              "MB/s", _kinds(m, loc), note=f"{n_max} nodes, {fig_net}")
    C.shape_claim(c, ok, f"locality {mc.fmt(loc['mean'])} vs MemFS {mc.fmt(m['mean'])} MB/s", "locality 1-1 read > MemFS 1-1 read")
    out.append(_verdict_missing(c, m, loc))

    # --- metadata: MemFS create/open rates grow with nodes
    md = cfg["metadata"]
    md_net = md["networks"][0]
    lo, hi = int(min(md["nodes"])), int(max(md["nodes"]))
    for op, metric in (("create", "create_rate"), ("open", "open_rate")):
        a = mc.stat(df, "metadata", metric, network=md_net, design="memfs", nodes=lo)
        b = mc.stat(df, "metadata", metric, network=md_net, design="memfs", nodes=hi)
        ok = _both(a, b, b["mean"] > a["mean"])
        s = mc.series(df, "metadata", metric, "nodes", network=md_net, design="memfs")
        trend = ", ".join(f"{int(r['nodes'])}: {mc.fmt(r['mean'])}" for _, r in s.iterrows())
        c = _base(f"metadata-{op}-scaling", f"MemFS {op} rate grows with the number of nodes",
                  "Section 2.4.1, Figure 2.6 ('MemFS achieves linear scalability for both open and create')",
                  "ops/s", _kinds(a, b), note=f"{md_net}; {md['ranks_per_node']} rank(s) per node")
        C.shape_claim(c, ok, f"ops/s by nodes: {trend}", f"rate at {hi} nodes > rate at {lo} node(s)")
        out.append(_verdict_missing(c, a, b))

    # --- remote 1-1 read of the locality design is slower than MemFS's 1-1 read
    tab = cfg["table"]
    nt = int(tab["nodes"][0])
    for net in tab["networks"]:
        m = mc.stat(df, "envelope", "read11_bw", network=net, design="memfs", nodes=nt, size=tab["size"])
        r = mc.stat(df, "envelope", "read11_remote_bw", network=net, design="locality", nodes=nt, size=tab["size"])
        ok = _both(m, r, r["mean"] < m["mean"])
        pub_ratio = pub[(pub["metric"] == "remote 1-1 read speed-up MemFS/AMFS") & (pub["network"] == net)]
        c = _base(f"table21-remote-{net}", f"Remote 1-1 read of the locality-based design is slower than MemFS's 1-1 read ({net})",
                  "Section 2.4.1, Table 2.1 (MemFS faster by 4.63x on IPoIB, 1.4x on 1GbE)", "MB/s", _kinds(m, r),
                  note=f"{nt} nodes, {mc.size_label(tab['size'])} files")
        C.shape_claim(c, ok, f"locality remote {mc.fmt(r['mean'])} vs MemFS {mc.fmt(m['mean'])} MB/s"
                      + (f" (MemFS x{m['mean'] / r['mean']:.2f})" if ok is not None and r["mean"] > 0 else ""),
                      "locality remote 1-1 read < MemFS 1-1 read")
        out.append(_verdict_missing(c, m, r))
        ci = _base(f"table21-remote-speedup-{net}", f"MemFS 1-1 read / locality remote 1-1 read ({net})",
                   "Section 2.4.1 text on Table 2.1", "x", _kinds(m, r), note=f"{nt} nodes here, 64 in the paper")
        C.info_claim(ci, (m["mean"] / r["mean"]) if (m["count"] and r["count"] and r["mean"] > 0) else None,
                     float(pub_ratio.iloc[0]["value"]) if not pub_ratio.empty else "")
        out.append(ci)
        loc = mc.stat(df, "envelope", "read11_bw", network=net, design="locality", nodes=nt, size=tab["size"])
        pub_deg = pub[(pub["metric"] == "AMFS local/remote 1-1 read") & (pub["network"] == net)]
        ci = _base(f"table21-remote-degradation-{net}", f"Locality design: local / remote 1-1 read bandwidth ({net})",
                   "Section 2.4.1 text on Table 2.1 ('degraded by a factor of approximately 4' on IPoIB, '7' on 1GbE)",
                   "x", _kinds(loc, r), note=f"{nt} nodes here, 64 in the paper")
        C.info_claim(ci, (loc["mean"] / r["mean"]) if (loc["count"] and r["count"] and r["mean"] > 0) else None,
                     float(pub_deg.iloc[0]["value"]) if not pub_deg.empty else "")
        out.append(ci)

    # --- Figure 2.3a: 512 KiB near the best stripe size for writes
    sw = cfg["sweeps"]
    s = mc.series(df, "stripe", "write_bw", "stripe", network=sw["network"], nodes=int(sw["nodes"][0]))
    st512 = mc.stat(df, "stripe", "write_bw", network=sw["network"], nodes=int(sw["nodes"][0]), stripe="512KiB")
    c = _base("fig23a-stripe-512KiB", "512 KiB is near the best stripe size for writes (within 10 % of the best)",
              "Section 2.3.2, Figure 2.3a ('a stripe size of 512KB ... achieves the best bandwidth when writing files')",
              "MB/s", st512["system_kind"] or "real", note=f"{sw['nodes'][0]} nodes, {sw['size']} files, {sw['network']}")
    if s.empty or st512["count"] == 0:
        C.shape_claim(c, None, "", "write_bw(512 KiB) >= 0.9 x best")
        _verdict_missing(c, st512)
    else:
        best = s.loc[s["mean"].idxmax()]
        ratio = st512["mean"] / best["mean"]
        order = ", ".join(f"{r['stripe']}: {mc.fmt(r['mean'])}" for _, r in
                          s.assign(k=s["stripe"].map(mc.size_key)).sort_values("k").iterrows())
        C.shape_claim(c, ratio >= 0.9, f"512 KiB at {ratio:.2f} of the best ({best['stripe']}); MB/s by stripe: {order}",
                      "write_bw(512 KiB) >= 0.9 x best")
    out.append(c)

    # --- Figure 2.3b: read bandwidth grows with prefetch threads, then flattens
    s = mc.series(df, "threads", "read_bw", "threads", network=sw["network"], nodes=int(sw["nodes"][0])).sort_values("threads")
    c = _base("fig23b-prefetch-threads", "Read bandwidth grows with the number of prefetch threads, then flattens",
              "Section 2.3.2, Figure 2.3b (prefetching 'is ... dependant ... on the number of threads that do prefetching')",
              "MB/s", mc.stat(df, "threads", "read_bw", network=sw["network"])["system_kind"] or "real",
              note=f"{sw['nodes'][0]} nodes, {sw['size']} files; grows: best >= 1.2 x one thread; flattens: the largest "
                   "pool within 10 % of the one before and within 10 % of the best (no further growth, no collapse)")
    if len(s) < 3:
        C.shape_claim(c, None, "", "grows, then flattens")
        c.verdict = C.NOT_RUN
    else:
        v = list(s["mean"])
        grows = max(v) >= 1.2 * v[0]
        flat = abs(v[-1] - v[-2]) <= 0.1 * v[-2] and v[-1] >= 0.9 * max(v)
        order = ", ".join(f"{int(r['threads'])}: {mc.fmt(r['mean'])}" for _, r in s.iterrows())
        C.shape_claim(c, grows and flat, f"MB/s by threads: {order} (grows: {grows}, flattens: {flat})",
                      "grows, then flattens")
    out.append(c)

    # --- absolute values beside the published ones (Table 2.1)
    for _, r in t21.iterrows():
        ci = _base(f"table21-{r['metric'].replace(' ', '_').replace('(', '').replace(')', '')}-{r['network']}-"
                   f"{'memfs' if r['design'] == 'MemFS' else 'locality'}",
                   f"Table 2.1 {r['metric']}, {r['design']}, {r['network']}", "Table 2.1 (64 nodes, 1 MB files)",
                   r["unit"], r["system_kind"] or "real", note=f"reproduced at {r['nodes']} nodes (mean of {r['count']})")
        C.info_claim(ci, None if r["count"] == 0 else r["reproduced_mean"], r["published"] if not math.isnan(r["published"]) else "")
        if r["count"] == 0 and r["failed"]:
            ci.verdict = C.FAILED
        out.append(ci)

    # --- MemFS as a fraction of raw memcached, and the links
    for _, r in lim.iterrows():
        for what, col in (("write / memcached set", "write_fraction_of_set"), ("1-1 read / memcached get", "read_fraction_of_get")):
            ci = _base(f"limit-{col}-{r['network']}-{r['nodes']}", f"MemFS {what} bandwidth ({r['network']}, {r['nodes']} nodes)",
                       "Section 2.4.3 ('MemFS performance is only bound by network capacity')", "fraction",
                       r["system_kind"] or "real", note=f"MemFS at {mc.size_label(r['memfs_size'])} files; raw memcached via mcbench, "
                       f"value size {r['value_size']} B")
            C.info_claim(ci, None if (isinstance(r[col], float) and math.isnan(r[col])) else r[col], "")
            out.append(ci)
        if not (isinstance(r["link_measured_mbit"], float) and math.isnan(r["link_measured_mbit"])):
            pubnet = pub[(pub["metric"] == "network bandwidth") & (pub["network"] == r["network"])]
            ci = _base(f"limit-link-{r['network']}-{r['nodes']}", f"Measured link rate, {r['network']} (iperf3, one stream)",
                       "Section 2.4 (IPoIB ~1 GB/s; commodity 1 Gb/s Ethernet)", "Mbit/s", r["system_kind"] or "real",
                       note=f"configured {mc.fmt(r['link_configured_mbit'])} Mbit/s")
            C.info_claim(ci, r["link_measured_mbit"], float(pubnet.iloc[0]["value"]) if not pubnet.empty else "")
            out.append(ci)
    rss = mc.stat(df, "envelope", "fuse_rss_max", network=fig_net, design="memfs", nodes=n_max, size=big)
    pub_rss = pub[pub["metric"] == "FUSE process memory"]
    ci = _base("fuse-rss", "Memory of one MemFS FUSE process", "Section 2.4.2 ('each FUSE process allocates around 200MB')",
               "MB", rss["system_kind"] or "real", note=f"largest RSS after the {mc.size_label(big)} envelope run, {n_max} nodes")
    C.info_claim(ci, rss["mean"] / 1e6 if rss["count"] else None, float(pub_rss.iloc[0]["value"]) if not pub_rss.empty else "")
    out.append(ci)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--expected")
    ap.add_argument("--tidy-only", nargs="*")
    ap.add_argument("--config")
    ap.add_argument("--published")
    ap.add_argument("--measurements", required=True)
    ap.add_argument("--summary")
    ap.add_argument("--table21")
    ap.add_argument("--limit")
    ap.add_argument("--claims")
    a = ap.parse_args(argv)
    cfg = cli.load_config(a.config) if a.config else None
    if a.tidy_only is not None:
        tidy.write_csv(collect(a.tidy_only, cfg), a.measurements)
        return 0
    expected = [ln.strip() for ln in open(a.expected) if ln.strip()]
    df = collect(expected, cfg)
    tidy.write_csv(df, a.measurements)
    print(f"{len(df)} rows from {len(expected)} expected raw files "
          f"({(df['status'] == 'failed').sum()} failed rows, {(df['status'] == 'not-run').sum()} not run)")
    df = mc.load(a.measurements)  # exactly what the table says
    tidy.write_csv(tidy.summarize(df, SUMMARY_BY), a.summary)
    pub = published.load(a.published)
    pub["value"] = pub["value_num"]
    t21 = table21(df, cfg, pub)
    tidy.write_csv(t21, a.table21)
    lim = limit_table(df, cfg)
    tidy.write_csv(lim, a.limit)
    claims = build_claims(df, cfg, pub, t21, lim)
    C.write(claims, a.claims)
    for c in claims:
        if c.kind == "shape":
            print(f"{c.verdict:>15}  {c.claim_id}: {c.reproduced}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
