"""Storage from its images (issue 27): the driver stays on the host, where Slurm's client is, and every
command of the stack runs in the stack's image -- on the driver node in one instance (the daemons here,
the FUSE mount and mdtest's tasks share its mount namespace), on the system nodes in `apptainer exec`
behind each srun step.

The routing is checked with real processes behind recording wrappers (the instance prefix, the remote
prefix and the launcher are scripts that log their argv and exec it), and with a real Apptainer instance
where one of the project's images is built: a mount made in the instance is seen by `mounted` through it
and not by the host, and `unmount` removes it there."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from systems.storage_common import daemons as dm
from systems.storage_common.daemons import Stack

from .storage_testlib import REPO, section


def _wrapper(path: Path, tag: str, log: Path, shift_host: bool = False) -> Path:
    """A prefix that logs `TAG argv...` to `log` and runs argv (the launcher also eats its {host})."""
    body = '#!/bin/sh\nprintf "%s' + tag + ' %s\\n" "" "$*" >> ' + str(log) + "\n"
    body += ('shift\n' if shift_host else "") + 'exec "$@"\n'
    path.write_text(body)
    path.chmod(0o755)
    return path


class TwoHostStack(Stack):
    """A stack with a daemon here and one on another host (behind --launcher), a set-up command each way."""

    name = "twohost"

    def start(self) -> None:
        self.run(["true"], "a set-up command here")
        self.run(self.on_host("nodeB", ["true"]), "a set-up command on nodeB")
        self.launch_on("localhost", "here", ["sleep", "300"], serves="here")
        self.launch_on("nodeB", "there", ["sleep", "300"], serves="there")


def _args(tmp_path, launcher):
    import argparse

    return argparse.Namespace(hosts="localhost,nodeB", addresses="", launcher=launcher)


def test_a_stacks_commands_run_in_the_image_here_and_behind_the_launcher_there(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    here = _wrapper(tmp_path / "in-instance", "HERE", log)
    remote = _wrapper(tmp_path / "in-image", "REMOTE", log)
    launch = _wrapper(tmp_path / "launch", "LAUNCH", log, shift_host=True)
    monkeypatch.setenv(dm.EXEC_ENV, str(here))
    monkeypatch.setenv(dm.EXEC_REMOTE_ENV, str(remote))
    st = TwoHostStack(tmp_path / "state", _args(tmp_path, f"{launch} {{host}}"))
    try:
        st.up()
        lines = log.read_text().splitlines()
        # the set-up command here: in the instance only
        assert "HERE true" in lines
        # on nodeB: launcher, then the image there, never the instance of this node
        i = lines.index("LAUNCH nodeB " + str(remote) + " true")
        assert lines[i + 1] == "REMOTE true"
        # the daemons' where.py wrapper runs with the image's python3, not this process's interpreter
        here_daemon = [x for x in lines if x.startswith("HERE python3 ") and x.endswith("sleep 300")]
        there = [x for x in lines if x.startswith("LAUNCH nodeB ") and "sleep 300" in x]
        assert len(here_daemon) == 1 and "--serves here" in here_daemon[0]
        assert len(there) == 1 and there[0].split()[2] == str(remote) and "python3" in there[0]
        assert sys.executable not in log.read_text()
        assert not any(x.startswith("HERE ") and "nodeB" in x for x in lines)
        # what the daemons recorded of where they ran: both wrapped by where.py, both measured
        assert set(st.placement()) == {"here", "there"}
        assert all(st.daemon(n).alive() for n in ("here", "there"))
        pids = [st.daemon(n).read_pid() for n in ("here", "there")]
    finally:
        st.down(quiet=True)
    assert not any(dm.pid_alive(*p) for p in pids)  # down stopped both, through their wrappers


def test_which_version_and_the_mount_table_are_read_in_the_image(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    # an "image" whose PATH lacks what the host has: which() must not answer from the host
    img = tmp_path / "in-instance"
    img.write_text('#!/bin/sh\nprintf "HERE %s\\n" "$*" >> ' + str(log) + '\ncmd=$1; shift\n'
                   'PATH=/nonexistent exec /bin/$cmd "$@"\n')
    img.chmod(0o755)
    monkeypatch.setenv(dm.EXEC_ENV, str(img))
    assert shutil.which("sleep")  # on the host
    with pytest.raises(dm.StackError, match="not found in the stack's image"):
        dm.which("sleep", "hint")
    assert "HERE sh -c" in log.read_text()
    # an image where the tool is: its path there
    img.write_text('#!/bin/sh\nexec "$@"\n')
    assert dm.which("sleep", "hint") == shutil.which("sleep")
    # the mount table is the image's: a fake mountinfo with one mount point
    fake = tmp_path / "mountinfo"
    target = tmp_path / "mnt"
    target.mkdir()
    fake.write_text(f"36 35 98:0 / {target} rw,noatime master:1 - fuse.ceph-fuse ceph-fuse rw\n")
    img.write_text(f'#!/bin/sh\nif [ "$1 $2" = "cat /proc/self/mountinfo" ]; then exec cat {fake}; fi\nexec "$@"\n')
    assert dm.mounted(target) is True
    monkeypatch.delenv(dm.EXEC_ENV)
    assert dm.mounted(target) is False  # the host's own table has no such mount


def test_mdtest_from_a_stack_image_without_mpi_says_what_to_use(tmp_path, monkeypatch):
    from studies.storage import run

    img = tmp_path / "in-instance"
    img.write_text('#!/bin/sh\ncmd=$1; shift\nPATH=/nonexistent exec /bin/$cmd "$@"\n')
    img.chmod(0o755)
    monkeypatch.setenv(dm.EXEC_ENV, str(img))
    with pytest.raises(SystemExit) as e:
        run.mdtest_tool(section(mdtest={"tool": "auto"}))
    msg = str(e.value)
    assert "has no mdtest or mdbench" in msg and "storage.mdtest.container" in msg and "no MPI" in msg
    # with mdbench in the image: that one, by the image's path
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mdbench").write_text("#!/bin/sh\n")
    (bindir / "mdbench").chmod(0o755)
    img.write_text(f'#!/bin/sh\ncmd=$1; shift\nPATH={bindir} exec /bin/$cmd "$@"\n')
    assert run.mdtest_tool(section(mdtest={"tool": "auto"})) == (str(bindir / "mdbench"), "mdbench")


def _an_image() -> str | None:
    cands = sorted(glob.glob(str(REPO / "containers" / "sif" / "*.sif")))
    cache = Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "repro")) / "sif"
    cands += sorted(glob.glob(str(cache / "ceph-*.sif")) + glob.glob(str(cache / "minio-*.sif")))
    return cands[0] if cands else None


@pytest.mark.skipif(not shutil.which("apptainer"), reason="apptainer is not installed (./repro setup)")
def test_a_mount_made_in_the_instance_is_seen_through_it_and_not_on_the_host(tmp_path):
    from studies.storage import run

    image = _an_image()
    if not image:
        pytest.skip("no image of the project is built (containers/sif/*.sif or the cache's ceph-*/minio-*.sif)")
    cfg = {"paths": {"work_dir": str(tmp_path / "work"), "shared_dir": str(tmp_path / "shared"), "lustre_dir": ""}}
    side = run.ImageSide(image, cfg, f"test-{os.getpid()}-{time.monotonic_ns()}")
    mnt = tmp_path / "work" / "mnt"
    side.start()
    try:
        mnt.mkdir(parents=True)
        assert os.environ[dm.EXEC_ENV].startswith(f"apptainer exec instance://{side.name} ")
        dm.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], "a mount in the instance")
        assert dm.mounted(mnt) is True
        with open("/proc/self/mountinfo") as f:
            assert str(mnt) not in f.read()  # the host does not see it
        # a file written through the instance lands in the mount, not in the host's directory
        dm.run(["sh", "-c", f"echo through-the-instance > {mnt}/f"], "write in the mount")
        assert not (mnt / "f").exists()
        assert dm.run(["cat", f"{mnt}/f"], "read back").stdout == "through-the-instance\n"
        dm.unmount(mnt)
        assert dm.mounted(mnt) is False
    finally:
        side.stop()
    assert dm.EXEC_ENV not in os.environ
    listed = subprocess.run(["apptainer", "instance", "list"], capture_output=True, text=True).stdout
    assert side.name not in listed


@pytest.mark.skipif(not shutil.which("apptainer"), reason="apptainer is not installed (./repro setup)")
def test_a_command_on_a_node_where_the_work_directory_does_not_exist_yet_runs(tmp_path):
    """The work directory is node-local: on a system node no earlier job used, it does not exist, and
    apptainer refuses a bind of a missing source (exit 255) -- the full rehearsal of 2026-11-29, on
    freshly started nodes, lost every storage job so. exec_plain makes the bind sources first."""
    from studies.storage import run

    image = _an_image()
    if not image:
        pytest.skip("no image of the project is built (containers/sif/*.sif or the cache's ceph-*/minio-*.sif)")
    work = tmp_path / "node-local" / "work"
    cfg = {"paths": {"work_dir": str(work), "shared_dir": str(tmp_path / "shared"), "lustre_dir": ""}}
    side = run.ImageSide(image, cfg, f"test-{os.getpid()}-{time.monotonic_ns()}")
    shutil.rmtree(tmp_path / "node-local")  # what the other node has: no work directory
    r = subprocess.run([*side.exec_plain, "sh", "-c", f"echo in-the-image > {work}/f"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (work / "f").read_text() == "in-the-image\n"
    # the prefix goes through the environment to stack.py (shlex): it comes back as the same argv
    import shlex

    assert shlex.split(shlex.join(side.exec_plain)) == side.exec_plain
    # without the mkdir, apptainer refuses the container: what the rehearsal saw
    shutil.rmtree(tmp_path / "node-local")
    bare = side.exec_plain[side.exec_plain.index("apptainer"):]
    r = subprocess.run([*bare, "true"], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "doesn't exist" in r.stderr
