"""What kind of failure a failed run was: the machine's (a lost node, a timeout under overload) or
the code's (a crash, an error), so that the report lists them apart and the retry policy
(workflow/README.md, "Failures and retries") can be applied per kind.

Kinds:

* ``crash``: a process died of a fault (SIGSEGV, SIGBUS, SIGABRT, a signal a library caught, a
  core dump), was killed by a signal or exited non-zero. Never retried: it always shows.
* ``lost_node``: a node of the job went away (Slurm's NODE_FAIL, a node failure, a peer that
  became unreachable). The machine's: may be retried.
* ``timeout``: an operation or the job ran past its limit, on a machine that was not overloaded
  (or whose load was not measured).
* ``overload``: a timeout while the 1-minute load average per CPU exceeded
  ``OVERLOAD_LOAD_PER_CPU``: the machine's, re-run by ``--resume`` / a second pass.
* ``error``: anything else (a sanity check that failed: wrong bytes, bad input).

A failure record written by ``repro.rawio.write_failure`` carries its kind (``failure_kind``) and
the load it measured (``failure_load: {loadavg_1m, ncpu}``); older records carry only the message,
and :func:`classify` reads the kind from the message text with rawio's own rules. :func:`kind_of` is the one
place the report decides a failed run's kind (the record's own, else the message's), and
:func:`slurm_kind` a failed Slurm job's.
"""

from __future__ import annotations

import json
import re

from repro import procs, rawio

KINDS = ("crash", "lost_node", "timeout", "overload", "error")
# A job that fills its CPUs shows a load of about 1 per CPU by itself; 1.5 means at least half as
# much runnable work again came from elsewhere, so a timeout then is the machine's, not the code's.
# The same threshold as repro.rawio's for the records it writes (repro.procs.OVERLOAD_PER_CPU).
OVERLOAD_LOAD_PER_CPU = getattr(procs, "OVERLOAD_PER_CPU", 1.5)

# A clause that lists possibilities ("a lost rank, an MPI abort or a time limit", as mpifuse's older
# records said of any job that ended early) is a guess the message offers, not evidence of what
# happened: it is not read.
_CLAUSES = re.compile(r"[;()\n\[\]]")
_HEDGE = re.compile(r"\bor\b|\bperhaps\b|\bmaybe\b|\bpossibly\b|\blikely\b", re.I)
# what repro.rawio.write_failure appends to an overload's message: "[overload: load 29.00 on 2 CPUs ...]"
_OVERLOAD_NOTE = re.compile(r"^\s*overload: load \d")


def classify(message: str) -> str:
    """The kind a failure message tells: repro.rawio.classify's rules (the ones every record written
    now was classified by: a lost node, then a crash signal, then a timeout, then any other signal or
    non-zero exit as a crash, else an error), read over the message's clauses that are not guesses;
    the overload note rawio appends is an overload."""
    clauses = [c for c in _CLAUSES.split(str(message or "")) if c.strip() and not _HEDGE.search(c)]
    if any(_OVERLOAD_NOTE.match(c) for c in clauses):
        return "overload"
    kind = rawio.classify("; ".join(c.strip() for c in clauses))
    return kind if kind in KINDS else "error"


def load_per_cpu(load) -> float | None:
    """``{loadavg_1m, ncpu}`` (a dict, or its JSON text as the tidy table keeps it) -> load per CPU."""
    if isinstance(load, str):
        try:
            load = json.loads(load) if load.strip() else None
        except ValueError:
            return None
    if not isinstance(load, dict):
        return None
    try:
        l1, n = float(load.get("loadavg_1m")), float(load.get("ncpu"))
    except (TypeError, ValueError):
        return None
    return l1 / n if n > 0 else None


def kind_of(recorded_kind, message: str = "", load=None) -> str:
    """The kind of one failure: the record's own ``failure_kind`` where it has one, else the message's
    (:func:`classify`); a timeout becomes ``overload`` when the measured load per CPU exceeded
    ``OVERLOAD_LOAD_PER_CPU``."""
    kind = str(recorded_kind or "").strip()
    if kind.lower() in ("nan", "none"):
        kind = ""
    kind = kind if kind in KINDS else (classify(message) if not kind else kind)
    per_cpu = load_per_cpu(load)
    if kind == "timeout" and per_cpu is not None and per_cpu > OVERLOAD_LOAD_PER_CPU:
        return "overload"
    return kind


# Slurm's job states (scontrol / sacct) that say the machine lost the job, or its time ran out
SLURM_KINDS = {"NODE_FAIL": "lost_node", "BOOT_FAIL": "lost_node", "PREEMPTED": "lost_node", "TIMEOUT": "timeout",
               "DEADLINE": "timeout"}


def slurm_kind(state: str, record_kind: str = "", record_message: str = "", load=None) -> str:
    """The kind of a failed Slurm job: NODE_FAIL (and BOOT_FAIL, PREEMPTED: the job lost its nodes) is
    a lost node, TIMEOUT a timeout (``overload`` under load); FAILED, OUT_OF_MEMORY, CANCELLED take the
    kind of the job's failure record where it has one; without a record, OUT_OF_MEMORY is a crash (the
    kernel killed it) and anything else an error."""
    state = str(state or "").split()[0].upper() if state else ""
    if state in SLURM_KINDS:
        return kind_of(SLURM_KINDS[state], "", load)
    if record_kind or record_message:
        return kind_of(record_kind, record_message, load)
    return "crash" if state == "OUT_OF_MEMORY" else "error"
