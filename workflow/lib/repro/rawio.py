"""Raw result files: one JSON document per run, written atomically.

Schema ``repro.raw/1``::

    {
      "schema": "repro.raw/1",
      "study": "mpifuse", "experiment": "read_scaling",
      "params": {"source": "home", "variant": "osr", "nodes": 4, "size": "10MB"},
      "rep": 0,
      "status": "ok" | "failed",
      "failure": null | "why it failed (sanity check, crash, timeout)",
      "failure_kind": "crash" | "timeout" | "overload" | "lost_node" | "error",  (failed records only)
      "failure_load": {"loadavg_1m": 3.2, "ncpu": 2},                            (failed records only)
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

A failure record says what kind of failure it was (``failure_kind``, see ``classify``) and the load
the host measured when it was written (``failure_load``), so that the machine's failures (a lost
node, an operation that timed out on an overloaded host) are told apart from the code's (a crash).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path

from . import procs, provenance

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


FAILURE_KINDS = ("crash", "timeout", "overload", "lost_node", "error")
OVERLOAD_PER_CPU = procs.OVERLOAD_PER_CPU  # load per CPU above which a timeout is an overload

# a node or rank disappeared: the launcher lost a rank, srun reported a node failure, a peer went away
_LOST = re.compile(r"node fail|NODE_FAIL|lost (?:a |the )?(?:rank|node|connection|communication)|"
                   r"unreachable|no route to host|host is down|connection reset by peer|"
                   r"has lost communication|remote daemon|orted.*(?:died|lost)|prted.*(?:died|lost)|"
                   r"task launch .* failed on node|node .* (?:is )?(?:down|gone|not responding)", re.I)
# a process died on a signal that says it crashed (not one sent to stop it)
_CRASH_SIG = re.compile(r"killed by SIG(?:SEGV|BUS|ABRT|ILL|FPE|SYS|TRAP)|segmentation fault|"
                        r"caught signal|core dumped|bus error|Aborted \(core|signal 11\b", re.I)
# an operation or job ran past its limit
_TIMEOUT = re.compile(r"\btimed? out\b|time-?outs? (?:after|occurred|expired|of \d|while)|TIMEOUT OCCURRED|"
                      r"TimeoutExpired|TimeoutError|\btimeout:|time limit|deadline|not ready (?:within|after)|"
                      r"did not (?:start|come up|answer|finish|mount|register|respond)\b.{0,60}"
                      r"\b(?:in|within|after) \d", re.I)
# a tool that ended badly (any other signal, a non-zero exit) or operations that failed
_EXITED = re.compile(r"\bexited (?:with )?(?:status |code )?-?[1-9]\d*|killed by SIG\w+|\bexit (?:status|code) "
                     r"-?[1-9]|returncode -?[1-9]|\brc[ =]-?[1-9]", re.I)
# a failure that names its own definite cause (a server's refusal, wrong data): never the machine's load
_DEFINITE = re.compile(r"ITEM TOO BIG|NOT FOUND|CLIENT ERROR|SERVER ERROR|PROTOCOL ERROR|out of memory|"
                       r"mismatch|differs|wrong|verify errors|value of \d+ bytes|HTTP [45]\d\d(?! *(?:502|503|504))",
                       re.I)
_FAILED_OPS = re.compile(r"\d+ (?:of \d+ )?(?:failed )?operations? failed|failed operations|"
                         r"failed requests|requests? failed", re.I)


def per_cpu(load: dict | None) -> float | None:
    if not load or load.get("loadavg_1m") is None:
        return None
    return float(load["loadavg_1m"]) / max(1, int(load.get("ncpu") or 1))


def classify(why: str, rc: int | None = None, load: dict | None = None) -> str:
    """The kind of a failure from its message, the process's returncode (if known) and the load
    per CPU measured at the failure (``{"loadavg_1m", "ncpu"}``), in this order:

    1. ``lost_node``: a node or rank disappeared (srun's node failure, a launcher that lost a rank,
       a peer unreachable or its connection reset);
    2. ``crash``: a process died on a crash signal (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE;
       ``returncode`` -11 etc., ``Segmentation fault``, ``Caught signal``) -- under any load;
    3. ``timeout`` / ``overload``: an operation or job ran past its limit (``timed out``,
       ``timeout``, rc 124); ``overload`` when the load per CPU was above ``OVERLOAD_PER_CPU``;
    4. failed operations of a benchmark (``N of M operations failed``) under a load per CPU above
       the threshold: ``overload`` -- unless the message names a definite cause (a server's refusal
       such as ITEM TOO BIG or NOT FOUND, wrong data);
    5. ``crash``: any other signal or a tool that exited non-zero (``exited 1``, a negative rc);
    6. ``error``: anything else (bad input, a sanity check such as wrong bytes).
    """
    why = why or ""
    high = (per_cpu(load) or 0.0) > OVERLOAD_PER_CPU
    if _LOST.search(why):
        return "lost_node"
    crash_sigs = {-s for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE)}
    if _CRASH_SIG.search(why) or (rc is not None and (rc in crash_sigs or rc - 128 in {-x for x in crash_sigs})):
        return "crash"
    if _TIMEOUT.search(why) or rc == 124:
        return "overload" if high else "timeout"
    if high and _FAILED_OPS.search(why) and not _DEFINITE.search(why):
        return "overload"
    if _EXITED.search(why) or (rc is not None and rc != 0):
        return "crash"
    return "error"


def write_failure(raw_path: str | os.PathLike, rec: dict, why: str, kind: str | None = None, *,
                  rc: int | None = None, load: dict | None = None) -> Path:
    """Keep a failed run's record beside the results, never under the raw name.

    ``kind``: one of FAILURE_KINDS where the caller knows it, else ``classify(why, rc, load)``.
    ``load``: ``{"loadavg_1m", "ncpu"}`` measured at the failure (default: now), kept as
    ``failure_load``. An ``overload`` says so in the message, with the load and the threshold; a
    ``timeout`` says the load too. A ``timeout`` the caller named is still told as ``overload`` when
    the load per CPU was above the threshold. An empty ``why`` is never written (it says so)."""
    load = load or procs.load_now()
    why = (why or "").strip() or "failed without a message (the caller gave none)"
    if kind is None:
        kind = classify(why, rc, load)
    elif kind not in FAILURE_KINDS:
        raise ValueError(f"failure kind {kind!r} not in {FAILURE_KINDS}")
    elif kind == "timeout" and (per_cpu(load) or 0.0) > OVERLOAD_PER_CPU:
        kind = "overload"
    if kind == "overload":  # says so, with the load it measured and the threshold
        why += (f" [overload: {procs.load_text(load)} at the failure, above the threshold of "
                f"{OVERLOAD_PER_CPU:g} per CPU]")
    elif kind == "timeout" and "load " not in why:  # a timeout always says the load it ran under
        why += f" [{procs.load_text(load)} at the failure]"
    rec = dict(rec)
    rec["status"] = "failed"
    rec["failure"] = why
    rec["failure_kind"] = kind
    rec["failure_load"] = {"loadavg_1m": load.get("loadavg_1m"), "ncpu": load.get("ncpu")}
    rec["finished_at"] = provenance.now_iso()
    validate(rec)
    return write_json_atomic(failure_path(raw_path), rec)


def logs_path(raw_path: str | os.PathLike) -> Path:
    """Where a failed run keeps the full logs of the tools and daemons it started:
    ``results/<study>/failed/a~1/rep~0.logs/`` beside its failure record."""
    return failure_path(raw_path).with_suffix(".logs")


def keep_logs(raw_path: str | os.PathLike, logs, max_bytes: int = 8 << 20) -> Path | None:
    """Copy the logs of a failed run (paths of files, or of directories whose ``*.log`` files are
    taken) to ``logs_path(raw_path)``, each at most its last ``max_bytes``; None if there was none.
    Never raises: a log that cannot be read is named in ``MISSING`` there."""
    dest = logs_path(raw_path)
    files, missing = [], []
    for p in [logs] if isinstance(logs, (str, os.PathLike)) else list(logs):
        p = Path(p)
        if p.is_dir():
            files += sorted(x for x in p.rglob("*.log") if x.is_file())
        elif p.is_file():
            files.append(p)
        else:
            missing.append(str(p))
    if not files and not missing:
        return None
    dest.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for f in files:
        name = f.name if f.name not in seen else f"{f.parent.name}-{f.name}"
        seen.add(name)
        try:
            with open(f, "rb") as src:
                size = os.fstat(src.fileno()).st_size
                src.seek(max(0, size - max_bytes))
                (dest / name).write_bytes(src.read())
        except OSError as exc:
            missing.append(f"{f}: {exc.strerror}")
    if missing:
        (dest / "MISSING").write_text("\n".join(missing) + "\n")
    return dest


def history_path(raw_path: str | os.PathLike, finished_at: str) -> Path:
    """Where a failure record goes once a later run of its configuration passed:
    ``results/<study>/failed-history/<same path>~<finished_at>.json`` (neither tidy nor the rehearsal's
    checks read it: the configuration is no longer failed, but the failure is not forgotten)."""
    parts = list(failure_path(raw_path).parts)
    i = len(parts) - 1 - parts[::-1].index("failed")
    parts[i] = "failed-history"
    stamp = re.sub(r"[^0-9A-Za-z]", "", finished_at or provenance.now_iso())
    return Path(*parts[:-1], f"{Path(parts[-1]).stem}~{stamp}.json")


def clear_failure(raw_path: str | os.PathLike) -> Path | None:
    """A run of the configuration passed: its failure record (if any) leaves ``failed/`` for
    ``failed-history/`` with the pass that cleared it, and its kept logs go with it -- a crash that a
    re-run passed stays on record (issue 27: a crash is never hidden by a re-run)."""
    fp = failure_path(raw_path)
    try:
        rec = json.loads(fp.read_text())
    except FileNotFoundError:
        shutil.rmtree(logs_path(raw_path), ignore_errors=True)
        return None
    except (OSError, ValueError):
        rec = {"status": "failed", "failure": f"unreadable failure record {fp}"}
    rec["cleared_by_pass_at"] = provenance.now_iso()
    dst = history_path(raw_path, str(rec.get("finished_at") or ""))
    write_json_atomic(dst, rec)
    logs = logs_path(raw_path)
    if logs.is_dir():
        shutil.rmtree(dst.with_suffix(".logs"), ignore_errors=True)
        shutil.move(str(logs), dst.with_suffix(".logs"))
    fp.unlink(missing_ok=True)
    return dst
