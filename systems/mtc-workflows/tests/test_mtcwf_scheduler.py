"""Placement: the locality scheduler runs a task where its first input lives (by the file
system's own owner information); the uniform one spreads tasks over the nodes."""

from __future__ import annotations

import os

from mtcwf import standin
from mtcwf.dag import Stage, Task
from mtcwf.scheduler import Scheduler


def _write(node, rel, data=b"x" * 300_000):
    path = os.path.join(node.mountpoints[0], rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def test_locality_places_each_task_on_its_first_inputs_owner(tmp_path):
    with standin.cluster(3, "locality", mounts_per_node=1, workdir=tmp_path / "c", memcached_mb=64) as c:
        n1, n2, n3 = c.nodes
        # files written through a node's mount live on that node only (local writes)
        for i, nd in enumerate((n1, n2, n3, n2, n3, n3)):
            _write(nd, f"in/f{i}")
        owners = c.locate([f"/in/f{i}" for i in range(6)])
        assert [owners[f"/in/f{i}"] for i in range(6)] == [[1], [2], [3], [2], [3], [3]]
        # xattr user.memfs.owners agrees (0-based server indexes)
        assert os.getxattr(os.path.join(n1.mountpoints[0], "in/f1"), "user.memfs.owners") == b"1"
        # each task reads its first input and a second one owned by node 1, and records where it ran
        tasks = [Task(f"t{i}", "s", f"cat {{fs}}/in/f{i} {{fs}}/in/f0 > /dev/null && echo $MTCWF_NODE",
                      inputs=[f"in/f{i}", "in/f0"]) for i in range(1, 6)]
        sched = Scheduler(_Tagged(c), "locality", "locality", tasks_per_node=2, keep_output=True)
        per, _, local = sched.assign(Stage("s", tasks))
        assert {t.id: n for n, ts in per.items() for t in ts} == {"t1": 2, "t2": 3, "t3": 2, "t4": 3, "t5": 3}
        assert local == 5
        res = sched.run_stage(Stage("s", tasks))
        assert res.per_node_tasks == {1: 0, 2: 2, 3: 3}
        # and the commands really ran on those nodes' agents
        assert {t: int(out.strip()) for t, (_, out) in res.outputs.items()} == \
            {"t1": 2, "t2": 3, "t3": 2, "t4": 3, "t5": 3}
        # the remote read of f0 replicated it onto the readers (replicate-on-read)
        assert sorted(c.locate(["/in/f0"])["/in/f0"]) == [1, 2, 3]


def test_uniform_spreads_tasks_over_all_nodes(tmp_path):
    with standin.cluster(3, "memfs", mounts_per_node=2, workdir=tmp_path / "c", memcached_mb=64) as c:
        tasks = [Task(f"t{i}", "s", "sleep 0.3") for i in range(12)]
        sched = Scheduler(c, "memfs", "uniform", tasks_per_node=2)
        res = sched.run_stage(Stage("s", tasks))
        assert sum(res.per_node_tasks.values()) == 12
        assert all(v >= 1 for v in res.per_node_tasks.values()), res.per_node_tasks
        # 12 tasks of 0.3 s on 6 slots: about two rounds, not twelve
        assert res.wall_s < 12 * 0.3, res.wall_s


def test_scheduler_tasks_run_on_node_1(tmp_path):
    with standin.cluster(2, "memfs", mounts_per_node=1, workdir=tmp_path / "c", memcached_mb=64) as c:
        tasks = [Task(f"a{i}", "agg", "true", where="scheduler") for i in range(3)]
        res = Scheduler(c, "memfs", "uniform", tasks_per_node=1).run_stage(Stage("agg", tasks, parallel=False))
        assert res.per_node_tasks == {1: 3, 2: 0}


class _Tagged:
    """The cluster, with each node's commands told which node they run on."""

    def __init__(self, c):
        self._c = c
        self.nodes = [_TagNode(n) for n in c.nodes]

    def locate(self, paths):
        return self._c.locate(paths)


class _TagNode:
    def __init__(self, nd):
        self._nd, self.index, self.mountpoints = nd, nd.index, nd.mountpoints

    def run(self, cmd, cwd=None, env=None, timeout=None):
        return self._nd.run(cmd, cwd=cwd, env={**(env or {}), "MTCWF_NODE": str(self.index)}, timeout=timeout)
