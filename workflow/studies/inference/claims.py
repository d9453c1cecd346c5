#!/usr/bin/env python3
"""inference claims (results/inference/claims.csv): the paper's statements as shape claims with its
numbers (which server leads, which is slowest, plateaus, which models are servable, latency order,
no failed requests, usability), absolute throughputs as info claims beside Table I. Every claim
carries the system_kind of the rows it rests on (stand-in:<what> for the local stand-ins).

Each builder takes the tidy table, the published values and the config section and returns Claims;
tests/test_inference_claims.py feeds each one data that contradicts it and sees it fail.

Tolerances (config `claims`): leader_tolerance (10 %): a server "leads" if no other is more than 10 %
above it -- repeats on the shared 2-core machine scatter by about that much within one run;
plateau_tolerance (25 %): "constant" throughput from plateau_from_users on (the paper: 10; locally
4, since one worker thread on 2 cores saturates at fewer users than the paper's GPU).
"""

from __future__ import annotations

import math
import sys

import pandas as pd

from repro import claims
from studies.inference import analysis, layout

STUDY = "inference"
FIGURE_OF = {"resnet50": 2, "wav2vec2": 3, "wav2vec2_truncated": 4}
TRUNC_RATIO_BAND = (1.25, 2.25)  # "1.5 to 2 times"; Table I itself gives 1.46 (TorchServe) to 2.01


def _base(cid: str, text: str, ref: str, target: str, output: str, unit: str = "", kind: str = "") -> claims.Claim:
    return claims.Claim(STUDY, cid, text, ref, target, output, unit=unit, system_kind=kind or "")


def _kind(frame: pd.DataFrame | None) -> str:
    if frame is None or len(frame) == 0:
        return "not run"
    ks = sorted({k for v in frame["system_kind"] for k in str(v).split("+") if k and k != "nan"})
    return "+".join(ks) if ks else "not run"


def _f(x, nd=2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _ok_stats(df, metric="throughput") -> pd.DataFrame:
    return analysis.serve_stats(df, metric).dropna(subset=["mean"])


def _at(st: pd.DataFrame, model: str, users: int) -> dict:
    s = st[(st.model == model) & (st.users == users)]
    return dict(zip(s.server, s["mean"]))


def _common_users(st: pd.DataFrame, model: str, servers) -> list[int]:
    sets = [set(st[(st.model == model) & (st.server == s)].users.astype(int)) for s in servers]
    return sorted(set.intersection(*sets)) if sets else []


# ------------------------------------------------------------------ throughput order (Sec. IV.A, Fig. 2, Table I)
def resnet50_torchserve_leads(df, pub, cfg) -> list[claims.Claim]:
    tol = cfg["claims"]["leader_tolerance"]
    st = _ok_stats(df)
    sub = st[st.model == "resnet50"]
    servers = sorted(set(sub.server))
    c = _base("resnet50_torchserve_leads", "ResNet50: TorchServe has the highest throughput at every user count "
              "(Triton (PyTorch) trailing not far behind)", "Sec. IV.A, Figure 2, Table I",
              "inference_figure (figure2)", "results/inference/tables/figure2.csv", "req/s", _kind(sub))
    expected = "TorchServe first at every user count (100 users: 104.10 vs 99.74, 74.53, 40.59 req/s)"
    if "torchserve" not in servers or len(servers) < 2:
        return [claims.shape_claim(c, None, "not run", expected)]
    users = _common_users(st, "resnet50", servers)
    holds, parts = bool(users), []
    for u in users:
        at = _at(st, "resnet50", u)
        other = max(v for s, v in at.items() if s != "torchserve")
        lead = max(at, key=at.get)
        ok = at["torchserve"] >= (1 - tol) * other
        holds &= ok
        parts.append(f"{u} user(s): first {layout.LABELS[lead]}, TorchServe {_f(at['torchserve'])} vs best other "
                     f"{_f(other)}")
    return [claims.shape_claim(c, holds if users else None, "; ".join(parts) + f"; tolerance {tol:.0%}", expected)]


def resnet50_tfserving_slowest(df, pub, cfg) -> list[claims.Claim]:
    st = _ok_stats(df)
    sub = st[st.model == "resnet50"]
    c = _base("resnet50_tfserving_slowest", "ResNet50: TF Serving is definitively slower than the other servers",
              "Sec. IV.A, Table I", "inference_table (table1)", "results/inference/tables/table1.csv", "req/s",
              _kind(sub))
    expected = "TF Serving last (40.59 req/s at 100 users; the others 74.53-104.10)"
    servers = set(sub.server)
    users = _common_users(st, "resnet50", servers)
    if "tfserving" not in servers or len(servers) < 2 or not users:
        return [claims.shape_claim(c, None, "not run", expected)]
    at = _at(st, "resnet50", users[-1])
    others = {s: v for s, v in at.items() if s != "tfserving"}
    holds = at["tfserving"] < min(others.values())
    obs = f"{users[-1]} users: TF Serving {_f(at['tfserving'])}, others " + ", ".join(
        f"{layout.LABELS[s]} {_f(v)}" for s, v in sorted(others.items()))
    return [claims.shape_claim(c, holds, obs, expected)]


def resnet50_triton_tf_above_tfserving(df, pub, cfg) -> list[claims.Claim]:
    st = _ok_stats(df)
    sub = st[(st.model == "resnet50") & st.server.isin(["triton-tensorflow", "tfserving"])]
    c = _base("resnet50_triton_tf_above_tfserving", "Triton with a TensorFlow model serves it faster than TF "
              "Serving (ResNet50)", "Sec. V.A-B, Table I", "inference_table (table1)",
              "results/inference/tables/table1.csv", "req/s", _kind(sub))
    c.note = "the paper's truncated Wav2Vec2 row goes the other way (TF Serving 69.34 vs Triton (TF) 41.14 req/s)"
    expected = "Triton (TensorFlow) 74.53 > TF Serving 40.59 req/s at 100 users"
    users = _common_users(st, "resnet50", ["triton-tensorflow", "tfserving"])
    if not users:
        return [claims.shape_claim(c, None, "not run", expected)]
    at = _at(st, "resnet50", users[-1])
    return [claims.shape_claim(c, at["triton-tensorflow"] > at["tfserving"],
                               f"{users[-1]} users: Triton (TF) {_f(at['triton-tensorflow'])} vs TF Serving "
                               f"{_f(at['tfserving'])}", expected)]


# ------------------------------------------------------------------ plateau (Sec. IV.B-C)
def throughput_plateaus(df, pub, cfg) -> list[claims.Claim]:
    frm, tol = cfg["claims"]["plateau_from_users"], cfg["claims"]["plateau_tolerance"]
    st = _ok_stats(df)
    out = []
    for model in ("resnet50", "wav2vec2", "wav2vec2_truncated"):
        sub = st[st.model == model]
        c = _base(f"plateau_{model}", f"{layout.MODEL_LABELS[model]}: throughput stays constant from about "
                  f"{frm} users on (the model, not the user count, limits it)", "Sec. IV.B-C, Figures 2-4",
                  "inference_figure", f"results/inference/tables/figure{FIGURE_OF[model]}.csv",
                  "req/s", _kind(sub))
        expected = "constant from 10 users on (paper); here from plateau_from_users = " + str(frm)
        checks, parts = [], []
        for server, g in sub.groupby("server"):
            g = g[g.users >= frm].sort_values("users")
            if len(g) < 2:
                continue
            ref = float(g["mean"].iloc[0])
            dev = max(abs(float(v) / ref - 1) for v in g["mean"]) if ref > 0 else math.inf
            checks.append(dev <= tol)
            parts.append(f"{layout.LABELS[server]}: {', '.join(_f(v, 1) for v in g['mean'])} "
                         f"(users {', '.join(str(int(u)) for u in g['users'])}; max deviation {dev:.0%})")
        if not checks:
            out.append(claims.shape_claim(c, None, "not run (fewer than two user counts >= "
                                          f"{frm} measured)", expected))
            continue
        out.append(claims.shape_claim(c, all(checks), "; ".join(parts) + f"; tolerance {tol:.0%}", expected))
    return out


# ------------------------------------------------------------------ servability (Sec. IV.B, IV.D)
def bart_only_torchserve(df, pub, cfg) -> list[claims.Claim]:
    sub = analysis._sel(df, experiment="serve", model="bart")
    ts = sub[sub.server == "torchserve"]
    c = _base("bart_only_torchserve", "Only TorchServe serves BART (its handler calls .generate(); Triton needs "
              "TorchScript, TF Serving a static graph)", "Sec. IV.D, Table I", "inference_table (table1)",
              "results/inference/tables/table1.csv", "", _kind(ts))
    expected = "TorchServe 1.44 req/s; Triton (both backends) and TF Serving: not servable"
    if ts.empty or "bart" not in cfg["models"]:
        return [claims.shape_claim(c, None, "not run", expected)]
    runs = ts.drop_duplicates(subset=["raw_file"])
    runs = runs[runs.status != "not-run"]
    if runs.empty:
        return [claims.shape_claim(c, None, "not run", expected)]
    ok = runs[runs.status == "ok"]
    thr = ts[(ts.status == "ok") & (ts.metric == "throughput")]["value"]
    others = sub[sub.server != "torchserve"].drop_duplicates(subset=["raw_file"])
    others_measured = int((others.status != "not-run").sum())
    holds = len(ok) == len(runs) and len(thr) > 0 and float(thr.min()) > 0 and others_measured == 0
    obs = (f"TorchServe: {len(ok)} of {len(runs)} runs ok, {_f(float(thr.mean()) if len(thr) else float('nan'))} "
           f"req/s; other servers: {len(others)} configurations not servable (as in the paper), "
           f"{others_measured} measured")
    return [claims.shape_claim(c, holds, obs, expected)]


def truncated_vs_full(df, pub, cfg) -> list[claims.Claim]:
    st = _ok_stats(df)
    lo, hi = TRUNC_RATIO_BAND
    out = []
    for server in layout.SERVERS:
        if server == "tfserving":
            continue  # the paper has no full-length TF Serving row
        sub = st[(st.server == server) & st.model.isin(["wav2vec2", "wav2vec2_truncated"])]
        c = _base(f"truncated_vs_full_{server}", f"{layout.LABELS[server]}: the truncated Wav2Vec2's throughput is "
                  "1.5 to 2 times the full model's", "Sec. IV.C, Table I", "inference_table (table1)",
                  "results/inference/tables/table1.csv", "ratio", _kind(sub))
        p_t = analysis.published_value(pub, source="000 inference Table I", model="wav2vec2_truncated", server=server,
                                       metric="throughput")
        p_f = analysis.published_value(pub, source="000 inference Table I", model="wav2vec2", server=server,
                                       metric="throughput")
        expected = f"1.5-2 ({_f(p_t)} / {_f(p_f)} = {_f(p_t / p_f) if p_t and p_f else 'n/a'} at 100 users)"
        both = sorted(set(st[(st.server == server) & (st.model == "wav2vec2")].users)
                      & set(st[(st.server == server) & (st.model == "wav2vec2_truncated")].users))
        if not both:
            out.append(claims.shape_claim(c, None, "not run", expected))
            continue
        u = both[-1]
        t = _at(st, "wav2vec2_truncated", u)[server]
        f = _at(st, "wav2vec2", u)[server]
        r = t / f
        out.append(claims.shape_claim(c, lo <= r <= hi, f"{r:.2f} ({_f(t)} / {_f(f)} req/s at {int(u)} users); "
                                      f"band [{lo}, {hi}]", expected))
    return out


# ------------------------------------------------------------------ latency (Sec. V.A, Figure 1)
def torchserve_lowest_latency(df, pub, cfg) -> list[claims.Claim]:
    tol = cfg["claims"]["leader_tolerance"]
    st = _ok_stats(df, "latency_median")
    st = st[st.users == 1]
    out = []
    for model in ("resnet50", "wav2vec2", "wav2vec2_truncated"):
        sub = st[st.model == model]
        c = _base(f"latency_torchserve_lowest_{model}", f"{layout.MODEL_LABELS[model]}: TorchServe has the lowest "
                  "latency at 1 user (PyTorch 'consistently shows the lowest latency')", "Sec. V.A, Figure 1",
                  "inference_figure (figure1)", "results/inference/tables/figure1.csv", "ms", _kind(sub))
        expected = "TorchServe lowest (Figure 1, no numbers in the text)"
        at = dict(zip(sub.server, sub["mean"]))
        if "torchserve" not in at or len(at) < 2:
            out.append(claims.shape_claim(c, None, "not run", expected))
            continue
        best_other = min(v for s, v in at.items() if s != "torchserve")
        holds = at["torchserve"] <= (1 + tol) * best_other
        obs = ", ".join(f"{layout.LABELS[s]} {_f(v, 1)}" for s, v in sorted(at.items(), key=lambda kv: kv[1]))
        out.append(claims.shape_claim(c, holds, obs + f" ms; tolerance {tol:.0%}", expected))
    return out


# ------------------------------------------------------------------ failures (Sec. V.B)
def no_failed_requests(df, pub, cfg) -> list[claims.Claim]:
    runs = analysis._sel(df, experiment="serve").drop_duplicates(subset=["raw_file"])
    measured = runs[runs.status != "not-run"]
    c = _base("no_failed_requests", "No test showed any failed request, on any server or model", "Sec. V.B",
              "inference_aggregate", "results/inference/measurements.csv", "runs", _kind(measured))
    if measured.empty:
        return [claims.shape_claim(c, None, "not run", "0 failed requests")]
    failed = measured[measured.status == "failed"]
    fails = analysis._sel(df, experiment="serve", metric="failures", status="ok")["value"].sum()
    obs = f"{len(failed)} of {len(measured)} runs failed, {int(fails)} failed requests in the ok runs"
    if len(failed):
        obs += "; e.g. " + str(failed["failure"].iloc[0])[:160]
    return [claims.shape_claim(c, len(failed) == 0 and fails == 0, obs, "0 failed requests")]


# ------------------------------------------------------------------ the generator (Sec. III.D: not the bottleneck)
def generator_not_bottleneck(df, pub, cfg) -> list[claims.Claim]:
    frac = cfg["claims"]["generator_max_fraction"]
    ceil = analysis.stats(df, "throughput", ["users"], experiment="ceiling").dropna(subset=["mean"])
    st = _ok_stats(df)
    c = _base("generator_not_bottleneck", "Locust is not the bottleneck: every served throughput is far below the "
              "generator's own ceiling against a trivial endpoint", "Sec. III.D (distributed Locust so as not to "
              "overload)", "inference_aggregate", "results/inference/tables/limits.csv", "fraction", _kind(ceil))
    expected = f"served / ceiling <= {frac}"
    if ceil.empty or st.empty:
        return [claims.shape_claim(c, None, "not run", expected)]
    top, ceiling = float(st["mean"].max()), float(ceil["mean"].max())
    r = top / ceiling
    return [claims.shape_claim(c, r <= frac, f"{r:.3f} (best served {_f(top)} req/s, ceiling {_f(ceiling, 0)} req/s)",
                               expected)]


# ------------------------------------------------------------------ usability (Table II, Sec. V.A)
def usability_torchserve_highest(df, pub, cfg) -> list[claims.Claim]:
    t = analysis.table2(cfg, pub)
    tot = t[t.criterion == "total"].set_index("server")["score"]
    c = _base("usability_torchserve_highest", "TorchServe emerges as the most usable framework (the highest usability "
              "scores)", "Sec. V.A, Table II", "inference_table (table2)", "results/inference/tables/table2.csv",
              "score", "real")
    c.note = "Table II's totals: TorchServe 23, Triton 23, TF Serving 20 -- TorchServe ties Triton, not above it"
    expected = "TorchServe highest (Table II totals 23 / 23 / 20)"
    if "torchserve" not in tot or len(tot) < 2:
        return [claims.shape_claim(c, None, "not run", expected)]
    others = tot.drop("torchserve")
    holds = bool(tot["torchserve"] >= others.max())
    obs = ", ".join(f"{s} {int(v)}" for s, v in tot.sort_values(ascending=False).items())
    if holds and (others == tot["torchserve"]).any():
        obs += " (tied for highest)"
    return [claims.shape_claim(c, holds, obs, expected)]


# ------------------------------------------------------------------ the numbers beside Table I
def info_table1(df, pub, cfg) -> list[claims.Claim]:
    out = []
    t = analysis.table1(df, pub, cfg)
    for _, r in t.iterrows():
        if r["published_throughput"] is None or pd.isna(r["published_throughput"]):
            continue
        c = _base(f"info_table1_{r['model']}_{r['server']}", f"Table I throughput, {r['label']} (largest user count "
                  f"here: {'' if pd.isna(r['users']) else int(r['users'])}; paper: 100)", "Table I",
                  "inference_table (table1)", "results/inference/tables/table1.csv", "req/s",
                  r["system_kind"] or r["status"])
        c.note = f"weights: {r['weights']}" if r["weights"] else r["status"]
        rep = None if pd.isna(r["throughput"]) else round(float(r["throughput"]), 3)
        out.append(claims.info_claim(c, rep, r["published_throughput"]))
    return out


BUILDERS = [resnet50_torchserve_leads, resnet50_tfserving_slowest, resnet50_triton_tf_above_tfserving,
            throughput_plateaus, bart_only_torchserve, truncated_vs_full, torchserve_lowest_latency,
            no_failed_requests, generator_not_bottleneck, usability_torchserve_highest, info_table1]


def build(df: pd.DataFrame, pub: pd.DataFrame, cfg: dict) -> list[claims.Claim]:
    return claims.run_builders(BUILDERS, df, pub, cfg)


def main(argv=None) -> int:
    return claims.main(__doc__, STUDY, lambda a, cfg: build(analysis.read_measurements(a.measurements),
                                                            analysis.read_published(a.published), cfg), argv=argv)


if __name__ == "__main__":
    sys.exit(main())
