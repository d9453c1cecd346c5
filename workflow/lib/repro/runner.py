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
  ``--rep``, ``--out``, ``--input NAME=PATH`` for the job's input files: ``ctx.inputs``,
  ``--uses STUDY=JSON`` for the run section of a study whose systems this one runs (its
  declaration's ``uses``; workflow/rules/uses.smk): ``ctx.uses[STUDY]``), and
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
- a raw file in the study's own format (not a repro.raw/1 record; memfs's fusegap): the experiment is
  declared ``own_format=True``, writes one raw file, and the record it returns is written as it is
  (nothing added, not validated); its failure records are repro.raw/1 ones, as every experiment's.
- ``ctx.logs``: files or directories (their ``*.log``) that every failure record of the run keeps
  beside it (``repro.rawio.keep_logs``): a daemon's logs from a state directory that is gone by then.
- ``ctx.settle(path, value)``: one configuration recorded now (a record, or a ``RunFailed``), not
  when the experiment returns -- an MPI job that may be aborted later keeps what it finished; the
  job's own failure records no settled path again.
- a job launched by an MPI launcher (``mpirun``/``srun`` starts the experiment on every rank):
  ``--tag NAME`` (``ctx.tag``) names the job's scratch directories the same in all its processes;
  after the launcher ended, the same command with ``--after RC --log LOG`` runs the experiment's
  ``@RUN.after`` clean-up (leftover mounts, directories) and, when RC is not 0, gives every
  ``--out`` that has neither a raw file nor a failure record one: the launcher's exit status and
  what its log says (``launcher_evidence``: the lines that say why it ended, else its last ones);
  a failure record that says only "stopped by SIGTERM" (the launcher stopped the rank that records
  when another died) gets them added.
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
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from collections.abc import Callable
from pathlib import Path

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


STOPPED_BY = "stopped by "  # how a Terminated failure begins (--after adds the launcher's reason)


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
    tag: str = ""
    uses: dict[str, dict] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    _record: dict | None = None
    _records: dict[str, dict] = field(default_factory=dict)
    _settled: dict[str, bool] = field(default_factory=dict)  # path -> it failed (ctx.settle)
    _settle: Callable | None = None

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

    def settle(self, path: str, value) -> None:
        """Record one configuration now (a record, or a RunFailed): written as the job's return would
        write it, and never recorded again by the job's own failure (see the module's text)."""
        path = str(path)
        if path not in self.outs and path not in self.beside:
            raise ValueError(f"settle: {path} is not one of this job's raw files")
        if self._settle is None:
            raise RuntimeError("settle: the experiment does not run inside Experiments.run")
        self._settle(path, value)

    def progress(self, text: str) -> None:
        print(f"[{self.study} {self.experiment} rep {self.rep}] +{time.monotonic() - self.started:.1f}s {text}",
              flush=True)


class Experiments:
    def __init__(self, study: str):
        self.study = study
        self._fns: dict[str, Callable[[Context], dict | None]] = {}
        self._kinds: dict[str, str] = {}
        self._afters: dict[str, Callable[[Context, int], None]] = {}
        self._own: set[str] = set()  # experiments whose raw file is in the study's own format

    def experiment(self, name: str, system_kind: str = "real", own_format: bool = False):
        """Declare an experiment; system_kind is its records' (real, model or stand-in:<what>); own_format:
        its one raw file is the returned record as it is, not a repro.raw/1 record (see the module's text)."""
        def register(fn):
            if name in self._fns:
                raise ValueError(f"experiment {name!r} declared twice")
            self._fns[name] = fn
            self._kinds[name] = system_kind
            if own_format:
                self._own.add(name)
            return fn
        return register

    def after(self, name: str):
        """Declare an experiment's clean-up after its launcher ended (``--after RC``): fn(ctx, rc) removes
        what a killed job left behind and may make each raw file's record (ctx.record(params=, out=)),
        which the failure record of a configuration that never finished then carries."""
        def register(fn):
            if name not in self._fns:
                raise ValueError(f"after({name!r}): no such experiment (declare it first)")
            self._afters[name] = fn
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
        # action="extend": the flag given twice (--input a=X --input b=Y, as the engine writes it) keeps both
        ap.add_argument("--input", nargs="+", action="extend", default=[], metavar="NAME=PATH",
                        help="the job's input files by name (ctx.inputs)")
        ap.add_argument("--uses", nargs="+", action="extend", default=[], metavar="STUDY=JSON",
                        help="the run section (JSON, or @file) of a study whose systems this one runs (ctx.uses)")
        ap.add_argument("--tag", default="", help="a name unique to this job, the same in all its processes "
                        "(MPI ranks, the --after step): its scratch directories (ctx.tag)")
        ap.add_argument("--after", type=int, default=None, metavar="RC",
                        help="after the launcher exited with RC: clean up, and a failure record for every "
                        "--out it left without a record")
        ap.add_argument("--log", default="", help="with --after: the launcher's log (why it ended)")
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
        bad = [u for u in args.uses if "=" not in u or not u.partition("=")[0]]
        if bad:
            ap.error(f"--uses takes STUDY=JSON: {bad}")
        try:
            uses = {k: cli.load_config(v) for k, v in (u.split("=", 1) for u in args.uses)}
        except (json.JSONDecodeError, OSError) as exc:
            ap.error(f"--uses: {exc}")
        ctx = Context(self.study, args.experiment, cli.load_config(args.config), params, args.rep, list(args.out),
                      self._kinds[args.experiment], inputs=dict(i.split("=", 1) for i in args.input), tag=args.tag,
                      uses=uses)
        if args.after is not None:
            return self.after_launcher(ctx, args.after, args.log)
        return self.run(ctx)

    def run(self, ctx: Context) -> int:
        """The recording block around one experiment (see the module's text)."""
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

        stopped: list[str] = []  # the signal, kept: code the exception passes through may wrap it
        # (the idna codec turns an exception raised inside it into a UnicodeError naming it)

        def _stop(signum, _frame):
            stopped.append(f"{STOPPED_BY}{signal.Signals(signum).name}")
            raise Terminated(stopped[0])

        for s in previous:
            signal.signal(s, _stop)
        ctx._settle = lambda path, value: self._write_one(ctx, path, value)
        ctx.progress("start " + json.dumps(ctx.params, sort_keys=True))
        try:
            rec = self._fns[ctx.experiment](ctx)
        except Exception as exc:  # noqa: BLE001 -- re-raised below unless a signal stopped the run
            if not stopped or isinstance(exc, Refused):
                return self._settle_exception(ctx, exc)
            if not isinstance(exc, Terminated):
                traceback.print_exc()  # what the signal interrupted, for the log
            records = (exc.records or ({p: exc.record for p in ctx.outs} if exc.record else None)
                       if isinstance(exc, RunFailed) else None)
            return self._failed(ctx, ctx._record, stopped[0], rc=143, records=records, kind="error")
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        if rec is None:
            ctx.progress("done (nothing to record here)")
            return 0
        return self._record_result(ctx, rec)

    def _settle_exception(self, ctx: Context, exc: Exception) -> int:
        """The experiment raised (no signal stopped it): its failure records, or a refusal."""
        try:
            raise exc
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

    def _record_result(self, ctx: Context, rec) -> int:
        """What the experiment returned, written: one record per raw file; a missing one fails the job."""
        if not isinstance(rec, dict) or "schema" in rec or ctx.experiment in self._own:  # the one raw file
            try:
                rec = {ctx.out: rec}
            except RunFailed as exc:
                return self._failed(ctx, None, f"{exc.why}; it returned one record")
        unknown = sorted(set(rec) - set(ctx.outs) - set(ctx.beside))
        if unknown:
            return self._failed(ctx, None, f"records for paths not asked for: {unknown}")
        for path, one in rec.items():
            self._write_one(ctx, path, one)
        failed = [p for p, bad in ctx._settled.items() if bad]
        missing = [p for p in ctx.outs if p not in ctx._settled]
        if missing:
            return self._failed(ctx, ctx._record, "the run wrote no record for it", outs=missing)
        if failed:
            print(f"{self.study} {ctx.experiment}: FAILED: {len(failed)} configuration(s) of {len(ctx._settled)}",
                  file=sys.stderr, flush=True)
            return 1
        n = len(ctx._settled)
        ctx.progress(f"done: {n} raw file(s), {ctx.outs[0]}{' ...' if n > 1 else ''}")
        return 0

    def _write_one(self, ctx: Context, path: str, one) -> None:
        """One configuration's record (or its RunFailed: a failure record) at its path; kept in
        ctx._settled (whether it fails the job)."""
        if isinstance(one, RunFailed):  # this configuration failed, the others stand
            self._write_failure(ctx, path, one.record or ctx._records.get(path) or ctx._record, one.why,
                                one.kind, one.rc)
            ctx._settled[path] = path in ctx.outs or not one.expected
            return
        rawio.clear_failure(path)
        rawio.write_json_atomic(path, one if ctx.experiment in self._own else rawio.finish(one))
        ctx._settled[path] = False

    def after_launcher(self, ctx: Context, rc: int, log: str = "") -> int:
        """``--after RC``: the experiment's clean-up, then a failure record for every raw file the job
        left with neither a record nor a failure record (RC not 0: a lost rank, an abort, the time
        limit), saying RC and what the launcher's log says. Exit 0: the rule exits with RC itself."""
        hook = self._afters.get(ctx.experiment)
        if hook is not None:
            try:
                hook(ctx, rc)
            except Exception as exc:  # noqa: BLE001 -- the failure records below matter more
                traceback.print_exc()
                print(f"{self.study} {ctx.experiment}: after: clean-up failed: {exc!r}", file=sys.stderr, flush=True)
        if rc == 0:
            return 0
        # the runner's own progress lines say what ran, not why the launcher ended
        evidence, kind = launcher_evidence(log, rc, skip=f"[{self.study} {ctx.experiment} rep ")
        n = 0
        for path in ctx.outs:
            if os.path.exists(path):
                continue
            why = (f"the job ended with exit status {rc} before this configuration finished; "
                   f"the launcher's log ({log or 'not named'}) says: {evidence}")
            failed = rawio.failure_path(path)
            if failed.exists():
                # kept, unless it says only that a signal stopped the process (Terminated, above): the
                # launcher's log says why it was stopped (a rank that died, a lost node)
                rec = json.loads(failed.read_text())
                if not str(rec.get("failure", "")).startswith(STOPPED_BY + "SIG"):
                    continue
                why = f"{rec['failure']}: {why}"
            else:
                rec = dict(ctx._records.get(path) or rawio.new_record(self.study, ctx.experiment, ctx.params,
                                                                      ctx.rep, ctx.system_kind, {}))
            made = (ctx._records.get(path) or {}).get("extra") or {}  # what the @after hook adds (job_tag)
            rec["extra"] = {**(rec.get("extra") or {}), **made, "launcher_rc": rc, "log": log or ""}
            rawio.write_failure(path, rec, why, kind)
            n += 1
        print(f"{self.study} {ctx.experiment}: after the launcher (exit status {rc}): {n} failure record(s) "
              f"written for configurations it did not finish", file=sys.stderr, flush=True)
        return 0

    def _failed(self, ctx: Context, rec: dict | None, why: str, rc: int = 1, records: dict | None = None,
                outs: list[str] | None = None, kind: str | None = None, proc_rc: int | None = None) -> int:
        why = (why or "").strip() or f"{ctx.experiment} failed without saying why"
        for path in [p for p in outs or ctx.outs if p not in ctx._settled]:
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


# lines of a launcher's log that say why a job ended: a crash, a lost node or rank, a timeout, an abort
_EVIDENCE = re.compile(r"caught signal|segmentation fault|signal \d+|core dumped|killed by|node fail|\blost\b|"
                       r"unreachable|timed out|timeout:|time limit|MPI_ABORT|abort|FATAL|error|exited|"
                       r"non-zero exit", re.I)


def launcher_evidence(log: str | None, rc: int, skip: str | None = None) -> tuple[str, str]:
    """(the lines of the launcher's log that say why the job ended -- else its last lines, else that
    there is no log --, the failure's kind: repro.rawio.classify of those lines and the exit status;
    a job that ended non-zero with nothing recognisable is a crash). Lines that begin with `skip`
    are not read."""
    try:
        lines = [x.rstrip() for x in Path(log).read_text(errors="replace").splitlines()
                 if x.strip() and not (skip and x.startswith(skip))] if log else []
    except OSError as exc:
        lines, missing = [], f"(its log {log} could not be read: {exc.strerror})"
    else:
        missing = "(no log named)" if not log else "(its log is empty)"
    hits = [x for x in lines if _EVIDENCE.search(x)]
    if len(hits) > 9:  # the first lines (the cause) and the last (how it ended)
        hits = hits[:6] + ["..."] + hits[-3:]
    text = " | ".join(hits or lines[-5:]) or missing
    text = text if len(text) <= 3000 else text[:2000] + " ... " + text[-1000:]
    kind = rawio.classify(text, rc)
    return text, ("crash" if kind == "error" and rc else kind)
