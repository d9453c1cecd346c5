"""One storage job (paper 002, Sec. 4): a stack run or a limit, writing the raw files of layout.py.

    python3 -m studies.storage.run stack --config CFG --stack ceph --benchmark cosbench --rep 0
    python3 -m studies.storage.run limit --config CFG --limit fio --rep 0

stack: brings the stack up with its own `systems/<x>/stack.py up` (state and data under
paths.work_dir), runs every configuration of the benchmark against it -- COSBench workloads from
tools/cosbench/gen.py through cosbench-driver (its CSVs parsed by tools/cosbench/parser.py), or
mdtest / mdbench -n FILES -w 3901 -e 3901 -i ITERATIONS on the stack's file side -- and ALWAYS
brings it down (try/finally, also on SIGTERM/SIGINT).

Placement (placement.py): the nodes come from repro.allocation (never SLURM_* variables); on
several hosts the daemons run on the system nodes through srun steps, bound to their nodes'
addresses, Ceph with public_network derived from the allocation; the driver, mdtest's tasks and the
FUSE mount they use are on the driver node. The stack's state (conf, keys, PID files, logs, each
daemon's measured placement) is under paths.shared_dir (the project directory, shared on a
cluster), its data, mounts and caches under paths.work_dir (node-local). Every raw record carries
extra.placement: the plan, the driver's measured placement, each daemon's, mdtest's tasks', checks.

A configuration whose run fails (exit status, a failed or unverified request, a dead daemon) gets a
failure record naming why (with the stack's log tail); the job then exits 1. lustre-minio's file
side is the Lustre directory itself (paths.lustre_dir; locally a POSIX directory, the stand-in), so
its mdtest job starts no daemon. On Slurm without paths.lustre_dir the Lustre+MinIO jobs are not
planned (layout.lustre_not_run) and refused here.

limit: fio on the directory the stacks sit on (tools/fio), or the COSBench driver's own ceiling
against its in-memory S3 endpoint (cosbench-driver ceiling).

--image SIF (a cluster run from images): this driver stays on the host -- it needs Slurm's client
(scontrol for the allocation, srun steps for the daemons and mdtest's tasks), which an image does
not have -- and every command of the stack runs in the image (ImageSide): on the driver node in one
Apptainer instance of it, shared by the stack's daemons here, its FUSE mount and mdtest's tasks (a
mount made in one container is invisible in another); on the system nodes in `apptainer exec SIF`
behind each srun step. cosbench-driver is a static tool of the host's build (tools/cosbench); the
real COSBench and mdtest/mdbench run from the image's layer (storage.cosbench.tool,
storage.mdtest.container).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from repro import allocation, cli, procs, provenance, rawio
from studies.storage import layout, lustre, placement
from systems.storage_common import daemons as dm
from tools.common import free_port
from tools.cosbench import gen as cosgen
from tools.cosbench import parser as cosparse
from tools.mdtest.parser import parse_mdtest

REPO = Path(__file__).resolve().parents[3]
DRIVER = REPO / "tools" / "cosbench" / "build" / "cosbench-driver"
MDBENCH = REPO / "tools" / "mdtest" / "build" / "mdbench"
IN_IMAGE = REPO / "workflow" / "scripts" / "in-image.sh"
STACK_SCRIPT = {"ceph": "ceph", "lustre-minio": "minio", "juicefs": "juicefs"}
MDTEST_OPS = ("create", "stat", "open", "remove")            # files (mdtest -F / mdbench)
MDTEST_DIR_OPS = ("dir_create", "dir_stat", "dir_remove")  # directories (mdtest without -F, mdbench --dirs)
MDBENCH_DIR_OPS = ("dir_read", "dir_rename")  # mdbench prints these too (mdtest's rename row where it has one)


def say(msg: str) -> None:
    """Progress on stdout; never raises: a reader gone (a killed parent holding the pipe) must not
    skip the `finally` that brings the stack down (seen: a Ceph stack left running after the test
    process that read this job's output was killed)."""
    try:
        print(f"[storage {time.strftime('%H:%M:%S')}] {msg}", flush=True)
    except (BrokenPipeError, OSError):
        pass


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the finally that brings the stack down


# ---------------------------------------------------------------------------------------------
# the image (a cluster run): the driver on the host, the stack's commands in the image
# ---------------------------------------------------------------------------------------------
class ImageSide:
    """The stack's image for one job (module docstring). `start` starts an instance of it on this node
    and sets daemons.EXEC_ENV / EXEC_REMOTE_ENV, which the stack's stack.py (a child of this process)
    and this driver's own image commands read; `stop` stops the instance (after the stack is down)."""

    def __init__(self, image: str, cfg: dict, tag: str):
        self.image = str(Path(image).resolve())
        self.name = re.sub(r"[^A-Za-z0-9_.-]", "-", f"st-{tag}")
        dirs = [REPO, Path.cwd(), cfg["paths"]["work_dir"], cfg["paths"]["shared_dir"], cfg["paths"].get("lustre_dir")]
        binds: list[str] = []
        for d in dirs:
            if d:
                Path(d).mkdir(parents=True, exist_ok=True)
                if str(Path(d).resolve()) not in binds:
                    binds.append(str(Path(d).resolve()))
        self.binds = ",".join(binds)
        self.bind_dirs = binds
        self.started = False

    @property
    def exec_here(self) -> list[str]:
        """A command on this node, in the instance (its mount namespace)."""
        return ["apptainer", "exec", f"instance://{self.name}", str(IN_IMAGE)]

    @property
    def exec_plain(self) -> list[str]:
        """A command in a container of its own (another node behind an srun step, or fio here). The bind
        sources are made first where it runs: the work directory is node-local, and on a node no earlier
        job used it does not exist -- apptainer then refuses the container ("mount source ... doesn't
        exist", exit 255; the full rehearsal of 2026-11-29 on freshly started nodes lost every storage
        job to it)."""
        made = "mkdir -p -- " + " ".join(shlex.quote(d) for d in self.bind_dirs) + ' && exec "$@"'
        return ["/bin/sh", "-c", made, "sh", "apptainer", "exec", "--bind", self.binds, self.image, str(IN_IMAGE)]

    def start(self) -> None:
        if not Path(self.image).exists():
            raise RuntimeError(f"image {self.image} does not exist (built by the workflow's image rules)")
        cmd = ["apptainer", "instance", "start", "--bind", self.binds, self.image, self.name]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(procs.failure_message("apptainer instance start", r, tail=2000))
        self.started = True
        os.environ[dm.EXEC_ENV] = shlex.join(self.exec_here)  # read back with shlex.split
        os.environ[dm.EXEC_REMOTE_ENV] = shlex.join(self.exec_plain)
        say(f"image {self.image}: instance {self.name} on this node (binds {self.binds})")

    def stop(self) -> None:
        os.environ.pop(dm.EXEC_ENV, None)
        os.environ.pop(dm.EXEC_REMOTE_ENV, None)
        if self.started:
            r = subprocess.run(["apptainer", "instance", "stop", self.name], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0:
                say(f"apptainer instance stop {self.name}: exit {r.returncode}: {r.stderr[-1000:]}")
            self.started = False


# ---------------------------------------------------------------------------------------------
# the stack
# ---------------------------------------------------------------------------------------------
def stack_args(cfg: dict, stack: str, state: Path, local: Path, pl: placement.Plan) -> list[str]:
    """`stack.py up` arguments: `state` holds what every node reads (shared on a cluster), `local`
    is node-local (daemon data, FUSE mount, caches)."""
    work = Path(cfg["paths"]["work_dir"])
    args: list[str] = []
    if stack == "ceph":
        c = cfg["ceph"]
        args += ["--osds", str(c["osds"]), "--osd-size-gb", str(c["osd_size_gb"]), "--objectstore",
                 c["objectstore"], "--rgw-port", str(free_port()),
                 "--mon-port", str(free_port()), "--mount", str(local / "mnt")]
        if c.get("pool_size"):
            args += ["--pool-size", str(c["pool_size"])]
        if pl.multi_host:
            args += ["--data", str(local / "data"),
                     "--public-network", c.get("public_network") or pl.public_network]
    elif stack == "lustre-minio":
        data = Path(cfg["paths"]["lustre_dir"]) / "s3" if cfg["paths"].get("lustre_dir") else work / "lustre-standin-s3"
        if data.exists():
            shutil.rmtree(data)
        data.mkdir(parents=True)
        args += ["--data", str(data), "--port", str(free_port())]
    elif stack == "juicefs":
        args += ["--redis-port", str(free_port()), "--minio-port", str(free_port()),
                 "--gateway-port", str(free_port()), "--mount", str(local / "mnt")]
        if pl.multi_host:
            args += ["--data", str(local / "minio-data"), "--cache-dir", str(local / "cache")]
    if pl.multi_host:
        args += ["--hosts", ",".join(pl.hosts), "--addresses", ",".join(pl.addresses), "--launcher", pl.launcher]
    return args


def stack_cmd(stack: str, command: str, state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", f"systems.{STACK_SCRIPT[stack]}.stack", command, "--state", str(state), *args]


def stack_status(stack: str, state: Path) -> str | None:
    """None while healthy, else what `status` says (the dead daemon and its log tail)."""
    r = subprocess.run(stack_cmd(stack, "status", state), capture_output=True, text=True, timeout=120)
    return None if r.returncode == 0 else (r.stderr or r.stdout)[-4000:]


# ---------------------------------------------------------------------------------------------
# the benchmarks
# ---------------------------------------------------------------------------------------------
def run_cosbench(cfg: dict, stack: str, info: dict, size: str, workers: int, outdir: Path) -> tuple[list, dict]:
    c = cfg["cosbench"]
    creds = info["credentials"]
    matrix = {"prefix": "p002", "containers": c["containers"], "objects": c["objects"],
              "runtime": c["runtime"], "interval": c["interval"],
              "stacks": {stack: {"endpoint": creds["endpoint"], "accesskey": creds["access_key"],
                                 "secretkey": creds["secret_key"]}},
              "sizes": [size], "workers": [workers], "mixes": [c["mix"]]}
    name, xml = cosgen.expand(matrix)[0]
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    (outdir / name).write_text(xml)
    if c["tool"] == "cosbench":  # the real COSBench 0.4.2 (cluster image): same XML, same CSV layout
        workdir = Path(cfg["paths"]["work_dir"]) / f"cosbench-{os.getpid()}"
        if dm.image_exec():  # in the image's instance (its /opt/cosbench)
            cmd = [*dm.here(["python3", "-m", "tools.cosbench.real", str(outdir / name), "--out", str(outdir),
                             "--home", c["home"], "--timeout", str(c["timeout_s"]), "--workdir", str(workdir)])]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=c["timeout_s"] + 900)
            (outdir / "cosbench-real.log").write_text(r.stdout + r.stderr)
            if r.returncode != 0:
                raise RuntimeError(procs.failure_message("COSBench 0.4.2 (tools.cosbench.real)", r, tail=2000))
            return cosbench_metrics(outdir), {"workload": name, "tool": "cosbench 0.4.2"}
        from tools.cosbench import real as cosreal

        try:
            cosreal.run(outdir / name, outdir, Path(c["home"]), c["timeout_s"], workdir=workdir)
        except cosreal.CosbenchError as e:
            raise RuntimeError(f"COSBench 0.4.2: {e}") from e
        return cosbench_metrics(outdir), {"workload": name, "tool": "cosbench 0.4.2"}
    cmd = [str(DRIVER), "run", str(outdir / name), "--out", str(outdir), "--no-oplog", "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=c["timeout_s"])
    (outdir / "driver.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        raise RuntimeError(procs.failure_message("cosbench-driver", r, tail=2000))
    metrics = cosbench_metrics(outdir)
    return metrics, {"workload": name, "exit": r.returncode}


def cosbench_tool_check(cfg: dict) -> str:
    """The COSBench tool's version string; a missing tool fails the job before its stack comes up."""
    c = cfg["cosbench"]
    if c["tool"] == "cosbench":
        cli_sh = Path(c["home"]) / "cli.sh"
        there = (subprocess.run(dm.here(["test", "-e", str(cli_sh)]), capture_output=True).returncode == 0
                 if dm.image_exec() else cli_sh.exists())
        if not there:
            raise SystemExit(f"storage.cosbench.tool = cosbench but storage.cosbench.home = {c['home']} holds no "
                             "cli.sh (COSBench 0.4.2: the layered image containers/cosbench.def)")
        return "COSBench 0.4.2"
    if not os.access(DRIVER, os.X_OK):
        raise SystemExit(f"{DRIVER} missing: make -C tools/cosbench")
    return "cosbench-driver 1.0"


def cosbench_metrics(outdir: Path) -> list[dict]:
    """The main stage's COSBench CSV row per operation, plus the stage totals (op all):
    throughput and bandwidth summed, Avg-ResTime weighted by Op-Count."""
    rows = [r for r in cosparse.workload_rows(cosparse.find_workload_csv(outdir))
            if r["stage"].endswith("-main") and r["op_name"] != "N/A"]
    if not rows:
        raise RuntimeError(f"{outdir}: no main-stage rows in the COSBench CSV")
    out = []
    for r in rows:
        if r.get("Succ-Ratio") is not None and r["Succ-Ratio"] < 1.0:
            raise RuntimeError(f"{outdir}: {r['op_type']} Succ-Ratio {r['Succ-Ratio']}")
        for col, (metric, unit) in cosparse.METRICS.items():
            if r.get(col) is not None:
                out.append(rawio.metric(metric, r[col], unit, op=r["op_type"]))
    ops = sum(r["Op-Count"] or 0 for r in rows)
    if ops == 0:
        raise RuntimeError(f"{outdir}: no operation completed in the main stage")
    out.append(rawio.metric("throughput", sum(r["Throughput"] or 0 for r in rows), "op/s", op="all"))
    out.append(rawio.metric("bandwidth", sum(r["Bandwidth"] or 0 for r in rows), "B/s", op="all"))
    out.append(rawio.metric("op_count", ops, "ops", op="all"))
    out.append(rawio.metric("avg_res_time", sum((r["Op-Count"] or 0) * (r["Avg-ResTime"] or 0) for r in rows) / ops,
                            "ms", op="all"))
    return out


def mdtest_tool(cfg: dict) -> tuple[str, str]:
    """(path, kind) of the metadata tool: mdtest, or tools/mdtest's mdbench; from an image, the image's
    (its layer: storage.mdtest.container), which is where mdtest's tasks run."""
    want = cfg["mdtest"]["tool"]
    if dm.image_exec():
        for kind in ("mdtest", "mdbench"):
            if want in ("auto", kind):
                with_it = subprocess.run(dm.here(["sh", "-c", 'command -v "$0"', kind]), capture_output=True,
                                         text=True, timeout=120)
                if with_it.returncode == 0 and with_it.stdout.strip():
                    return with_it.stdout.strip(), kind
        raise SystemExit(f"storage.mdtest.tool = {want}, but the stack's image has no "
                         f"{'mdtest or mdbench' if want == 'auto' else want} (storage.mdtest.container: "
                         "'layered' adds IOR/mdtest, 'mdbench' tools/mdtest's mdbench with Open MPI; a stack "
                         "image alone has no MPI)")
    real = shutil.which("mdtest")
    if want in ("auto", "mdtest") and real:
        return real, "mdtest"
    if want == "mdtest":
        raise SystemExit("storage.mdtest.tool = mdtest but mdtest is not on PATH")
    if not os.access(MDBENCH, os.X_OK):
        raise SystemExit(f"{MDBENCH} missing: make -C tools/mdtest")
    return str(MDBENCH), "mdbench"


def mdtest_argv(cfg: dict, tool: str, kind: str, testdir: Path) -> list[str]:
    """The paper's mdtest options (Sec. 4.1.2: -n FILES -w 3901 -e 3901) plus -i ITERATIONS (Table 5's
    max/min/mean are over iterations) and -d; no -u (the paper did not use it: every task's items in
    one shared directory, mdtest-hard style). Files and directories (with the directory rename phase)
    unless files_only (-F); mdbench needs --dirs for the directory phases mdtest runs by default."""
    m = cfg["mdtest"]
    cmd = [tool, "-n", str(m["files"]), "-w", str(m["write_bytes"]), "-e", str(m["read_bytes"]),
           "-i", str(m["iterations"]), "-d", str(testdir)]
    if m["files_only"]:
        cmd.append("-F")
    elif kind == "mdbench":
        cmd.append("--dirs")
    return cmd


def run_mdtest(cfg: dict, directory: Path, tasks: int, outdir: Path, alloc) -> tuple[list, dict]:
    m = cfg["mdtest"]
    tool, kind = mdtest_tool(cfg)
    files_only = m["files_only"]
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    testdir = directory / f"mdtest-{os.getpid()}-{tasks}"
    inner = dm.image_exec()  # from an image: the tasks in its instance, where the stack's mount is
    if inner:
        subprocess.run(dm.here(["mkdir", "-p", str(testdir)]), check=True, capture_output=True, timeout=120)
    else:
        testdir.mkdir(parents=True, exist_ok=True)
    tasks_at = placement.probe_tasks(alloc, tasks, str(testdir), inner=inner)
    cmd = [*placement.mdtest_prefix(alloc, tasks), *inner, *mdtest_argv(cfg, tool, kind, testdir)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=m["timeout_s"])
    (outdir / "mdtest.txt").write_text(f"$ {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    if inner:
        subprocess.run(dm.here(["rm", "-rf", str(testdir)]), capture_output=True, timeout=600)
    else:
        shutil.rmtree(testdir, ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(f"{kind} exit {r.returncode}: {(r.stderr or r.stdout)[-2000:]}")
    parsed = parse_mdtest(r.stdout)
    want = MDTEST_OPS + (() if files_only else MDTEST_DIR_OPS + (MDBENCH_DIR_OPS if kind == "mdbench" else ()))
    missing = [op for op in want if op not in parsed["rates"]]
    if parsed.get("iterations") not in (None, m["iterations"]):
        raise RuntimeError(f"{kind}: summary of {parsed['iterations']} iterations, asked for {m['iterations']}")
    if missing:
        raise RuntimeError(f"{kind}: no rate for {missing}")
    out = []
    for op, st in parsed["rates"].items():
        out.append(rawio.metric("rate", st["mean"], "op/s", op=op))
        out.append(rawio.metric("rate_max", st["max"], "op/s", op=op))
        out.append(rawio.metric("rate_min", st["min"], "op/s", op=op))
    return out, {"tool": kind, "command": " ".join(cmd), "files_only": files_only, "tasks": parsed["tasks"],
                 "iterations": parsed.get("iterations"), "mdtest_nodes": parsed.get("nodes"),
                 "tasks_placement": tasks_at}


# ---------------------------------------------------------------------------------------------
# jobs
# ---------------------------------------------------------------------------------------------
class StackJob:
    """One job: a stack x benchmark x repeat, every configuration (size, workers) of it against one
    stack that comes up once and goes down at the end. Its steps, in order: `up`, `mdtest_base`
    (mdtest only), `run_all` (`run_one` per configuration), `down` (also after a failure)."""

    def __init__(self, cfg: dict, stack: str, benchmark: str, rep: int, confs: list, kind: str, alloc):
        self.cfg, self.stack, self.benchmark, self.rep, self.kind, self.alloc = cfg, stack, benchmark, rep, kind, alloc
        self.pl = pl = placement.plan(alloc)
        self.work = work = Path(cfg["paths"]["work_dir"])
        tag = f"{stack}-{benchmark}-rep{rep}-{os.getpid()}"
        # what every node reads (conf, keys, PID files, logs, placement records) must be shared on a cluster
        self.state = (Path(cfg["paths"]["shared_dir"]) if pl.multi_host else work).resolve() / tag
        self.local = work.resolve() / f"{tag}-local"
        self.needs_daemons = not (stack == "lustre-minio" and benchmark == "mdtest")
        self.versions = {"cosbench": cosbench_tool_check(cfg)} if benchmark == "cosbench" else {}
        if benchmark == "mdtest":
            mdtest_tool(cfg)  # fails before the stack comes up when the tool is missing
        self.params_of = {c["size"] + str(c["workers"]): c for c in confs}
        self.raws = {k: layout.raw_path(stack, benchmark, c["size"], c["workers"], rep)
                     for k, c in self.params_of.items()}
        self.info: dict = {}
        self.base: Path | None = None  # the directory mdtest works in
        say(f"placement: {pl.why}")

    def record(self, c: dict) -> dict:
        return rawio.new_record(layout.STUDY, self.benchmark,
                                {"stack": self.stack, "benchmark": self.benchmark, "size": c["size"],
                                 "workers": c["workers"], "nodes": self.cfg["nodes"][0]},
                                self.rep, self.kind, self.versions)

    def placement_of(self, tasks_at=None) -> dict:
        endpoint = (self.info.get("endpoints") or {}).get("s3", "") if self.benchmark == "cosbench" else ""
        host = endpoint.split("//")[-1].split(":")[0] if endpoint else None
        driver = placement.driver_side(host)
        daemons = self.info.get("placement") or {}
        # how each side ran: this driver on the host; the stack's commands in its image (an instance here) or not
        runs_in = {"driver": "host", "stack": " ".join(dm.image_exec()) or "host"}
        return {"allocation": self.alloc.as_dict(), "plan": self.pl.as_dict(), "driver": driver, "daemons": daemons,
                "runs_in": runs_in,
                **({"mdtest_tasks": tasks_at} if tasks_at is not None else {}),
                "checks": placement.checks(self.alloc, self.pl, driver, daemons, tasks_at)}

    def keep_logs(self, raw) -> None:
        """The daemons' full logs (STATE/log/*.log, systems/storage_common/daemons.py) beside the failure
        record: ``down`` removes the state directory."""
        kept = rawio.keep_logs(raw, [self.state / "log"])
        if kept:
            say(f"daemon logs kept in {kept}")

    def fail_all(self, keys, why: str, kind: str | None = None) -> None:
        for k in keys:
            rec = self.record(self.params_of[k])
            rec["extra"] = {"state": str(self.state),
                            "placement": {"allocation": self.alloc.as_dict(), "plan": self.pl.as_dict()}}
            rawio.write_failure(self.raws[k], rec, why, kind)
            self.keep_logs(self.raws[k])
            say(f"FAILED {self.raws[k]}: {why.splitlines()[0] if why else ''}")

    def up(self) -> bool:
        """The stack up through its stack.py; False (every configuration recorded failed) if it did not come up."""
        stack = self.stack
        self.state.mkdir(parents=True, exist_ok=True)
        self.local.mkdir(parents=True, exist_ok=True)
        args = stack_args(self.cfg, stack, self.state, self.local, self.pl)
        say(f"{stack}: up ({' '.join(args)})")
        t0 = time.monotonic()
        try:
            r = subprocess.run(stack_cmd(stack, "up", self.state, *args), capture_output=True, text=True,
                               timeout=900)
        except subprocess.TimeoutExpired as exc:
            self.fail_all(list(self.params_of), f"{stack} did not come up: "
                          + procs.failure_message("stack.py up", exc, tail=4000), "timeout")
            return False
        if r.returncode != 0:
            self.fail_all(list(self.params_of), f"{stack} did not come up: "
                          + procs.failure_message("stack.py up", r, tail=4000))
            return False
        self.info = info = json.loads((self.state / "stack.json").read_text())
        if stack == "lustre-minio":  # what MinIO's drive really is (Lustre or not), from the mount table
            self.kind = info.get("system_kind") or self.kind
        self.versions.update({f"{stack}:{k}": v for k, v in info.get("versions", {}).items()})
        say(f"{stack}: up in {time.monotonic() - t0:.1f} s, {info.get('system_kind')}")
        return True

    def mdtest_base(self) -> None:
        """Where mdtest works: the stack's mount, or (lustre-minio) the Lustre directory or its stand-in."""
        if self.stack == "lustre-minio":
            base = Path(self.cfg["paths"]["lustre_dir"] or self.work / "lustre-standin-fs")
            base.mkdir(parents=True, exist_ok=True)
            from systems.storage_common.where import mount_of

            if mount_of(str(base))["fs_type"] != "lustre":  # a named directory that is not on Lustre
                self.kind = layout.STAND_IN_LUSTRE_DIR
        else:
            base = Path(self.info["endpoints"]["mount"])
        self.base = base
        self.versions["mdtest"] = mdtest_tool(self.cfg)[1]

    def run_all(self) -> int:
        """Every configuration in turn; the number that failed."""
        todo = list(self.params_of)
        failed = 0
        for i, k in enumerate(list(todo), 1):
            n_failed, stop = self.run_one(k, f"[{i}/{len(todo)}]", todo[i:])
            failed += n_failed
            if stop:
                break
        return failed

    def run_one(self, k: str, progress: str, rest: list) -> tuple[int, bool]:
        """One configuration, its raw file written (or its failure record): (failed count, stop). A
        stack that died fails the configurations still to come (`rest`) and stops the job."""
        stack, benchmark, needs_daemons = self.stack, self.benchmark, self.needs_daemons
        c = self.params_of[k]
        raw = self.raws[k]
        say(f"{stack} {benchmark} size={c['size']} workers={c['workers']} rep={self.rep} {progress}")
        rec = self.record(c)
        try:
            if benchmark == "cosbench":
                metrics, extra = run_cosbench(self.cfg, stack, self.info, c["size"], c["workers"],
                                              Path(layout.tool_dir(raw)))
            else:
                metrics, extra = run_mdtest(self.cfg, self.base, c["workers"], Path(layout.tool_dir(raw)), self.alloc)
            dead = stack_status(stack, self.state) if needs_daemons else None
            if dead:
                raise RuntimeError(f"{stack} unhealthy after the run:\n{dead}")
        except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
            rec["extra"] = {"tool_output": layout.tool_dir(raw), "placement": self.placement_of()}
            dead = stack_status(stack, self.state) if needs_daemons else None
            why = (f"{type(e).__name__}: {e}" if not str(e).strip() or isinstance(e, subprocess.TimeoutExpired)
                   else f"{e}") + (f"\nstack status:\n{dead}" if dead else "")
            rawio.write_failure(raw, rec, why, "timeout" if isinstance(e, subprocess.TimeoutExpired) else None)
            self.keep_logs(raw)
            say(f"FAILED {raw}: {why.splitlines()[0]}")
            if dead:
                self.fail_all(rest, f"{stack} died during an earlier configuration:\n{dead}")
                return 1 + len(rest), True
            return 1, False
        info = self.info
        rec["metrics"] = metrics
        rec["sanity"] = {"exit": 0, "succ_ratio_1": True, "stack_healthy_after": True}
        tasks_at = extra.pop("tasks_placement", None)
        rec["extra"] = {**extra, "tool_output": layout.tool_dir(raw), "stack": {
            k2: info.get(k2) for k2 in ("system_kind", "endpoints", "hosts", "up_seconds", "pool_size",
                                        "pool_min_size", "pool_size_source", "public_network", "osds_per_host")
            if k2 in info}, "placement": self.placement_of(tasks_at)}
        rawio.write_json_atomic(raw, rawio.finish(rec))
        rawio.clear_failure(raw)
        return 0, False

    def down(self) -> None:
        """The stack down and its directories removed (also after a failure); the Lustre stand-in's S3 data."""
        stack, state, local = self.stack, self.state, self.local
        if self.needs_daemons and state.exists():
            say(f"{stack}: down")
            d = subprocess.run(stack_cmd(stack, "down", state), capture_output=True, text=True, timeout=300)
            if d.returncode != 0:
                say(f"{stack}: down exit {d.returncode}: {d.stderr[-2000:]}")
            else:
                shutil.rmtree(state, ignore_errors=True)
                shutil.rmtree(local, ignore_errors=True)
                for h in self.pl.hosts or []:  # the node-local data of the system nodes
                    subprocess.run(self.pl.launcher.format(host=h).split() + ["rm", "-rf", str(local)],
                                   capture_output=True, text=True, timeout=300)
        if stack == "lustre-minio" and not self.cfg["paths"].get("lustre_dir"):
            shutil.rmtree(self.work / "lustre-standin-s3", ignore_errors=True)


def run_stack(cfg: dict, stack: str, benchmark: str, rep: int, launcher: str, alloc=None, image: str = "") -> int:
    """One stack x benchmark x repeat (a StackJob): 0 all ran, 1 some failed, 2 not run here (why said)."""
    confs = layout.configurations(cfg, stack, benchmark)
    kind = layout.system_kind(cfg, stack, benchmark)
    why_not = layout.lustre_not_run(cfg, launcher) if stack == "lustre-minio" else None
    if why_not:
        say(f"{stack}: not run: {why_not}")
        return 2
    def refuse(why: str) -> int:
        """Nothing may start: a failure record per configuration, saying why (kind error)."""
        print(f"storage: {why}", file=sys.stderr)
        for c in confs:
            rec = rawio.new_record(layout.STUDY, benchmark, {"stack": stack, "benchmark": benchmark, "size": c["size"],
                                                             "workers": c["workers"], "nodes": cfg["nodes"][0]},
                                   rep, kind, {})
            rawio.write_failure(layout.raw_path(stack, benchmark, c["size"], c["workers"], rep), rec, why, "error")
        return 1

    not_lustre = lustre.refusal(cfg["paths"].get("lustre_dir")) if stack == "lustre-minio" else None
    if not_lustre:  # issue 28: a directory that is not Lustre is refused at job start, naming the key
        return refuse(not_lustre)
    try:
        alloc = alloc or (allocation.current() if launcher == "slurm" else allocation.local())
    except allocation.AllocationError as e:  # e.g. the driver inside an image without Slurm's client
        return refuse(str(e))
    side = ImageSide(image, cfg, f"{stack}-{benchmark}-{rep}-{os.getpid()}") if image else None
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    job = None
    try:
        if side:
            try:
                side.start()
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                return refuse(f"the stack's image could not start on {allocation.here().get('hostname')}: {e}")
        job = StackJob(cfg, stack, benchmark, rep, confs, kind, alloc)
        if job.needs_daemons and not job.up():
            return 1
        if benchmark == "mdtest":
            job.mdtest_base()
        return 1 if job.run_all() else 0
    finally:
        if job:
            job.down()
        if side:
            side.stop()


def fio_argv(cfg: dict, directory: Path, out: Path, prefix: list[str], python: str = sys.executable) -> list[str]:
    """tools/fio's runner on `directory` (behind `prefix`: an srun step on a system node on a cluster,
    and/or the image's `apptainer exec`, whose `python` is python3)."""
    lim = cfg["limit"]
    return [*prefix, python, "-m", "tools.fio.runner", "--directory", str(directory), "--out", str(out),
            "--sizes", ",".join(lim["fio_sizes"]), "--file-size", lim["fio_file_size"],
            "--runtime", str(lim["fio_runtime"])]


def fio_place(cfg: dict, alloc) -> tuple[Path, list[str], str]:
    """Where fio measures: the Lustre directory where one is named (a shared file system, from the
    driver), else the node-local work_dir of the first system node -- where the stacks' data sit on
    several hosts (an srun step there) -- or of this host."""
    pl = placement.plan(alloc)
    lustre = cfg["paths"].get("lustre_dir")
    base = Path(lustre or cfg["paths"]["work_dir"])
    if pl.multi_host and not lustre:
        node = alloc.system_nodes[0]
        return base, alloc.step(node, name="fio-limit"), node.name
    return base, [], alloc.driver.name


def run_limit(cfg: dict, limit: str, rep: int, launcher: str = "local", alloc=None, image: str = "") -> int:
    lim = cfg["limit"]
    raw = layout.limit_path(limit, rep)
    out = Path(layout.tool_dir(raw))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    kind = "real" if limit == "fio" else "stand-in:memserver"
    # fio from the image (a cluster run): a container of its own where it measures (ImageSide.exec_plain)
    inner = ImageSide(image, cfg, f"limit-{limit}-{rep}-{os.getpid()}").exec_plain if image and limit == "fio" else []
    rec = rawio.new_record(layout.STUDY, f"limit-{limit}", {"limit": limit}, rep, kind,
                           {"fio": provenance.tool_version([*inner, "fio", "--version"], timeout=300)} if limit == "fio"
                           else {"cosbench-driver": "cosbench-driver 1.0"})
    try:
        if limit == "fio":
            from tools.fio import parser as fparse
            from tools.fio import runner as frunner

            not_lustre = lustre.refusal(cfg["paths"].get("lustre_dir"))
            if not_lustre:  # fio would measure another file system under Lustre's name
                raise RuntimeError(not_lustre)
            alloc = alloc or (allocation.current() if launcher == "slurm" else allocation.local())
            base, prefix, node = fio_place(cfg, alloc)
            prefix = [*prefix, *inner]  # on the system node (srun step), in the image (apptainer exec)
            py = "python3" if inner else sys.executable
            d = base / f"fio-{os.getpid()}"
            say(f"fio on {node}:{d} sizes={lim['fio_sizes']} rep={rep}")
            try:
                if prefix:  # on a system node: its node-local disk, where the stacks' data sit
                    from systems.storage_common.daemons import WHERE

                    r = subprocess.run([*prefix, "mkdir", "-p", str(d)], capture_output=True, text=True, timeout=120)
                    if r.returncode != 0:
                        raise RuntimeError(procs.failure_message(f"mkdir -p {d}", r, node=node, tail=2000))
                    where = subprocess.run([*prefix, py, str(WHERE), "probe", str(d)], capture_output=True,
                                           text=True, timeout=120).stdout
                    r = subprocess.run(fio_argv(cfg, d, out, prefix, py), capture_output=True, text=True, timeout=7200)
                    (out / "fio-runner.log").write_text(r.stdout + r.stderr)
                    if r.returncode != 0:
                        raise RuntimeError(procs.failure_message("fio", r, node=node, tail=2000))
                    files = sorted(out.glob("*~*.json"))
                    measured = json.loads(where.splitlines()[0]) if where.strip() else {}
                else:
                    d.mkdir(parents=True, exist_ok=True)
                    from systems.storage_common.where import mount_of, record

                    measured = {**record(), "mount": mount_of(str(d))}
                    files = frunner.run_all(d, out, lim["fio_sizes"], lim["fio_file_size"], lim["fio_runtime"])
            finally:
                if prefix:
                    subprocess.run([*prefix, "rm", "-rf", str(d)], capture_output=True, timeout=300)
                else:
                    shutil.rmtree(d, ignore_errors=True)
            for row in fparse.parse_files(files):
                rec["metrics"].append(rawio.metric(row["metric"], row["value"], row["unit"], rw=row["rw"],
                                                   bs=row["bs"], direct=str(row["direct"])))
            rec["extra"] = {"directory": str(d.parent), "placement": {"node": node, "measured": measured,
                                                                       "allocation": alloc.as_dict(),
                                                                       "runs_in": shlex.join(inner) or "host"}}
        else:
            say(f"ceiling sizes={lim['ceiling_sizes']} workers={lim['ceiling_workers']} rep={rep}")
            cmd = [str(DRIVER), "ceiling", "--sizes", ",".join(lim["ceiling_sizes"]), "--workers",
                   ",".join(map(str, lim["ceiling_workers"])), "--seconds", str(lim["ceiling_seconds"]),
                   "--json", str(out / "ceiling.json")]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            (out / "ceiling.log").write_text(r.stdout + r.stderr)
            if r.returncode != 0:
                raise RuntimeError(procs.failure_message("cosbench-driver ceiling", r, tail=2000))
            for row in json.loads((out / "ceiling.json").read_text())["rows"]:
                if row["succ_ratio"] < 1:
                    raise RuntimeError(f"ceiling {row['size']} {row['workers']} {row['op']}: succ {row['succ_ratio']}")
                lab = {"op": row["op"], "size": row["size"], "workers": int(row["workers"])}
                rec["metrics"] += [rawio.metric("throughput", row["ops_per_s"], "op/s", **lab),
                                   rawio.metric("bandwidth", row["bytes_per_s"], "B/s", **lab),
                                   rawio.metric("avg_res_time", row["avg_res_ms"], "ms", **lab)]
    except (RuntimeError, SystemExit, subprocess.TimeoutExpired, OSError, ValueError) as e:
        rawio.write_failure(raw, rec, str(e).strip() or repr(e),
                            "timeout" if isinstance(e, subprocess.TimeoutExpired) else None)
        say(f"FAILED {raw}: {e}")
        return 1
    rec["sanity"] = {"exit": 0}
    rawio.write_json_atomic(raw, rawio.finish(rec))
    rawio.clear_failure(raw)
    return 0


def main(argv=None) -> int:
    ap = cli.parser(__doc__)
    ap.add_argument("what", choices=["stack", "limit"])
    ap.add_argument("--stack", choices=layout.STACKS)
    ap.add_argument("--benchmark", choices=layout.BENCHMARKS)
    ap.add_argument("--limit", choices=layout.LIMITS)
    ap.add_argument("--rep", type=int, required=True)
    ap.add_argument("--launcher", choices=["local", "slurm"], default="local")
    ap.add_argument("--image", default="", help="the stack's image (a cluster run): its commands run in it, this "
                    "driver on the host (module docstring)")
    a, cfg = cli.finish(ap, argv)
    Path(cfg["paths"]["work_dir"]).mkdir(parents=True, exist_ok=True)
    if a.what == "stack":
        if not (a.stack and a.benchmark):
            ap.error("stack needs --stack and --benchmark")
        return run_stack(cfg, a.stack, a.benchmark, a.rep, a.launcher, image=a.image)
    if not a.limit:
        ap.error("limit needs --limit")
    return run_limit(cfg, a.limit, a.rep, a.launcher, image=a.image)


if __name__ == "__main__":
    sys.exit(main())
