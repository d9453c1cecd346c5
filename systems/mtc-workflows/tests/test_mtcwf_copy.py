"""Local disk on separate hosts: a file copied between nodes goes through the shared directory
(cluster_api.Adapter.copy). The scheduler copies one file to several nodes at once (its lock is per
destination); each copy must have its own file there, or the first one's unlink pulls it from under
the others (the multi-host rehearsal: "cp: cannot stat .xfer-*/n3-blast__queries__q_0000.fa")."""

from __future__ import annotations

import subprocess
import threading
from types import SimpleNamespace

from mtcwf.cluster_api import Adapter


class Node:
    """A node whose directory the driver cannot see (it does not exist until the node writes it);
    run() executes on this host, optionally after waiting for an event."""

    def __init__(self, index, root, wait=None):
        self.index, self.mountpoints, self.wait = index, [str(root)], wait
        self.ran = threading.Event()

    def run(self, cmd, timeout=60):
        if self.wait is not None:
            assert self.wait.wait(30)
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
        self.ran.set()
        return {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}


def test_concurrent_copies_of_one_file_to_two_nodes_do_not_collide(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    src = Node(1, tmp_path / "n1")
    (tmp_path / "n1" / "q").mkdir(parents=True)
    (tmp_path / "n1" / "q" / "a.fa").write_text(">a\nACGT\n")
    a_done = threading.Event()
    dst_a, dst_b = Node(2, tmp_path / "n2"), Node(3, tmp_path / "n3", wait=a_done)
    ad = SimpleNamespace(shared_tmp=str(shared))
    out = {}

    def copy_b():
        try:
            out["b"] = Adapter.copy(ad, src, dst_b, "q/a.fa")
        except RuntimeError as exc:
            out["b"] = exc

    t = threading.Thread(target=copy_b)
    t.start()
    assert src.ran.wait(30)                       # B's file is in the shared directory; B waits to copy it in
    out["a"] = Adapter.copy(ad, src, dst_a, "q/a.fa")  # A copies the same file to node 2 and unlinks its file
    a_done.set()
    t.join(30)
    assert out["a"] == 8 and out["b"] == 8, out   # with one shared name: B fails, "cp: cannot stat"
    assert (tmp_path / "n3" / "q" / "a.fa").read_text() == ">a\nACGT\n"
    assert list(shared.iterdir()) == []           # every copy's file removed after use
