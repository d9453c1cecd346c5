"""Raw result files: one JSON document per run, written atomically.

Schema ``repro.raw/1``::

    {
      "schema": "repro.raw/1",
      "study": "mpifuse", "experiment": "read_scaling",
      "params": {"source": "home", "variant": "osr", "nodes": 4, "size": "10MB"},
      "rep": 0,
      "status": "ok" | "failed",
      "failure": null | "why it failed (sanity check, crash, timeout)",
      "system_kind": "real" | "model" | "stand-in:<what>",
      "metrics": [{"metric": "time", "value": 1.25, "unit": "s", "labels": {"node": 1}}],
      "sanity": {"hash_match": true},
      "started_at": "...", "finished_at": "...",
      "host": "...", "git_sha": "...", "tool_versions": {...},
      "extra": {...}
    }

A file is complete by construction: it is written to a temporary name in the
same directory and renamed, so a crash never leaves a partial file under the
final name.  A run whose sanity check failed is kept as a *failure record*
(``status: failed``) under ``results/<study>/failed/`` and the job exits
non-zero, so Snakemake reports it loudly and re-runs it on resume, while the
aggregation still shows the configuration as failed instead of dropping it.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from . import provenance

SCHEMA = "repro.raw/1"
STATUSES = ("ok", "failed")
REQUIRED = ("schema", "study", "experiment", "params", "rep", "status", "system_kind", "metrics")


class RawFileError(ValueError):
    """A raw file that does not follow the schema."""


def write_json_atomic(path: str | os.PathLike, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=1, sort_keys=False, allow_nan=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def metric(name: str, value: float, unit: str, **labels) -> dict:
    value = float(value)
    if not math.isfinite(value):
        raise RawFileError(f"metric {name} has a non-finite value {value}")
    out = {"metric": name, "value": value, "unit": unit}
    if labels:
        out["labels"] = labels
    return out


def values(rec: dict, name: str, /, **labels) -> list:
    """The values of metric ``name`` in a record, of the entries whose labels include ``labels``."""
    return [m["value"] for m in rec["metrics"]
            if m["metric"] == name and all(m.get("labels", {}).get(k) == v for k, v in labels.items())]


def value(rec: dict, name: str, /, **labels):
    """The first of ``values(rec, name, **labels)``, or None."""
    return next(iter(values(rec, name, **labels)), None)


def new_record(study: str, experiment: str, params: dict, rep: int, system_kind: str,
               tool_versions: dict | None = None) -> dict:
    rec = {
        "schema": SCHEMA,
        "study": study,
        "experiment": experiment,
        "params": dict(params),
        "rep": int(rep),
        "status": "ok",
        "failure": None,
        "system_kind": system_kind,
        "metrics": [],
        "sanity": {},
        "started_at": provenance.now_iso(),
        "finished_at": None,
        "load_start": provenance.loadavg(),
    }
    rec.update(provenance.record(tool_versions))
    return rec


def finish(rec: dict) -> dict:
    rec["finished_at"] = provenance.now_iso()
    rec["load_end"] = provenance.loadavg()
    validate(rec)
    return rec


def validate(rec: dict, where: str = "raw record") -> dict:
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise RawFileError(f"{where}: missing keys {missing}")
    if rec["schema"] != SCHEMA:
        raise RawFileError(f"{where}: schema {rec['schema']!r}, expected {SCHEMA!r}")
    if rec["status"] not in STATUSES:
        raise RawFileError(f"{where}: status {rec['status']!r} not in {STATUSES}")
    if rec["status"] == "failed" and not rec.get("failure"):
        raise RawFileError(f"{where}: a failed record must say why (failure)")
    kind = rec["system_kind"]
    if not (kind in ("real", "model") or kind.startswith("stand-in:")):
        raise RawFileError(f"{where}: system_kind {kind!r} must be real, model or stand-in:<what>")
    for m in rec["metrics"]:
        for key in ("metric", "value", "unit"):
            if key not in m:
                raise RawFileError(f"{where}: metric without {key}: {m}")
        if not isinstance(m["value"], (int, float)) or not math.isfinite(m["value"]):
            raise RawFileError(f"{where}: metric {m['metric']} has non-numeric value {m['value']!r}")
    if rec["status"] == "ok" and not rec["metrics"]:
        raise RawFileError(f"{where}: an ok record without metrics")
    return rec


def read(path: str | os.PathLike) -> dict:
    path = Path(path)
    try:
        rec = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RawFileError(f"{path}: not valid JSON ({exc})") from exc
    return validate(rec, str(path))


def failure_path(raw_path: str | os.PathLike) -> Path:
    """``results/<study>/raw/a~1/rep~0.json`` -> ``results/<study>/failed/a~1/rep~0.json``."""
    parts = list(Path(raw_path).parts)
    try:
        i = len(parts) - 1 - parts[::-1].index("raw")
    except ValueError as exc:
        raise ValueError(f"{raw_path} is not under a raw/ directory") from exc
    parts[i] = "failed"
    return Path(*parts)


def write_failure(raw_path: str | os.PathLike, rec: dict, why: str) -> Path:
    """Keep a failed run's record beside the results, never under the raw name."""
    rec = dict(rec)
    rec["status"] = "failed"
    rec["failure"] = why
    rec["finished_at"] = provenance.now_iso()
    validate(rec)
    return write_json_atomic(failure_path(raw_path), rec)


def clear_failure(raw_path: str | os.PathLike) -> None:
    try:
        os.unlink(failure_path(raw_path))
    except FileNotFoundError:
        pass
