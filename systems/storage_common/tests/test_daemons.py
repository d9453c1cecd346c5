"""The shared daemon plumbing, with real processes: PID files, process groups, locks, a failed up."""

import fcntl
import json
import os
import subprocess
import sys
import time

import pytest

from systems.storage_common.daemons import (
    Daemon,
    Stack,
    StackError,
    locks_under,
    main,
    pid_alive,
    died_because,
    port_free,
    require_free_disk,
    require_port_free,
    wait_port,
    unmount,
)
from systems.storage_common.testing import REPO, assert_nothing_left, occupy_port, processes_mentioning


def test_stop_ends_the_whole_process_group(tmp_path):
    d = Daemon(tmp_path, "forker")
    # the daemon forks a child that would outlive a plain kill of the parent
    (tmp_path / "anchor").touch()
    pid = d.start(["sh", "-c", 'tail -f "$0/anchor" & exec tail -f "$0/anchor"', str(tmp_path)])
    time.sleep(0.3)
    assert d.alive() and len(processes_mentioning(str(tmp_path))) == 2
    assert d.pidfile.read_text().split()[0] == str(pid)
    assert d.stop(timeout=5) is True
    assert not processes_mentioning(str(tmp_path)) and not d.pidfile.exists()
    assert d.stop() is False


def test_a_reused_pid_is_not_the_daemon(tmp_path):
    d = Daemon(tmp_path, "x")
    d.start(["sleep", "300"])
    pid, started = d.read_pid()
    assert pid_alive(pid, started) and not pid_alive(pid, str(int(started) + 1))
    d.stop()


def test_a_zombie_counts_as_dead():
    p = subprocess.Popen(["true"])
    time.sleep(0.3)  # exited, not yet reaped: a zombie
    assert not pid_alive(p.pid)
    p.wait()


def test_locks_under_sees_flock_and_posix_locks(tmp_path):
    f = tmp_path / "sub" / "LOCK"
    f.parent.mkdir()
    f.touch()
    with open(f, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert any("LOCK" in x and "FLOCK" in x for x in locks_under(tmp_path))
        fcntl.flock(fh, fcntl.LOCK_UN)
        fcntl.lockf(fh, fcntl.LOCK_EX)
        assert any("POSIX" in x for x in locks_under(tmp_path))
    assert locks_under(tmp_path) == []


def test_ports_and_unmount_of_nothing(tmp_path):
    sock, port = occupy_port()
    try:
        assert not port_free(port)
        with pytest.raises(StackError, match=f"db: port 127.0.0.1:{port} is already in use"):
            require_port_free("db", port)
    finally:
        sock.close()
    unmount(tmp_path)  # not a mount point: nothing to do, no error


class Toy(Stack):
    """Two sleeping daemons; the second start fails when asked to."""

    name = "toy"

    @classmethod
    def add_arguments(cls, p):
        p.add_argument("--fail", action="store_true")

    def sleeper(self, name):
        (self.state / "anchor").touch()
        self.launch(name, ["tail", "-f", str(self.state / "anchor")])  # sleeps, naming the state dir

    def start(self):
        self.sleeper("one")
        if self.args.fail:
            self.launch("two", ["sh", "-c", "echo two cannot start; exit 3"])
            time.sleep(0.3)
            raise StackError("two died while starting")
        self.sleeper("two")


def run_toy(capsys, *argv):
    rc = main(Toy, list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_failed_up_prints_the_log_and_cleans_up(tmp_path, capsys):
    rc, _, err = run_toy(capsys, "up", "--state", str(tmp_path), "--fail")
    assert rc == 1
    assert "toy: up FAILED: two died while starting" in err
    assert "last lines of" in err and "two cannot start" in err
    assert_nothing_left(tmp_path, {})
    assert not (tmp_path / "stack.json").exists()


def test_status_names_the_dead_daemon_and_up_refuses_a_used_state(tmp_path, capsys):
    rc, out, _ = run_toy(capsys, "up", "--state", str(tmp_path))
    assert rc == 0 and json.loads(out)["daemons"] == ["one", "two"]
    rc, _, err = run_toy(capsys, "up", "--state", str(tmp_path))
    assert rc == 1 and "is in use" in err
    rc, out, _ = run_toy(capsys, "status", "--state", str(tmp_path))
    assert rc == 0 and json.loads(out)["healthy"] is True
    pid = Daemon(tmp_path, "two").pid()
    os.kill(pid, 9)
    time.sleep(0.2)
    rc, out, err = run_toy(capsys, "status", "--state", str(tmp_path))
    assert rc == 1 and "toy: DEAD: two" in err and "two.log" in err
    assert json.loads(out)["live"]["two"]["alive"] is False
    rc, _, err = run_toy(capsys, "down", "--state", str(tmp_path))
    assert rc == 0
    assert_nothing_left(tmp_path, {"one": 0, "two": pid})


def test_sigterm_during_up_cleans_up(tmp_path):
    """`up` interrupted by SIGTERM (a cancelled job) stops what it had started."""
    code = (f"import sys, time; sys.path.insert(0, {str(REPO)!r})\n"
            "from systems.storage_common.tests.test_daemons import Toy\n"
            "from systems.storage_common.daemons import main\n"
            "Toy.start = lambda self: (self.sleeper('one'), time.sleep(60))\n"
            f"sys.exit(main(Toy, ['up', '--state', {str(tmp_path)!r}]))\n")
    p = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (tmp_path / "run" / "one.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    p.terminate()
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + 15, err
    assert "cleaning up" in err
    assert_nothing_left(tmp_path, {})


def test_stop_of_a_dead_daemon_spares_the_group_of_a_process_that_reused_its_pid(tmp_path):
    """pid_max is 32768 here: a PID comes round within minutes on a busy machine. A daemon that had
    exited, whose PID file names a PID now leading another process's group, is stopped without
    touching that group (the busy local run's ceph-mon was killed this way, silently)."""
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)  # a group leader, not ours
    try:
        time.sleep(0.2)
        d = Daemon(tmp_path, "gone")
        d.pidfile.parent.mkdir(parents=True)
        from systems.storage_common.daemons import start_time

        real = int(start_time(other.pid))
        d.pidfile.write_text(f"{other.pid}\n{real - 1000}\n")  # our daemon's (earlier) start time
        assert d.stop(timeout=1) is False  # not ours: not running as far as the daemon goes
        time.sleep(0.2)
        assert other.poll() is None, "the other process's group was killed"
        assert not d.pidfile.exists()
    finally:
        other.kill()
        other.wait()


CEPH_MON_LOG = """\
=== 2026-11-28T23:59:00+00:00 start: ceph-mon -c old.conf -f -i a
2026-11-28T23:59:01.000+0000 7f -1 error: an older start's failure, not this one's
=== 2026-11-29T00:00:41.260185+00:00 start: where.py run mon.a.where.json -- ceph-mon -c ceph.conf -f -i a
2026-11-29T00:00:41.333+0000 7f7749e8e640  0 ceph version 16.2.15 (618f4408) pacific (stable), process ceph-mon, pid 517
2026-11-29T00:00:41.333+0000 7f7749e8e640 -1 error: monitor data filesystem reached concerning levels of available \
storage space (available: 5% 15 GiB)
you may adjust 'mon data avail crit' to a lower value to make this go away (default: 5%)
"""


def test_a_daemon_that_died_says_why_in_the_error(tmp_path):
    """Copied from the busy local run's mon.a.log (2026-11-29), where the failure read only 'mon.a died
    while waiting for ...': the reason is the first error line since the daemon's last start."""
    log = tmp_path / "mon.a.log"
    log.write_text(CEPH_MON_LOG)
    assert died_because(log).startswith("2026-11-29T00:00:41.333+0000 7f7749e8e640 -1 error: monitor data filesystem")
    log.write_text("=== x start: y\nlistening\nbye\n")
    assert died_because(log) == "bye"  # no error-like line: the last one
    assert died_because(tmp_path / "none.log") == ""
    # a real daemon that writes its reason and exits: wait_port's error carries the line
    d = Daemon(tmp_path, "db")
    d.start(["sh", "-c", "echo starting; echo 'db: fatal: cannot open /nonexistent/db.dat' >&2; exit 1"])
    with pytest.raises(StackError) as e:
        wait_port(d, port=1, timeout=10)
    assert str(e.value).startswith("db died while waiting for 127.0.0.1:1 to accept connections: ")
    assert str(e.value).endswith("db: fatal: cannot open /nonexistent/db.dat")


def test_free_disk_floor_names_the_path_and_both_sizes(tmp_path):
    require_free_disk(tmp_path, 0.001)
    with pytest.raises(StackError, match=rf"not enough free disk for {tmp_path}: [0-9.]+ GiB free, 1e\+06 GiB needed"):
        require_free_disk(tmp_path, 1e6)
    with pytest.raises(StackError, match=rf"for {tmp_path} on n3: 1.0 GiB free, 2 GiB needed"):
        require_free_disk(tmp_path, 2, free=2**30, host="n3")
