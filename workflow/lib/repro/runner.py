"""One run contract for a study's benchmark jobs.

Every experiment of a study is called the same way::

    python3 -m studies.<study>.run <experiment> --config '<JSON>' --params '<JSON>' --rep I --out PATH
        [--input NAME=PATH ...]

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
  ``--rep``, ``--out``, ``--input NAME=PATH`` for the job's input files: ``ctx.inputs``), and
  ``--list`` (the experiments);
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
  ``RunFailed(why, records={path: record})`` records each path's own record, and so does a record
  made with ``ctx.record(params=..., out=path)`` (one configuration of the job: a failure of the whole
  job, SIGTERM included, records it at its own path). One configuration of many that failed: its
  value in the returned dict is a ``RunFailed(why, record)`` (its failure record; the job exits 1).
  Configurations the job runs that are not outputs (sent to show that a system refuses them): their
  paths in ``ctx.beside``; a record or ``RunFailed`` returned for one is written the same way, no
  record for one is asked for, and ``RunFailed(why, record, expected=True)`` there (the refusal it
  was run to show) does not fail the job; any other failure does.
- ``ctx.logs``: files or directories (their ``*.log``) that every failure record of the run keeps
  beside it (``repro.rawio.keep_logs``): a daemon's logs from a state directory that is gone by then.
- ``Refused(why)``: the job cannot run as configured here (an unedited site setting): exit 2 and no
  record -- nothing was measured, and a failure record would say the configuration failed.
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
                 kind: str | None = None, rc: int | None = None, expected: bool = False):
        super().__init__(why)
        self.why = why
        self.record = record
        self.records = records
        self.kind = kind  # one of repro.rawio.FAILURE_KINDS, or None: classified from why (and rc)
        self.rc = rc      # the returncode of the process that failed, where there was one
        self.expected = expected  # a configuration beside the outputs run to show this failure


class Terminated(Exception):
    """SIGTERM or SIGINT arrived while the experiment ran."""


class Refused(Exception):
    """The job cannot run as configured here (a site edit missing): exit 2, nothing recorded."""


@dataclass
class Context:
    study: str
    experiment: str
    cfg: dict
    params: dict
    rep: int
    outs: list[str]
    system_kind: str = "real"
    inputs: dict[str, str] = field(default_factory=dict)
    beside: list[str] = field(default_factory=list)
    logs: list = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    _record: dict | None = None
    _records: dict[str, dict] = field(default_factory=dict)

    @property
    def out(self) -> str:
        """The raw file of a one-output experiment."""
        if len(self.outs) != 1:
            raise RunFailed(f"{self.experiment} writes {len(self.outs)} raw files: use ctx.outs")
        return self.outs[0]

    def record(self, tool_versions: dict | None = None, system_kind: str | None = None,
               params: dict | None = None, out: str | None = None) -> dict:
        """This run's repro.raw/1 record (kept: a failure after this point records it). A job of many
        configurations: ``params`` one configuration's, ``out`` its raw file (a failure of the job
        records this record there)."""
        self._record = rawio.new_record(self.study, self.experiment, self.params if params is None else params,
                                        self.rep, system_kind or self.system_kind, tool_versions or {})
        if out is not None:
            self._records[str(out)] = self._record
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
        ap.add_argument("--input", nargs="+", default=[], metavar="NAME=PATH",
                        help="the job's input files by name (ctx.inputs)")
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
        bad = [i for i in args.input if "=" not in i or not i.partition("=")[0]]
        if bad:
            ap.error(f"--input takes NAME=PATH: {bad}")
        ctx = Context(self.study, args.experiment, cli.load_config(args.config), params, args.rep, list(args.out),
                      self._kinds[args.experiment], inputs=dict(i.split("=", 1) for i in args.input))
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
            records = exc.records or ({p: exc.record for p in ctx.outs} if exc.record else None)
            return self._failed(ctx, ctx._record, exc.why, records=records, kind=exc.kind, proc_rc=exc.rc)
        except Refused as exc:
            ctx.progress(f"REFUSED: {exc}")
            print(f"{self.study} {ctx.experiment}: {exc}", file=sys.stderr, flush=True)
            return 2
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
        unknown = sorted(set(rec) - set(ctx.outs) - set(ctx.beside))
        if unknown:
            return self._failed(ctx, None, f"records for paths not asked for: {unknown}")
        failed = []
        for path, one in rec.items():
            if isinstance(one, RunFailed):  # this configuration failed, the others stand
                self._write_failure(ctx, path, one.record or ctx._records.get(path) or ctx._record, one.why,
                                    one.kind, one.rc)
                failed += [path] if path in ctx.outs or not one.expected else []
                continue
            rawio.clear_failure(path)
            rawio.write_json_atomic(path, rawio.finish(one))
        missing = [p for p in ctx.outs if p not in rec]
        if missing:
            return self._failed(ctx, ctx._record, "the run wrote no record for it", outs=missing)
        if failed:
            print(f"{self.study} {ctx.experiment}: FAILED: {len(failed)} configuration(s) of {len(rec)}",
                  file=sys.stderr, flush=True)
            return 1
        ctx.progress(f"done: {len(rec)} raw file(s), {ctx.outs[0]}{' ...' if len(rec) > 1 else ''}")
        return 0

    def _failed(self, ctx: Context, rec: dict | None, why: str, rc: int = 1, records: dict | None = None,
                outs: list[str] | None = None, kind: str | None = None, proc_rc: int | None = None) -> int:
        why = (why or "").strip() or f"{ctx.experiment} failed without saying why"
        for path in outs or ctx.outs:
            self._write_failure(ctx, path, (records or {}).get(path) or ctx._records.get(path) or rec, why, kind,
                                proc_rc)
        print(f"{self.study} {ctx.experiment}: FAILED: {why}", file=sys.stderr, flush=True)
        return rc

    def _write_failure(self, ctx: Context, path: str, rec: dict | None, why: str, kind: str | None,
                       proc_rc: int | None) -> None:
        if rec is None:  # it failed before it made its record
            rec = rawio.new_record(self.study, ctx.experiment, ctx.params, ctx.rep, ctx.system_kind, {})
        why = (why or "").strip() or f"{ctx.experiment} failed without saying why"
        written = rawio.write_failure(path, rec, why, kind, rc=proc_rc)
        kept = rawio.keep_logs(path, ctx.logs) if ctx.logs else None
        ctx.progress(f"FAILED: {why} (record: {written}{f'; logs: {kept}' if kept else ''})")
