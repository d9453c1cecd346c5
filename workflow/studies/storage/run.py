"""One storage job (paper 002, Sec. 4): a stack run or a limit, writing the raw files of layout.py.

The run contract (repro.runner), one experiment per benchmark and per limit:

    python3 -m studies.storage.run cosbench|mdtest --config CFG --rep R --out RAW...
        --params '{"stack": "ceph|lustre-minio|juicefs", "launcher": "local|slurm"}' [--input image=SIF]
    python3 -m studies.storage.run limit-fio|limit-ceiling --config CFG --rep R --out RAW
        --params '{"launcher": "local|slurm"}' [--input image=SIF]

--out is the job's raw files (Snakemake's {output}: layout.py's paths, every (size, workers) of the
benchmark for a stack job, exactly those). The experiment names are the records' `experiment`.

cosbench / mdtest: brings the stack up with its own `systems/<x>/stack.py up` (state and data under
paths.work_dir), runs every configuration of the benchmark against it -- COSBench workloads from
tools/cosbench/gen.py through cosbench-driver (its CSVs parsed by tools/cosbench/parser.py), or
mdtest / mdbench -n FILES -w 3901 -e 3901 -i ITERATIONS on the stack's file side -- and ALWAYS
brings it down (try/finally; SIGTERM/SIGINT arrive as the runner's Terminated). Each configuration
is recorded as it ends (ctx.settle); a job stopped later keeps those, the runner records the rest.

Placement (placement.py): the nodes come from repro.allocation (never SLURM_* variables); on
several hosts the daemons run on the system nodes through srun steps, bound to their nodes'
addresses, Ceph with public_network derived from the allocation; the driver, mdtest's tasks and the
FUSE mount they use are on the driver node. The stack's state (conf, keys, PID files, logs, each
daemon's measured placement) is under paths.shared_dir (the project directory, shared on a
cluster), its data, mounts and caches under paths.work_dir (node-local). Every raw record carries
extra.placement: the plan, the driver's measured placement, each daemon's, mdtest's tasks', checks.

A configuration whose run fails (exit status, a failed or unverified request, a dead daemon) gets a
failure record naming why (with the stack's log tail; the daemons' full logs beside it: ctx.logs);
the job then exits 1. lustre-minio's file side is the Lustre directory itself (paths.lustre_dir;
locally a POSIX directory, the stand-in), so its mdtest job starts no daemon. On Slurm without
paths.lustre_dir the Lustre+MinIO jobs are not planned (layout.lustre_not_run) and refused here
(runner.Refused: exit 2, nothing recorded).

limit-fio: fio on the directory the stacks sit on (tools/fio); limit-ceiling: the COSBench driver's
own ceiling against its in-memory S3 endpoint (cosbench-driver ceiling).

--input image=SIF (a cluster run from images): this driver stays on the host -- it needs Slurm's client
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
import subprocess
import sys
import time
from pathlib import Path

from repro import allocation, procs, provenance, rawio, runner
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
PORT_TRIES = 3  # stack starts when another process took one of its ports (systems/storage_common/daemons.py)
# what a stack says when another process holds one of its ports: at the start's own check
# (require_port_free) or once a daemon's answer came from another process (wait_until)
PORT_TAKEN = re.compile(r"taken by another process|port \S+ is already in use")


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
def conf_key(c: dict) -> str:
    return c["size"] + str(c["workers"])


def conf_params(cfg: dict, stack: str, benchmark: str, c: dict) -> dict:
    """A stack configuration's record params."""
    return {"stack": stack, "benchmark": benchmark, "size": c["size"], "workers": c["workers"],
            "nodes": cfg["nodes"][0]}


class StackJob:
    """One job: a stack x benchmark x repeat, every configuration (size, workers) of it against one
    stack that comes up once and goes down at the end. Its steps, in order: `up`, `mdtest_base`
    (mdtest only), `run_all` (`run_one` per configuration), `down` (also after a failure). Each
    configuration is recorded as it ends (ctx.settle): a job stopped later keeps what it finished."""

    def __init__(self, ctx: runner.Context, stack: str, benchmark: str, raws: dict, kind: str, alloc):
        self.ctx, self.cfg, self.rep = ctx, ctx.cfg, ctx.rep
        self.stack, self.benchmark, self.kind, self.alloc = stack, benchmark, kind, alloc
        self.pl = pl = placement.plan(alloc)
        self.work = work = Path(self.cfg["paths"]["work_dir"])
        tag = f"{stack}-{benchmark}-rep{self.rep}-{os.getpid()}"
        # what every node reads (conf, keys, PID files, logs, placement records) must be shared on a cluster
        self.state = (Path(self.cfg["paths"]["shared_dir"]) if pl.multi_host else work).resolve() / tag
        self.local = work.resolve() / f"{tag}-local"
        self.needs_daemons = not (stack == "lustre-minio" and benchmark == "mdtest")
        self.versions = {"cosbench": cosbench_tool_check(self.cfg)} if benchmark == "cosbench" else {}
        if benchmark == "mdtest":
            mdtest_tool(self.cfg)  # fails before the stack comes up when the tool is missing
        self.params_of = {conf_key(c): c for c in layout.configurations(self.cfg, stack, benchmark)}
        self.raws = raws
        self.settled: set[str] = set()
        self.info: dict = {}
        self.base: Path | None = None  # the directory mdtest works in
        say(f"placement: {pl.why}")

    def record(self, k: str) -> dict:
        """Configuration k's record (the runner's, kept for its raw file: a failure of the whole job records it)."""
        return self.ctx.record(self.versions, self.kind,
                               params=conf_params(self.cfg, self.stack, self.benchmark, self.params_of[k]),
                               out=self.raws[k])

    def settle(self, k: str, value) -> None:
        """Configuration k recorded now: its record, or a RunFailed (a failure record, the daemons' logs beside it)."""
        self.ctx.settle(self.raws[k], value)
        self.settled.add(k)

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

    def fail_all(self, keys, why: str, kind: str | None = None) -> None:
        """Configurations that cannot run (the stack did not come up, or died): each a failure record."""
        for k in keys:
            rec = self.record(k)
            rec["extra"] = {"state": str(self.state),
                            "placement": {"allocation": self.alloc.as_dict(), "plan": self.pl.as_dict()}}
            self.settle(k, runner.RunFailed(why, rec, kind=kind))

    def up(self) -> bool:
        """The stack up through its stack.py; False (every configuration recorded failed) if it did not come up."""
        stack = self.stack
        self.state.mkdir(parents=True, exist_ok=True)
        self.local.mkdir(parents=True, exist_ok=True)
        # the daemons' full logs (STATE/log/*.log, systems/storage_common/daemons.py) beside every failure record
        self.ctx.logs.append(self.state / "log")
        t0 = time.monotonic()
        earlier = []  # the tries that lost a port to another process, said in the failure if all fail
        for attempt in range(1, PORT_TRIES + 1):
            args = stack_args(self.cfg, stack, self.state, self.local, self.pl)  # fresh ports each try
            say(f"{stack}: up ({' '.join(args)})")
            try:
                r = subprocess.run(stack_cmd(stack, "up", self.state, *args), capture_output=True, text=True,
                                   timeout=900)
            except subprocess.TimeoutExpired as exc:
                self.fail_all(list(self.params_of), f"{stack} did not come up: "
                              + procs.failure_message("stack.py up", exc, tail=4000), "timeout")
                return False
            if r.returncode == 0 or not PORT_TAKEN.search((r.stderr or "") + (r.stdout or "")) or attempt == PORT_TRIES:
                break
            # another job's daemon took a port between free_port() and the start (the stack said so,
            # naming it): that stack down, again on other ports
            taken = procs.output_tail(r.stdout or "", r.stderr or "", 600)
            earlier.append(f"try {attempt}: {taken}")
            say(f"{stack}: a port was taken by another process (try {attempt} of {PORT_TRIES}): {taken}")
            d = subprocess.run(stack_cmd(stack, "down", self.state), capture_output=True, text=True, timeout=300)
            if d.returncode != 0:
                say(f"{stack}: down after the taken port: exit {d.returncode}: {d.stderr[-1000:]}")
                break
        if r.returncode != 0:
            self.fail_all(list(self.params_of), f"{stack} did not come up: "
                          + procs.failure_message("stack.py up", r, tail=4000)
                          + (f" (after {len(earlier)} tries that lost a port: {'; '.join(earlier)})"
                             if earlier else ""))
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

    def run_all(self) -> None:
        """Every configuration in turn (a stack that died stops the job)."""
        todo = list(self.params_of)
        for i, k in enumerate(todo, 1):
            if self.run_one(k, f"[{i}/{len(todo)}]", todo[i:]):
                break

    def run_one(self, k: str, progress: str, rest: list) -> bool:
        """One configuration, recorded (its raw file, or its failure record); True: stop. A stack that
        died fails the configurations still to come (`rest`) and stops the job."""
        stack, benchmark, needs_daemons = self.stack, self.benchmark, self.needs_daemons
        c = self.params_of[k]
        raw = self.raws[k]
        say(f"{stack} {benchmark} size={c['size']} workers={c['workers']} rep={self.rep} {progress}")
        rec = self.record(k)
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
            self.settle(k, runner.RunFailed(why, rec, kind="timeout" if isinstance(e, subprocess.TimeoutExpired)
                                            else None))
            if dead:
                self.fail_all(rest, f"{stack} died during an earlier configuration:\n{dead}")
                return True
            return False
        info = self.info
        rec["metrics"] = metrics
        rec["sanity"] = {"exit": 0, "succ_ratio_1": True, "stack_healthy_after": True}
        tasks_at = extra.pop("tasks_placement", None)
        rec["extra"] = {**extra, "tool_output": layout.tool_dir(raw), "stack": {
            k2: info.get(k2) for k2 in ("system_kind", "endpoints", "hosts", "up_seconds", "pool_size",
                                        "pool_min_size", "pool_size_source", "public_network", "osds_per_host")
            if k2 in info}, "placement": self.placement_of(tasks_at)}
        self.settle(k, rec)
        return False

    def save_daemon_logs(self) -> None:
        """The job is ending with configurations not recorded (a signal, a crash): the runner records
        them after this job's clean-up, so the daemons' logs move out of the state directory first."""
        logs = self.state / "log"
        if set(self.params_of) <= self.settled or not logs.is_dir():
            return
        import atexit
        import tempfile

        kept = Path(tempfile.mkdtemp(prefix="storage-logs-")) / "log"
        atexit.register(shutil.rmtree, kept.parent, ignore_errors=True)  # once the runner has copied them
        shutil.copytree(logs, kept, dirs_exist_ok=True)
        self.ctx.logs[:] = [kept if Path(p) == logs else p for p in self.ctx.logs]
        say(f"daemon logs kept in {kept} for the failure records")

    def down(self) -> None:
        """The stack down and its directories removed (also after a failure); the Lustre stand-in's S3 data."""
        stack, state, local = self.stack, self.state, self.local
        if self.needs_daemons and state.exists():
            say(f"{stack}: down")
            d = subprocess.run(stack_cmd(stack, "down", state), capture_output=True, text=True, timeout=300)
            if d.returncode != 0:
                say(f"{stack}: down exit {d.returncode}: {d.stderr[-2000:]}")
            else:
                try:
                    self.save_daemon_logs()
                except OSError as exc:
                    say(f"{stack}: logs not kept: {exc}")
                shutil.rmtree(state, ignore_errors=True)
                shutil.rmtree(local, ignore_errors=True)
                for h in self.pl.hosts or []:  # the node-local data of the system nodes
                    subprocess.run(self.pl.launcher.format(host=h).split() + ["rm", "-rf", str(local)],
                                   capture_output=True, text=True, timeout=300)
        if stack == "lustre-minio" and not self.cfg["paths"].get("lustre_dir"):
            shutil.rmtree(self.work / "lustre-standin-s3", ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# the experiments (repro.runner): cosbench and mdtest (one stack each), limit-fio, limit-ceiling
# ---------------------------------------------------------------------------------------------
RUN = runner.Experiments(layout.STUDY)


def launcher_of(ctx: runner.Context) -> str:
    launcher = ctx.params.get("launcher", "local")
    if launcher not in ("local", "slurm"):
        raise runner.Refused(f"--params launcher: local or slurm, not {launcher!r}")
    return launcher


def raw_dir_of(ctx: runner.Context, first_dim: str) -> str:
    """The raw directory of --out (<raw dir>/<first_dim>~...: layout.py's paths)."""
    m = re.search(rf"/{first_dim}~", ctx.outs[0])
    if not m:
        raise runner.Refused(f"--out {ctx.outs[0]} is not a storage raw path (<raw dir>/{first_dim}~...)")
    return ctx.outs[0][: m.start()]


def job_outs(ctx: runner.Context, want: list[str]) -> None:
    """--out must be exactly the job's raw files (layout.py's, under its raw directory)."""
    if sorted(want) != sorted(ctx.outs):
        raise runner.Refused(f"--out {ctx.outs} are not the raw files of this job {want}")


def stack_job(ctx: runner.Context, benchmark: str) -> dict:
    """One stack x benchmark x repeat (a StackJob): params stack, launcher; input image (a cluster run:
    the stack's commands in it). Lustre+MinIO on a cluster without paths.lustre_dir: Refused (not run,
    layout.lustre_not_run). A job that cannot start (a lustre_dir not on Lustre, no allocation, the
    image) fails every configuration saying why, before any stack or tool starts."""
    cfg, rep = ctx.cfg, ctx.rep
    stack = ctx.params.get("stack")
    if stack not in layout.STACKS:
        raise runner.Refused(f"--params stack: one of {', '.join(layout.STACKS)}, not {stack!r}")
    launcher, image = launcher_of(ctx), ctx.inputs.get("image", "")
    Path(cfg["paths"]["work_dir"]).mkdir(parents=True, exist_ok=True)
    confs = layout.configurations(cfg, stack, benchmark)
    kind = layout.system_kind(cfg, stack, benchmark)
    why_not = layout.lustre_not_run(cfg, launcher) if stack == "lustre-minio" else None
    if why_not:
        say(f"{stack}: not run: {why_not}")
        raise runner.Refused(why_not)
    raw_dir = raw_dir_of(ctx, "stack")
    raws = {conf_key(c): layout.raw_path(stack, benchmark, c["size"], c["workers"], rep, raw_dir) for c in confs}
    job_outs(ctx, list(raws.values()))
    for c in confs:  # each configuration's record from the start: a failure of the whole job records each
        ctx.record({}, kind, params=conf_params(cfg, stack, benchmark, c), out=raws[conf_key(c)])
    not_lustre = lustre.refusal(cfg["paths"].get("lustre_dir")) if stack == "lustre-minio" else None
    if not_lustre:  # issue 28: a directory that is not Lustre is refused at job start, naming the key
        raise runner.RunFailed(not_lustre, kind="error")
    try:
        alloc = allocation.current() if launcher == "slurm" else allocation.local()
    except allocation.AllocationError as e:  # e.g. the driver inside an image without Slurm's client
        raise runner.RunFailed(str(e), kind="error") from e
    side = ImageSide(image, cfg, f"{stack}-{benchmark}-{rep}-{os.getpid()}") if image else None
    job = None
    try:
        if side:
            try:
                side.start()
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                raise runner.RunFailed(f"the stack's image could not start on {allocation.here().get('hostname')}: "
                                       f"{e}", kind="error") from e
        job = StackJob(ctx, stack, benchmark, raws, kind, alloc)
        if job.needs_daemons and not job.up():
            return {}  # every configuration recorded failed
        if benchmark == "mdtest":
            job.mdtest_base()
        job.run_all()
        return {}  # every configuration recorded as it ended (ctx.settle)
    finally:
        if job:
            job.down()
        if side:
            side.stop()


@RUN.experiment("cosbench")
def cosbench(ctx: runner.Context) -> dict:
    """Every COSBench workload (size x workers) of the config against one stack (stack_job)."""
    return stack_job(ctx, "cosbench")


@RUN.experiment("mdtest")
def mdtest(ctx: runner.Context) -> dict:
    """mdtest (or mdbench) at every task count of the config on one stack's file side (stack_job)."""
    return stack_job(ctx, "mdtest")


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


def limit_start(ctx: runner.Context, limit: str) -> tuple[str, Path]:
    """(the limit's raw file, its tool output directory, made empty)."""
    launcher_of(ctx)
    Path(ctx.cfg["paths"]["work_dir"]).mkdir(parents=True, exist_ok=True)
    raw = layout.limit_path(limit, ctx.rep, raw_dir_of(ctx, "limit"))
    job_outs(ctx, [raw])
    out = Path(layout.tool_dir(raw))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return raw, out


def limit_failed(e: BaseException, rec: dict) -> runner.RunFailed:
    return runner.RunFailed(str(e).strip() or repr(e), rec,
                            kind="timeout" if isinstance(e, subprocess.TimeoutExpired) else None)


LIMIT_ERRORS = (RuntimeError, SystemExit, subprocess.TimeoutExpired, OSError, ValueError)


@RUN.experiment("limit-fio")
def limit_fio(ctx: runner.Context) -> dict:
    """fio on the directory the stacks sit on (fio_place): params launcher; input image (fio from it)."""
    cfg, rep, lim = ctx.cfg, ctx.rep, ctx.cfg["limit"]
    raw, out = limit_start(ctx, "fio")
    image = ctx.inputs.get("image", "")
    # fio from the image (a cluster run): a container of its own where it measures (ImageSide.exec_plain)
    inner = ImageSide(image, cfg, f"limit-fio-{rep}-{os.getpid()}").exec_plain if image else []
    rec = ctx.record({"fio": provenance.tool_version([*inner, "fio", "--version"], timeout=300)},
                     params={"limit": "fio"}, out=raw)
    try:
        from tools.fio import parser as fparse
        from tools.fio import runner as frunner

        not_lustre = lustre.refusal(cfg["paths"].get("lustre_dir"))
        if not_lustre:  # fio would measure another file system under Lustre's name
            raise RuntimeError(not_lustre)
        alloc = allocation.current() if launcher_of(ctx) == "slurm" else allocation.local()
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
    except LIMIT_ERRORS as e:
        raise limit_failed(e, rec) from e
    rec["sanity"] = {"exit": 0}
    return rec


@RUN.experiment("limit-ceiling", system_kind="stand-in:memserver")
def limit_ceiling(ctx: runner.Context) -> dict:
    """The COSBench driver's own ceiling against its in-memory S3 endpoint: params launcher."""
    lim, rep = ctx.cfg["limit"], ctx.rep
    raw, out = limit_start(ctx, "ceiling")
    rec = ctx.record({"cosbench-driver": "cosbench-driver 1.0"}, params={"limit": "ceiling"}, out=raw)
    try:
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
    except LIMIT_ERRORS as e:
        raise limit_failed(e, rec) from e
    rec["sanity"] = {"exit": 0}
    return rec


if __name__ == "__main__":
    sys.exit(RUN.main())
