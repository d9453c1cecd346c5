#!/usr/bin/env python3
"""inference claims (results/inference/claims.csv): the paper's statements as shape claims with its
numbers (which server leads, which is slowest, plateaus, which models are servable, latency order,
no failed requests, usability), absolute throughputs as info claims beside Table I. Every claim
carries the system_kind of the rows it rests on (stand-in:<what> for the local stand-ins).

Each builder takes the tidy table, the published values and the config section and returns Claims;
tests/test_inference_claims.py feeds each one data that contradicts it and sees it fail.

Tolerances (config `claims`) are per scale: config/config.yaml gives the cluster's (a dedicated GPU
node, 5 repeats: lead_tolerance 2 %, below the paper's own 4.4 % ResNet50 margin), config/local.yaml
the 2 shared cores' (10 %); `claims.basis` says why and every shape claim's note carries it. A claim
comparing servers where a local stand-in's row takes part is informative (the stand-in -- Python
JSON parsing for TF Serving, the Python backend for Triton -- would impose the verdict); on the
cluster (real rows) it keeps its verdict. The usability table (Table II, carried in the config) and
"only TorchServe serves BART" where the other servers are never tried are informative: they cannot
fail by measurement.
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


def imposed_by_standin(c: claims.Claim, why: str = "a stand-in's row takes part in the comparison") -> claims.Claim:
    """Cross-server verdicts resting on a local stand-in's rows are informative (observed relation kept)."""
    if c.verdict in (claims.REPRODUCED, claims.NOT_REPRODUCED) and "stand-in:" in (c.system_kind or ""):
        c.reproduced = f"{c.reproduced} [would read: {c.verdict}]"
        c.verdict = claims.INFO
        c.note = (c.note + "; " if c.note else "") + f"informative locally: {why}"
    return c


def _largest(users: list[int]) -> int:
    return users[-1]


def _ok_stats(df, metric="throughput") -> pd.DataFrame:
    return analysis.serve_stats(df, metric).dropna(subset=["mean"])


def _at(st: pd.DataFrame, model: str, users: int) -> dict:
    s = st[(st.model == model) & (st.users == users)]
    return dict(zip(s.server, s["mean"]))


def _common_users(st: pd.DataFrame, model: str, servers) -> list[int]:
    sets = [set(st[(st.model == model) & (st.server == s)].users.astype(int)) for s in servers]
    return sorted(set.intersection(*sets)) if sets else []


def _tfserving_worst(st: pd.DataFrame, c: claims.Claim, expected: str, pick, worse, describe) -> list[claims.Claim]:
    """A ResNet50 claim 'TF Serving is the worst server': at each user count pick(common users) chooses,
    worse(tfserving's value, the others' values) must hold; describe(u, tfserving, others) says what was seen."""
    servers = set(st[st.model == "resnet50"].server)
    users = _common_users(st, "resnet50", servers)
    if "tfserving" not in servers or len(servers) < 2 or not users:
        return [claims.shape_claim(c, None, "not run", expected)]
    holds, parts = True, []
    for u in pick(users):
        at = _at(st, "resnet50", u)
        others = [v for s, v in at.items() if s != "tfserving"]
        holds &= worse(at["tfserving"], others)
        parts.append(describe(u, at["tfserving"], others))
    return [imposed_by_standin(claims.shape_claim(c, holds, "; ".join(parts), expected))]


# ------------------------------------------------------------------ throughput order (Sec. IV.A, Fig. 2, Table I)
def resnet50_torchserve_leads(df, pub, cfg) -> list[claims.Claim]:
    tol = cfg["claims"]["lead_tolerance"]
    st = _ok_stats(df)
    sub = st[st.model == "resnet50"]
    servers = sorted(set(sub.server))
    c = _base("resnet50_torchserve_leads", "ResNet50: TorchServe has the highest throughput at every user count "
              "(Triton (PyTorch) trailing not far behind)", "Sec. IV.A, Figure 2, Table I",
              "inference_figure (figure2)", "results/inference/tables/figure2.csv", "req/s", _kind(sub))
    expected = ("TorchServe first at every user count (100 users: 104.10 vs 99.74, 74.53, 40.59 req/s: a 4.4 % "
                "margin)")
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
                     f"{_f(other)} (margin {at['torchserve'] / other - 1:+.1%})")
    return [imposed_by_standin(claims.shape_claim(c, holds if users else None,
                                                  "; ".join(parts) + f"; tolerance {tol:.0%}", expected))]


def resnet50_triton_pytorch_close(df, pub, cfg) -> list[claims.Claim]:
    frac = cfg["claims"]["close_fraction"]
    st = _ok_stats(df)
    sub = st[(st.model == "resnet50") & st.server.isin(["torchserve", "triton-pytorch"])]
    c = _base("resnet50_triton_pytorch_close", "ResNet50: Triton (PyTorch) is 'trailing not too far behind' "
              "TorchServe", "Sec. IV.A, Figure 2, Table I", "inference_figure (figure2)",
              "results/inference/tables/figure2.csv", "ratio", _kind(sub))
    expected = f"Triton (PyTorch) / TorchServe >= {frac} at every user count (100 users: 99.74 / 104.10 = 0.96)"
    users = _common_users(st, "resnet50", ["torchserve", "triton-pytorch"])
    if not users:
        return [claims.shape_claim(c, None, "not run", expected)]
    ratios = {u: _at(st, "resnet50", u)["triton-pytorch"] / _at(st, "resnet50", u)["torchserve"] for u in users}
    obs = ", ".join(f"{u}: {r:.2f}" for u, r in ratios.items()) + " (users: Triton (PyTorch) / TorchServe)"
    return [imposed_by_standin(claims.shape_claim(c, all(r >= frac for r in ratios.values()), obs, expected))]


def resnet50_tfserving_slowest(df, pub, cfg) -> list[claims.Claim]:
    st = _ok_stats(df)
    sub = st[st.model == "resnet50"]
    c = _base("resnet50_tfserving_slowest", "ResNet50: TF Serving is definitively slower than the other servers",
              "Sec. IV.A, Table I", "inference_table (table1)", "results/inference/tables/table1.csv", "req/s",
              _kind(sub))
    expected = "TF Serving last at every user count (40.59 req/s at 100 users; the others 74.53-104.10)"
    return _tfserving_worst(st, c, expected, lambda users: users, lambda tfs, others: tfs < min(others),
                            lambda u, tfs, others: f"{u}: TF Serving {_f(tfs)} vs slowest other {_f(min(others))}")


def resnet50_tfserving_highest_latency(df, pub, cfg) -> list[claims.Claim]:
    st = _ok_stats(df, "latency_median")
    sub = st[st.model == "resnet50"]
    c = _base("resnet50_tfserving_highest_latency", "ResNet50: TF Serving shows the highest latency of all the "
              "frameworks (at 1 user, and the same at 100 users)", "Sec. IV.A, Figure 1", "inference_figure "
              "(figure1)", "results/inference/tables/figure1.csv", "ms", _kind(sub))
    expected = "TF Serving's median latency the highest at 1 user and at the largest user count"
    return _tfserving_worst(st, c, expected, lambda users: sorted({users[0], users[-1]}),
                            lambda tfs, others: tfs > max(others),
                            lambda u, tfs, others: f"{u}: TF Serving {_f(tfs, 1)} ms vs highest other "
                                                   f"{_f(max(others), 1)}")


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
    return [imposed_by_standin(claims.shape_claim(c, at["triton-tensorflow"] > at["tfserving"],
                                                  f"{users[-1]} users: Triton (TF) {_f(at['triton-tensorflow'])} vs "
                                                  f"TF Serving {_f(at['tfserving'])}", expected))]


# ------------------------------------------------------------------ Wav2Vec2 and the TF models (Sec. IV.B-C, V.A)
def wav2vec2_triton_excels(df, pub, cfg) -> list[claims.Claim]:
    m = cfg["claims"]["excel_margin"]
    st = _ok_stats(df)
    pair = ["torchserve", "triton-pytorch"]
    sub = st[(st.model == "wav2vec2") & st.server.isin(pair)]
    c = _base("wav2vec2_triton_excels", "Wav2Vec2: Triton (PyTorch) and TorchServe comparable at low user counts, "
              "'but Triton excelled as the load increased'", "Sec. IV.B, Figure 3, Table I",
              "inference_figure (figure3)", "results/inference/tables/figure3.csv", "ratio", _kind(sub))
    expected = (f"Triton (PyTorch) / TorchServe > {1 + m:.2f} at the largest user count and not below its 1-user "
                "ratio (100 users: 41.43 / 35.16 = 1.18)")
    users = _common_users(st, "wav2vec2", pair)
    if not users:
        return [claims.shape_claim(c, None, "not run", expected)]
    r = {u: _at(st, "wav2vec2", u)["triton-pytorch"] / _at(st, "wav2vec2", u)["torchserve"] for u in users}
    lo, hi = users[0], users[-1]
    holds = r[hi] > 1 + m and r[hi] >= r[lo]
    obs = f"{hi} users: {r[hi]:.2f}; {lo} user(s): {r[lo]:.2f}"
    return [imposed_by_standin(claims.shape_claim(c, holds, obs, expected))]


def wav2vec2_triton_tf_half(df, pub, cfg) -> list[claims.Claim]:
    lo_b, hi_b = cfg["claims"]["half_band"]
    st = _ok_stats(df)
    pair = ["triton-pytorch", "triton-tensorflow"]
    sub = st[(st.model == "wav2vec2") & st.server.isin(pair)]
    c = _base("wav2vec2_triton_tf_half", "Wav2Vec2: Triton (PyTorch) 'processes almost double the requests' of "
              "Triton (TensorFlow)", "Sec. IV.B, Table I", "inference_table (table1)",
              "results/inference/tables/table1.csv", "ratio", _kind(sub))
    expected = f"Triton (TF) / Triton (PyTorch) in [{lo_b}, {hi_b}] (100 users: 24.51 / 41.43 = 0.59)"
    users = _common_users(st, "wav2vec2", pair)
    if not users:
        return [claims.shape_claim(c, None, "not run", expected)]
    at = _at(st, "wav2vec2", users[-1])
    r = at["triton-tensorflow"] / at["triton-pytorch"]
    return [imposed_by_standin(claims.shape_claim(c, lo_b <= r <= hi_b, f"{r:.2f} at {users[-1]} users "
                                                  f"({_f(at['triton-tensorflow'])} / {_f(at['triton-pytorch'])})",
                                                  expected))]


def truncated_order(df, pub, cfg) -> list[claims.Claim]:
    m = cfg["claims"]["excel_margin"]
    st = _ok_stats(df)
    sub = st[st.model == "wav2vec2_truncated"]
    c = _base("truncated_order", "Truncated Wav2Vec2: Triton (PyTorch) the best; TF Serving 'slightly better than "
              "PyTorch and much better than Triton (TensorFlow)'", "Sec. IV.C, Figure 4, Table I",
              "inference_figure (figure4)", "results/inference/tables/figure4.csv", "req/s", _kind(sub))
    expected = (f"at the largest user count Triton (PyTorch) first, TF Serving > TorchServe, TF Serving / Triton (TF) "
                f"> {1 + m:.2f} (100 users: 83.14; 69.34 > 51.24; 69.34 / 41.14 = 1.69)")
    need = set(layout.SERVERS)
    users = _common_users(st, "wav2vec2_truncated", sorted(need))
    if not users or not need <= set(sub.server):
        return [claims.shape_claim(c, None, "not run (needs all four servers)", expected)]
    at = _at(st, "wav2vec2_truncated", users[-1])
    holds = (max(at, key=at.get) == "triton-pytorch" and at["tfserving"] > at["torchserve"]
             and at["tfserving"] > (1 + m) * at["triton-tensorflow"])
    obs = f"{users[-1]} users: " + ", ".join(f"{layout.LABELS[s]} {_f(v)}" for s, v in
                                            sorted(at.items(), key=lambda kv: -kv[1]))
    return [imposed_by_standin(claims.shape_claim(c, holds, obs, expected))]


def tf_models_half_of_best(df, pub, cfg) -> list[claims.Claim]:
    lo_b, hi_b = cfg["claims"]["half_band"]
    st = _ok_stats(df)
    c = _base("tf_models_half_of_best", "TF Serving and Triton (TensorFlow) 'consistently the worst, in most cases "
              "performing around 0.5x than the best framework'", "Sec. V.A, Table I", "inference_table (table1)",
              "results/inference/tables/table1.csv", "ratio", "")
    expected = (f"most TF ratios (throughput / the model's best, largest user count) in [{lo_b}, {hi_b}] "
                "(Table I: 0.39, 0.72, 0.59, 0.83, 0.49: 4 of 5)")
    ratios, kinds = [], []
    for model in ("resnet50", "wav2vec2", "wav2vec2_truncated"):
        sub = st[st.model == model]
        servers = sorted(set(sub.server))
        users = _common_users(st, model, servers)
        if len(servers) < 2 or not users:
            continue
        at = _at(st, model, users[-1])
        best = max(at.values())
        for s in ("tfserving", "triton-tensorflow"):
            if s in at and max(at, key=at.get) != s:
                ratios.append((model, s, at[s] / best))
        kinds.append(_kind(sub))
    c.system_kind = "+".join(sorted({k for x in kinds for k in x.split("+")})) or "not run"
    if not ratios:
        return [claims.shape_claim(c, None, "not run", expected)]
    inside = [r for r in ratios if lo_b <= r[2] <= hi_b]
    obs = ", ".join(f"{layout.MODEL_LABELS[m]} {layout.LABELS[s]} {r:.2f}" for m, s, r in ratios) + \
        f" ({len(inside)} of {len(ratios)} in the band)"
    return [imposed_by_standin(claims.shape_claim(c, 2 * len(inside) > len(ratios), obs, expected))]


# ------------------------------------------------------------------ latency vs load (Sec. IV intro, IV.B)
def latency_flat_at_low_load(df, pub, cfg) -> list[claims.Claim]:
    low, tol = cfg["claims"]["latency_low_users"], cfg["claims"]["latency_flat_tolerance"]
    st = _ok_stats(df, "latency_median")
    out = []
    for model in ("resnet50", "wav2vec2", "wav2vec2_truncated", "bart"):
        sub = st[st.model == model]
        c = _base(f"latency_queueing_{model}", f"{layout.MODEL_LABELS[model]}: 'prediction latency is more or less "
                  "similar ... no matter the user load'; latency rises with users only through the wait in the "
                  "queue", "Sec. IV (intro), IV.B", "inference_aggregate", "results/inference/tables/summary.csv",
                  "ms", _kind(sub))
        expected = (f"per server, up to {low} users: median latency / users within {tol:.0%} of the 1-user latency "
                    "(one request at a time: the rest is queueing)")
        checks, parts = [], []
        for server, g in sub.groupby("server"):
            g = g.set_index("users")["mean"]
            if 1 not in g.index or len(g[g.index <= low]) < 2:
                continue
            base = float(g[1])
            devs = {int(u): float(v) / u / base - 1 for u, v in g[g.index <= low].items() if u > 1}
            checks.append(all(abs(d) <= tol for d in devs.values()))
            parts.append(f"{layout.LABELS[server]}: 1 user {_f(base, 1)} ms; per-request net of queueing "
                         + ", ".join(f"{u}: {d:+.0%}" for u, d in devs.items()))
        if not checks:
            out.append(claims.shape_claim(c, None, "not run (no 1-user run and another low user count)", expected))
            continue
        out.append(claims.shape_claim(c, all(checks), "; ".join(parts), expected))
    return out


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
def bart_torchserve_serves(df, pub, cfg) -> list[claims.Claim]:
    sub = analysis._sel(df, experiment="serve", model="bart")
    ts = sub[sub.server == "torchserve"]
    c = _base("bart_torchserve_serves", "TorchServe serves BART-large-CNN (its handler calls .generate())",
              "Sec. IV.D, Table I", "inference_table (table1)", "results/inference/tables/table1.csv", "req/s",
              _kind(ts))
    expected = "every TorchServe BART run ok (1.44 req/s at 100 users)"
    runs = ts.drop_duplicates(subset=["raw_file"])
    runs = runs[runs.status != "not-run"]
    if ts.empty or "bart" not in cfg["models"] or runs.empty:
        return [claims.shape_claim(c, None, "not run", expected)]
    ok = runs[runs.status == "ok"]
    thr = ts[(ts.status == "ok") & (ts.metric == "throughput")]["value"]
    holds = len(ok) == len(runs) and len(thr) > 0 and float(thr.min()) > 0
    obs = f"{len(ok)} of {len(runs)} runs ok, {_f(float(thr.mean()) if len(thr) else float('nan'))} req/s"
    return [claims.shape_claim(c, holds, obs, expected)]


def bart_only_torchserve(df, pub, cfg) -> list[claims.Claim]:
    """The other servers are the paper's gaps (never tried here): informative, unless someone did run them,
    in which case a BART served by another server contradicts the paper."""
    sub = analysis._sel(df, experiment="serve", model="bart")
    others = sub[sub.server != "torchserve"]
    c = _base("bart_only_torchserve", "Only TorchServe serves BART: Triton needs TorchScript and TF Serving a static "
              "graph, and .generate() fits neither", "Sec. IV.D, Table I", "inference_table (table1)",
              "results/inference/tables/table1.csv", "", _kind(others))
    expected = "Triton (both backends) and TF Serving: not servable"
    tried = others.drop_duplicates(subset=["raw_file"])
    tried = tried[tried.status != "not-run"]
    if others.empty or "bart" not in cfg["models"]:
        return [claims.shape_claim(c, None, "not run", expected)]
    if tried.empty:
        n = len(others.drop_duplicates(subset=["raw_file"]))
        c = claims.info_claim(c, f"not tried: {n} configurations kept as the paper's gaps (never jobs)", expected)
        c.note = "cannot fail here: the other servers are never asked to serve BART (no TorchScript of .generate())"
        return [c]
    served = tried[tried.status == "ok"]
    return [claims.shape_claim(c, served.empty, f"{len(tried)} runs on other servers, {len(served)} ok", expected)]


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
        out.append(imposed_by_standin(claims.shape_claim(c, holds, obs + f" ms; tolerance {tol:.0%}", expected)))
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
def usability_table2(df, pub, cfg) -> list[claims.Claim]:
    """Table II is the authors' judgement, carried in the config: shown beside the paper, never a verdict
    (compared with itself it could not fail). The text's "scoring the highest" is noted against the totals."""
    t = analysis.table2(cfg, pub)
    out = []
    for _, r in t[t.criterion == "total"].iterrows():
        c = _base(f"usability_total_{r['server']}", f"Table II usability total, {r['server']} (the authors' scores "
                  "1-5; TorchServe 'scoring the highest', Sec. V.A)", "Sec. V.A, Table II", "inference_table (table2)",
                  "results/inference/tables/table2.csv", "score", "real")
        c = claims.info_claim(c, int(r["score"]), None if pd.isna(r["published"]) else int(r["published"]))
        c.tolerance = "none (a judgement carried as data, not measured)"
        c.note = ("config inference.usability.scores; the paper's totals are TorchServe 23, Triton 23, TF Serving 20: "
                  "TorchServe ties Triton, it is not above it")
        out.append(c)
    return out


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


BUILDERS = [resnet50_torchserve_leads, resnet50_triton_pytorch_close, resnet50_tfserving_slowest,
            resnet50_tfserving_highest_latency, resnet50_triton_tf_above_tfserving, wav2vec2_triton_excels,
            wav2vec2_triton_tf_half, truncated_order, tf_models_half_of_best, latency_flat_at_low_load,
            throughput_plateaus, bart_torchserve_serves, bart_only_torchserve, truncated_vs_full,
            torchserve_lowest_latency, no_failed_requests, generator_not_bottleneck, usability_table2, info_table1]


def build(df: pd.DataFrame, pub: pd.DataFrame, cfg: dict) -> list[claims.Claim]:
    out = claims.run_builders(BUILDERS, df, pub, cfg)
    for c in out:  # a claim not run says why (the rehearsal found reasonless ones when a model is not configured)
        if c.verdict == claims.NOT_RUN and not str(c.note or "").strip():
            c.note = (f"not run: no ok runs of what it compares in this run's matrix (models {cfg.get('models')}, "
                      f"servers {cfg.get('servers')})")
    for c in out:  # every verdict says at which scale its tolerances were chosen
        if c.kind == "shape":
            c.note = (c.note + "; " if c.note else "") + f"tolerances: {cfg['claims']['basis']}"
    return out


def main(argv=None) -> int:
    return claims.main(__doc__, STUDY, lambda a, cfg: build(analysis.read_measurements(a.measurements),
                                                            analysis.read_published(a.published), cfg), argv=argv)


if __name__ == "__main__":
    sys.exit(main())
