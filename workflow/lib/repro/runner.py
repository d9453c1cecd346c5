"""One run contract for a study's benchmark jobs.

Every experiment of a study is called the same way::

    python3 -m studies.<study>.run <experiment> --config '<JSON>' --params '<JSON>' --rep I --out PATH

A study's ``run.py`` declares its experiments and hands the command line to this module::

    from repro import runner

    RUN = runner.Experiments("smoke")

    @RUN.experiment("layout_probe", system_kind="real")
    def layout_probe(ctx: runner.Context):
        rec = ctx.record({"tool": "1.0"})            # a repro.raw/1 record of this run
        ...                                          # measure; ctx.progress("...") for long runs
        if something_wrong:
            raise runner.RunFailed("why", rec)         # -> a failure record, exit 1
        return rec                                   # -> the raw file at --out

    if __name__ == "__main__":
        sys.exit(RUN.main())

What the entry point gives every experiment:
- the same arguments (``--config`` through ``repro.cli.load_config``, ``--params`` a JSON object,
  ``--rep``, ``--out``), and ``--list`` (the experiments);
- progress lines ``[<study> <experiment> rep <i>] ...`` with the time since the start;
- SIGTERM and SIGINT raised as ``runner.Terminated`` in the experiment, so its ``finally:``
  clean-up (servers, mounts, daemons) runs when Slurm or Snakemake stops the job;
- the recording block: a returned record is finished and written atomically at ``--out`` (and
  an earlier failure record of that path removed); ``RunFailed``, ``Terminated`` or any other
  exception writes a failure record at ``failed/<same path>`` naming why, and the job exits
  non-zero -- never a partial raw file under the final name. An experiment that returns None
  writes nothing (an MPI rank other than the one that records).
- several raw files from one job (one stack brought up once, many configurations): ``--out``
  takes several paths (Snakemake's ``{output}``), the experiment returns ``{path: record}``
  (``ctx.outs``), and every path it gave no record for gets a failure record saying so (exit 1);
  ``RunFailed(why, records={path: record})`` records each path's own record.
- the failure's kind (``failure_kind`` in the record, ``repro.rawio.classify``): ``RunFailed(why,
  kind=...)`` where the experiment knows it (else classified from the message); an uncaught
  ``TimeoutError`` / ``subprocess.TimeoutExpired`` is a ``timeout`` (``overload`` under load), any
  other uncaught exception a ``crash`` unless its message names a lost node; SIGTERM/SIGINT from
  outside (Slurm's time limit, a cancel) an ``error`` that says which signal.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from collections.abc import Callable

from repro import cli, rawio


class RunFailed(Exception):
    """The run measured something wrong (a failed check, a dead server): record it as failed."""

    def __init__(self, why: str, record: dict | None = None, records: dict | None = None,
                 kind: str | None = None, rc: int | None = None):
        super().__init__(why)
        self.why = why
        self.record = record
        self.records = records
        self.kind = kind  # one of repro.rawio.FAILURE_KINDS, or None: classified from why (and rc)
        self.rc = rc      # the returncode of the process that failed, where there was one


class Terminated(Exception):
    """SIGTERM or SIGINT arrived while the experiment ran."""


@dataclass
class Context:
    study: str
    experiment: str
    cfg: dict
    params: dict
    rep: int
    outs: list[str]
    system_kind: str = "real"
    started: float = field(default_factory=time.monotonic)
    _record: dict | None = None

    @property
    def out(self) -> str:
        """The raw file of a one-output experiment."""
        if len(self.outs) != 1:
            raise RunFailed(f"{self.experiment} writes {len(self.outs)} raw files: use ctx.outs")
        return self.outs[0]

    def record(self, tool_versions: dict | None = None, system_kind: str | None = None) -> dict:
        """This run's repro.raw/1 record (kept: a failure after this point records it)."""
        self._record = rawio.new_record(self.study, self.experiment, self.params, self.rep,
                                        system_kind or self.system_kind, tool_versions or {})
        return self._record

    def progress(self, text: str) -> None:
        print(f"[{self.study} {self.experiment} rep {self.rep}] +{time.monotonic() - self.started:.1f}s {text}",
              flush=True)


class Experiments:
    def __init__(self, study: str):
        self.study = study
        self._fns: dict[str, Callable[[Context], dict | None]] = {}
        self._kinds: dict[str, str] = {}

    def experiment(self, name: str, system_kind: str = "real"):
        """Declare an experiment; system_kind is its records' (real, model or stand-in:<what>)."""
        def register(fn):
            if name in self._fns:
                raise ValueError(f"experiment {name!r} declared twice")
            self._fns[name] = fn
            self._kinds[name] = system_kind
            return fn
        return register

    @property
    def names(self) -> list[str]:
        return list(self._fns)

    def parser(self) -> argparse.ArgumentParser:
        ap = argparse.ArgumentParser(prog=f"python3 -m studies.{self.study}.run",
                                     description=f"run one experiment of the {self.study} study")
        ap.add_argument("experiment", nargs="?", choices=self.names)
        ap.add_argument("--config", help="the study's config section: JSON, or @file")
        ap.add_argument("--params", default="{}", help="this run's parameters: a JSON object")
        ap.add_argument("--rep", type=int, default=0)
        ap.add_argument("--out", nargs="+", help="the raw file(s) this run writes")
        ap.add_argument("--list", action="store_true", help="print the experiments and exit")
        return ap

    def main(self, argv: list[str] | None = None) -> int:
        ap = self.parser()
        args = ap.parse_args(argv)
        if args.list:
            print("\n".join(self.names))
            return 0
        missing = [k for k in ("experiment", "config", "out") if not getattr(args, k)]
        if missing:
            ap.error("missing: " + ", ".join(missing))
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            ap.error(f"--params is not JSON: {exc}")
        if not isinstance(params, dict):
            ap.error("--params must be a JSON object")
        ctx = Context(self.study, args.experiment, cli.load_config(args.config), params, args.rep, list(args.out),
                      self._kinds[args.experiment])
        return self.run(ctx)

    def run(self, ctx: Context) -> int:
        """The recording block around one experiment (see the module's text)."""
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

        def _stop(signum, _frame):
            raise Terminated(f"stopped by {signal.Signals(signum).name}")

        for s in previous:
            signal.signal(s, _stop)
        ctx.progress("start " + json.dumps(ctx.params, sort_keys=True))
        try:
            rec = self._fns[ctx.experiment](ctx)
        except RunFailed as exc:
            return self._failed(ctx, exc.record or ctx._record, exc.why, records=exc.records, kind=exc.kind,
                                proc_rc=exc.rc)
        except Terminated as exc:
            return self._failed(ctx, ctx._record, str(exc), rc=143, kind="error")
        except (TimeoutError, subprocess.TimeoutExpired) as exc:
            traceback.print_exc()
            return self._failed(ctx, ctx._record, f"{type(exc).__name__}: {exc}", kind="timeout")
        except Exception as exc:  # any crash of the experiment is a recorded failure, never a result
            traceback.print_exc()
            why = f"{type(exc).__name__}: {exc}"
            kind = rawio.classify(why)
            return self._failed(ctx, ctx._record, why, kind=kind if kind != "error" else "crash")
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        if rec is None:
            ctx.progress("done (nothing to record here)")
            return 0
        if not isinstance(rec, dict) or "schema" in rec:  # one record: the one raw file
            try:
                rec = {ctx.out: rec}
            except RunFailed as exc:
                return self._failed(ctx, None, f"{exc.why}; it returned one record")
        unknown = sorted(set(rec) - set(ctx.outs))
        if unknown:
            return self._failed(ctx, None, f"records for paths not asked for: {unknown}")
        for path, one in rec.items():
            rawio.clear_failure(path)
            rawio.write_json_atomic(path, rawio.finish(one))
        missing = [p for p in ctx.outs if p not in rec]
        if missing:
            return self._failed(ctx, ctx._record, "the run wrote no record for it", outs=missing)
        ctx.progress(f"done: {len(rec)} raw file(s), {ctx.outs[0]}{' ...' if len(rec) > 1 else ''}")
        return 0

    def _failed(self, ctx: Context, rec: dict | None, why: str, rc: int = 1, records: dict | None = None,
                outs: list[str] | None = None, kind: str | None = None, proc_rc: int | None = None) -> int:
        if rec is None:  # it failed before it made its record
            rec = rawio.new_record(self.study, ctx.experiment, ctx.params, ctx.rep, ctx.system_kind, {})
        why = (why or "").strip() or f"{ctx.experiment} failed without saying why"
        for path in outs or ctx.outs:
            written = rawio.write_failure(path, (records or {}).get(path, rec), why, kind, rc=proc_rc)
        ctx.progress(f"FAILED: {why} (record: {written}{' ...' if len(outs or ctx.outs) > 1 else ''})")
        print(f"{self.study} {ctx.experiment}: FAILED: {why}", file=sys.stderr, flush=True)
        return rc
