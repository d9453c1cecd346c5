"""An MTC scheduler on the driver: runs a stage's tasks on the nodes' agents.

Every system node has ``k`` slots (k tasks at a time); slot ``j`` uses mount
point ``j`` of its node (one MemFS mount per concurrent task, the paper's fix
for FUSE's per-mount lock).

Placement:

* ``uniform`` (used with MemFS and local disk; the paper's AMFS Shell on top
  of MemFS): a shared queue, every free slot takes the next task
  (least-loaded); placement ignores where data lives.
* ``locality`` (AMFS Shell over AMFS): a task runs on a node that holds its
  *first* input, as the file system reports it (``cluster.locate``: MemFS's
  owner list, ``user.memfs.owners``); among several owners (replicas) the one
  with the fewest tasks of this stage so far.  Its other inputs are read
  remotely, and the file system replicates them on read.  Tasks without
  inputs (stage-in) go round-robin, which scatters the input files.

Aggregation tasks (``where="scheduler"``) always run on the scheduler node,
system node 1.

The local-disk baseline has no shared namespace: the driver keeps a catalogue
of which node holds which file, and before a task runs on a node the driver
copies every input the node lacks from a node that has it
(``cluster.copy``); the copy is part of the task's time, and the copies stay
(like replicas) and count in that node's disk use.
"""

from __future__ import annotations

import collections
import queue
import signal
import threading
import time
from dataclasses import dataclass, field

from .dag import Stage, Task


class TaskFailed(RuntimeError):
    def __init__(self, task: Task, node: int, result: dict):
        self.task, self.node, self.result = task, node, result
        err, out = (result.get("stderr") or "").strip(), (result.get("stdout") or "").strip()
        tail = err[-800:] if err else f"no stderr; stdout: {out[-800:]}" if out else "no output at all"
        rc = result.get("rc")
        how = f"rc={rc}"
        if isinstance(rc, int) and rc < 0:
            try:
                how += f", killed by {signal.Signals(-rc).name}"
            except ValueError:
                pass
        elif rc == 124:
            how += ", timed out"
        load = result.get("load") or {}
        where = f"node {node}" + (f", host {result['host']}" if result.get("host") else "") + (
            f"; load {load['loadavg_1m']} on {load['ncpu']} CPUs" if load.get("loadavg_1m") is not None else "")
        super().__init__(f"task {task.id} failed ({where}; {how}): {tail}")


@dataclass
class StageResult:
    name: str
    tasks: int
    wall_s: float
    per_node_tasks: dict = field(default_factory=dict)
    per_node_busy_s: dict = field(default_factory=dict)
    first_input_local: int = 0     # tasks whose first input was on their node when placed
    copies: int = 0                # local-disk: inputs copied by the driver
    copied_bytes: int = 0
    outputs: dict = field(default_factory=dict)   # task id -> (node, stdout tail), with keep_output
    max_dispatch_gap_s: float = 0.0  # worst (driver-seen time - the agent's own elapsed) of a task


class Scheduler:
    def __init__(self, cluster, design: str, placement: str, tasks_per_node: int,
                 task_timeout: float = 600.0, log=print, keep_output: bool = False):
        if placement not in ("uniform", "locality"):
            raise ValueError(f"unknown placement {placement!r}")
        self.c = cluster
        self.design = design
        self.placement = placement
        self.k = int(tasks_per_node)
        self.timeout = task_timeout
        self.log = log
        self.nodes = list(cluster.nodes)             # system nodes, .index 1..n
        self.by_index = {nd.index: nd for nd in self.nodes}
        self.sched_node = self.nodes[0]
        self.catalog: dict[str, set[int]] = {}       # local-disk: file -> nodes holding it
        self._cat_lock = threading.Lock()
        self._copy_locks: dict[tuple[int, str], threading.Lock] = collections.defaultdict(threading.Lock)
        self.local_disk = design == "local-disk"
        self.keep_output = keep_output

    # ----------------------------------------------------------- helpers
    def root(self, node, slot: int) -> str:
        mps = node.mountpoints
        return mps[slot % len(mps)]

    def render(self, task: Task, root: str) -> str:
        body = task.cmd.replace("{fs}", _shq(root)).replace("{tmp}", '"$T"')
        pre = ""
        if self.local_disk:
            dirs = {o.rsplit("/", 1)[0] for o in task.outputs if "/" in o}
            if task.cwd:
                dirs.add(task.cwd)
            if dirs:
                pre = "mkdir -p " + " ".join(_shq(f"{root}/{d}") for d in sorted(dirs)) + " && "
        cd = f"cd {_shq(root + '/' + task.cwd)} && " if task.cwd else ""
        return ('set -o pipefail; T=$(mktemp -d "${TMPDIR:-/tmp}/mtcwf.XXXXXX") || exit 99; '
                "trap 'rm -rf \"$T\"' EXIT; " + pre + cd + body)

    def run_on(self, node, slot: int, task: Task) -> dict:
        return node.run(self.render(task, self.root(node, slot)), timeout=self.timeout)

    def read_text(self, rel: str) -> str:
        """A (small) file of the workflow, read through the scheduler node."""
        nd = self.sched_node
        if self.local_disk:
            holders = self.catalog.get(rel)
            if holders and nd.index not in holders:
                nd = self.by_index[min(holders)]
        r = nd.run(f"cat {_shq(self.root(nd, 0) + '/' + rel)}", timeout=self.timeout)
        if r["rc"] != 0:
            raise RuntimeError(f"cannot read {rel} on node {nd.index}: {r['stderr'][-300:]}")
        return r["stdout"]

    def make_dirs(self, stage: Stage):
        if self.local_disk or not stage.dirs:
            return
        nd = self.sched_node
        cmd = "mkdir -p " + " ".join(_shq(f"{self.root(nd, 0)}/{d}") for d in stage.dirs)
        r = nd.run(cmd, timeout=self.timeout)
        if r["rc"] != 0:
            raise RuntimeError(f"mkdir for stage {stage.name} failed: {r['stderr'][-300:]}")

    # ----------------------------------------------------------- placement
    def assign(self, stage: Stage) -> tuple[dict[int, list[Task]] | None, list[Task], int]:
        """Locality: per-node task lists.  Uniform: None (shared queue).  Scheduler tasks apart."""
        sched = [t for t in stage.tasks if t.where == "scheduler"]
        rest = [t for t in stage.tasks if t.where != "scheduler"]
        if self.placement != "locality" or not rest:
            return None, sched, 0
        per: dict[int, list[Task]] = {nd.index: [] for nd in self.nodes}
        with_inputs = [t for t in rest if t.inputs]
        owners = self.c.locate(sorted({"/" + t.inputs[0] for t in with_inputs})) if with_inputs else {}
        local = 0
        rr = 0
        for t in rest:
            own = [o for o in owners.get("/" + t.inputs[0], []) if o in per] if t.inputs else []
            if own:
                target = min(own, key=lambda i: (len(per[i]), own.index(i)))
                local += 1
            elif t.inputs:  # unknown owner: least-loaded node
                target = min(per, key=lambda i: (len(per[i]), i))
            else:           # stage-in: scatter round-robin
                target = self.nodes[rr % len(self.nodes)].index
                rr += 1
            per[target].append(t)
        return per, sched, local

    # ----------------------------------------------------------- local disk
    def _ensure_inputs(self, node, task: Task) -> tuple[int, int]:
        copies = nbytes = 0
        for rel in task.inputs:
            with self._cat_lock:
                holders = set(self.catalog.get(rel, ()))
            if node.index in holders:
                continue
            if not holders:
                raise RuntimeError(f"{task.id}: input {rel} is on no node")
            with self._copy_locks[(node.index, rel)]:
                with self._cat_lock:
                    if node.index in self.catalog.get(rel, ()):
                        continue
                src = self.by_index[min(holders)]
                nbytes += self.c.copy(src, node, rel)
                copies += 1
                with self._cat_lock:
                    self.catalog.setdefault(rel, set()).add(node.index)
        return copies, nbytes

    def _record_outputs(self, node, task: Task):
        if self.local_disk:
            with self._cat_lock:
                for o in task.outputs:
                    self.catalog[o] = {node.index}

    # ----------------------------------------------------------- run a stage
    def run_stage(self, stage: Stage) -> StageResult:
        self.make_dirs(stage)
        per, sched, local = self.assign(stage)
        queues: dict[int, queue.SimpleQueue] = {}
        shared: queue.SimpleQueue = queue.SimpleQueue()
        for nd in self.nodes:
            queues[nd.index] = queue.SimpleQueue()
        if per is None:
            for t in stage.tasks:
                if t.where != "scheduler":
                    shared.put(t)
        else:
            for i, lst in per.items():
                for t in lst:
                    queues[i].put(t)
        for t in sched:
            queues[self.sched_node.index].put(t)
        res = StageResult(stage.name, len(stage.tasks), 0.0,
                          per_node_tasks={nd.index: 0 for nd in self.nodes},
                          per_node_busy_s={nd.index: 0.0 for nd in self.nodes},
                          first_input_local=local)
        lock = threading.Lock()
        failures: list[TaskFailed | BaseException] = []
        stop = threading.Event()

        def worker(node, slot):
            while not stop.is_set():
                try:
                    task = queues[node.index].get_nowait()
                except queue.Empty:
                    try:
                        task = shared.get_nowait()
                    except queue.Empty:
                        return
                t0 = time.monotonic()
                try:
                    c, b = self._ensure_inputs(node, task) if self.local_disk else (0, 0)
                    t_call = time.monotonic()
                    r = self.run_on(node, slot, task)
                    gap = (time.monotonic() - t_call) - float(r.get("elapsed", r["t_end"] - r["t_start"]))
                    if r["rc"] != 0:
                        raise TaskFailed(task, node.index, r)
                    self._record_outputs(node, task)
                except BaseException as exc:  # noqa: BLE001 - every failure stops the stage
                    with lock:
                        failures.append(exc)
                    stop.set()
                    return
                with lock:
                    res.per_node_tasks[node.index] += 1
                    res.per_node_busy_s[node.index] += time.monotonic() - t0
                    res.copies += c
                    res.copied_bytes += b
                    res.max_dispatch_gap_s = max(res.max_dispatch_gap_s, gap)
                    if self.keep_output:
                        res.outputs[task.id] = (node.index, r["stdout"][-2000:])

        threads = [threading.Thread(target=worker, args=(nd, j), daemon=True)
                   for nd in self.nodes for j in range(self.k)]
        t0 = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        res.wall_s = time.monotonic() - t0
        if failures:
            raise failures[0]
        done = sum(res.per_node_tasks.values())
        if done != len(stage.tasks):
            raise RuntimeError(f"stage {stage.name}: {done} of {len(stage.tasks)} tasks ran")
        return res


def _shq(s: str) -> str:
    import shlex

    return shlex.quote(s)
