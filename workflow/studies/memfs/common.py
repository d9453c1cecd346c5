"""Shared helpers of the MemFS (2.4.1) analysis scripts: read the tidy table,
pick configurations, summarise repeats.  Figures and claims use only
results/memfs/measurements_envelope.csv (built from the raw files)."""

from __future__ import annotations

import math
import textwrap

import pandas as pd

from repro import cli, paramspace, plotting

DPI = plotting.DPI  # one resolution for every study (repro.plotting)

DESIGNS = {"memfs": "MemFS", "locality": "locality-based (AMFS policy)"}
PUBLISHED_DESIGN = {"memfs": "MemFS", "locality": "AMFS"}
SIZE_LABEL = {"1KiB": "1 KB", "1MiB": "1 MB", "128MiB": "128 MB"}
ENVELOPE_OPS = {
    "write": "write",
    "read11": "1-1 read",
    "readN1": "N-1 read",
    "read11_remote": "1-1 read (remote)",
}


def size_label(s: str) -> str:
    return SIZE_LABEL.get(s, s)


def size_key(s: str) -> int:
    try:
        return paramspace.size_bytes(s)
    except ValueError:
        return 0


def load(path) -> pd.DataFrame:
    df = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"size": str, "stripe": str})
    for col in ("nodes", "threads", "rep"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def pick(df: pd.DataFrame, experiment: str, metric: str | None = None, **eq) -> pd.DataFrame:
    sel = df[df["experiment"] == experiment]
    if metric is not None:
        sel = sel[(sel["metric"] == metric) | (sel["status"] != "ok")]
    for k, v in eq.items():
        if k not in sel.columns:
            return sel.iloc[0:0]
        sel = sel[sel[k] == v]
    return sel


def stat(df: pd.DataFrame, experiment: str, metric: str, **eq) -> dict:
    """mean/std/count of one metric in one configuration, with failed/not-run counts."""
    sel = pick(df, experiment, metric, **eq)
    ok = sel[(sel["status"] == "ok") & (sel["metric"] == metric)]["value"].astype(float)
    return {
        "mean": float(ok.mean()) if len(ok) else math.nan,
        "std": float(ok.std(ddof=1)) if len(ok) > 1 else (0.0 if len(ok) == 1 else math.nan),
        "count": len(ok),
        "failed": int((sel["status"] == "failed").sum()),
        "not_run": int((sel["status"] == "not-run").sum()),
        "unit": (sel[sel["status"] == "ok"]["unit"].iloc[0] if len(ok) else ""),
        "system_kind": ";".join(sorted({str(x) for x in sel["system_kind"] if str(x) and str(x) != "nan"})),
    }


def series(df: pd.DataFrame, experiment: str, metric: str, by: str, **eq) -> pd.DataFrame:
    """Mean and std of a metric against one parameter (ok runs only)."""
    sel = pick(df, experiment, metric, **eq)
    sel = sel[(sel["status"] == "ok") & (sel["metric"] == metric)]
    if sel.empty:
        return pd.DataFrame(columns=[by, "mean", "std", "count"])
    g = sel.groupby(by)["value"].agg(["mean", "std", "count"]).reset_index()
    return g


def fmt(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.{digits}g}"


# ----------------------------------------------------------------------------- figures
def figure_args(description: str):
    """The figure scripts' command line: --config (the memfs section), --measurements, --out."""
    return cli.parse(description, "measurements", "out")


def stand_in_note(df: pd.DataFrame) -> str:
    parts: list[str] = []
    for k in sorted({k for k in df["system_kind"].dropna().astype(str) if k.startswith("stand-in")}):
        for p in k.split(":", 1)[1].split(";"):
            p = p.strip().removeprefix("stand-in:").strip()
            if p and p not in parts:
                parts.append(p)
    return ("stand-in: " + "; ".join(parts)) if parts else ""


def plot_envelope(df: pd.DataFrame, cfg: dict, kind: str, out: str) -> None:
    """Figures 2.4 (kind=bw) and 2.5 (kind=tput): one panel per file size, x = nodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plotting.theme()
    env = cfg["envelope"]
    net = env["networks"][0]
    sizes = sorted(env["sizes"], key=size_key)
    unit = "MB/s" if kind == "bw" else "operations/s"
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), squeeze=False)
    colors = {"memfs": "tab:blue", "locality": "tab:orange"}
    markers = {"write": "o", "read11": "s", "readN1": "^", "read11_remote": "v"}
    sub = df[df["network"] == net] if "network" in df.columns else df
    for ax, size in zip(axes[0], sizes):
        for design in env["designs"]:
            for op, label in ENVELOPE_OPS.items():
                if op == "read11_remote" and design != "locality":
                    continue
                s = series(sub, "envelope", f"{op}_{kind}", "nodes", design=design, size=size).sort_values("nodes")
                if s.empty:
                    continue
                ax.errorbar(s["nodes"], s["mean"], yerr=s["std"].fillna(0), color=colors.get(design),
                            marker=markers[op], linestyle="--" if op == "read11_remote" else "-", capsize=2,
                            label=f"{'MemFS' if design == 'memfs' else 'locality'} {label}")
        ax.set_title(f"{size_label(size)} files")
        ax.set_xlabel("nodes")
        ax.set_ylabel(unit)
        ax.set_yscale("log")
        ax.set_xticks(sorted({int(n) for n in env["nodes"]}))
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        h, lab = ax.get_legend_handles_labels()
        for hh, ll in zip(h, lab):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7, frameon=False)
    what = "bandwidth" if kind == "bw" else "throughput (read()/write() calls)"
    title = textwrap.fill(f"MTC Envelope {what}, {net} ({stand_in_note(sub)})" if stand_in_note(sub)
                          else f"MTC Envelope {what}, {net}", 55 * len(sizes))  # ~55 characters per panel
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 0.95 - 0.05 * title.count("\n")))
    save(fig, out)


def save(fig, out: str) -> None:
    """The MemFS figures: the study's resolution, through the one save helper."""
    plotting.save(fig, out, dpi=DPI)
