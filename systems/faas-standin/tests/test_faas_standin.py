"""The stand-in runtimes (systems/faas-standin) running the paper's functions on real inputs at 1
and 2 instances, their labels, the mechanisms that tell them apart, nuclio-go's body limit, and
that nothing is left running."""

import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
from tools.fdirector import director as fd  # noqa: E402
from tools.fdirector import standin  # noqa: E402

BIN = standin.STANDIN_BIN
KIND_LABEL = {"openfaas": "stand-in:openfaas-watchdog", "nuclio-cpp": "stand-in:nuclio-cpp-shell",
              "nuclio-go": "stand-in:nuclio-go-inprocess"}
REVERSERS = [("openfaas", "reverse"), ("nuclio-cpp", "reverse"), ("nuclio-go", "reverse-go")]


@pytest.fixture(scope="module", autouse=True)
def built():
    standin.ensure_built()


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return standin.make_test_images(tmp_path_factory.mktemp("img"), 6, small_every=3)


def post(url: str, body: bytes) -> tuple[int, dict, bytes]:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("POST", u.path, body=body)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def status(p: standin.LocalPlatform) -> dict:
    with urllib.request.urlopen(p.status_url, timeout=10) as r:
        return json.load(r)


def assert_all_gone(pids: list[int], state_dir: Path) -> None:
    assert pids
    assert not [pid for pid in pids if standin.pid_alive(pid)], "stand-in processes left running"
    assert not list(state_dir.glob("*.pid")), "PID files left behind"


@pytest.mark.parametrize("instances", [1, 2])
@pytest.mark.parametrize("kind,function", REVERSERS)
def test_byte_reversal_through_each_runtime(kind, function, instances):
    with standin.LocalPlatform(kind, function, instances) as p:
        pids = p.instance_pids() + [p.proc.pid]
        for size in (0, 1, 1000, 300_001, 2 * 2**20):
            raw = fd.run(fd.RunSpec(p.url, instances, 4), fd.bytes_workload(size, 8), fd.url_scaler(p.scale_url))
            # the director checked every answer against the reversed request; here the records say so
            assert [r["status"] for r in raw["requests"]] == [200] * 8
            # a healthy platform needs no retry (seen before the full-duplex fix: the front's server
            # drained the request body under the transport when an instance answered at once)
            assert raw["totals"]["retries"] == 0, [r["errors"] for r in raw["requests"] if r["errors"]]
            assert {r["bytes_received"] for r in raw["requests"]} == {size}
            assert raw["system_kind"] == KIND_LABEL[kind]
            assert raw["totals"]["instances_seen"] == instances
        state = p.state_dir
        code, headers, body = post(p.url, b"abc\x00\xff")
        assert (code, body) == (200, b"\xff\x00cba")
        assert headers["X-Repro-System-Kind"] == KIND_LABEL[kind]
        assert headers["X-Repro-Gateway"] in ("stand-in:openfaas-gateway", "stand-in:nuclio-queue")
    assert_all_gone(pids, state)


@pytest.mark.parametrize("instances", [1, 2])
@pytest.mark.parametrize("kind", ["openfaas", "nuclio-cpp"])
def test_image_processing_through_each_runtime(kind, instances, images):
    with standin.LocalPlatform(kind, "imageproc", instances) as p:
        raw = fd.run(fd.RunSpec(p.url, instances, 2), fd.image_workload(images), fd.url_scaler(p.scale_url))
        assert raw["totals"]["requests"] == len(images) and raw["totals"]["retries"] == 0
        assert raw["totals"]["instances_seen"] == instances
        code, _, out = post(p.url, images[0].read_bytes())
        w, h = fd.png_size(images[0].read_bytes())
        assert code == 200 and fd.png_size(out) == (w, h + 50) and out != images[0].read_bytes()


def test_null_processing_through_openfaas(images):
    with standin.LocalPlatform("openfaas", "imageproc-np", 2) as p:
        raw = fd.run(fd.RunSpec(p.url, 2, 2), fd.image_workload(images[:4]))
        assert all(r["end"] - r["last_attempt_start"] >= 1.0 for r in raw["requests"]), "NP sleeps 1 s per image"
        assert raw["system_kind"] == "stand-in:openfaas-watchdog"


def _queued_while_busy(kind: str, images) -> int:
    """Sends 3 null-processing requests at once to 1 instance with 1 worker and reports the
    largest number of requests the front held back meanwhile."""
    with standin.LocalPlatform(kind, "imageproc-np", 1, workers=1) as p:
        body = images[0].read_bytes()
        threads = [threading.Thread(target=post, args=(p.url, body)) for _ in range(3)]
        for t in threads:
            t.start()
        seen = 0
        while any(t.is_alive() for t in threads):
            seen = max(seen, status(p)["queued"])
            time.sleep(0.05)
        for t in threads:
            t.join()
        return seen


def test_nuclio_queues_openfaas_does_not(images):
    # Nuclio's internal queue holds requests until a worker is free (paper Sec. 3.1) ...
    assert _queued_while_busy("nuclio-cpp", images) >= 1
    # ... the OpenFaaS gateway forwards every synchronous request at once
    assert _queued_while_busy("openfaas", images) == 0


def test_nuclio_go_body_limit_gives_a_clear_status():
    limit = 2 * 2**20
    with standin.LocalPlatform("nuclio-go", "reverse-go", 1) as p:
        ok = fd.byte_payload(limit)
        code, _, body = post(p.url, ok)
        assert code == 200 and body == ok[::-1], "2 MiB worked in the paper"
        code, headers, body = post(p.url, fd.byte_payload(limit + 1))
        assert code == 413
        assert b"exceeds the body-size limit of 2097152 bytes" in body
        assert headers["X-Repro-System-Kind"] == "stand-in:nuclio-go-inprocess"
        with pytest.raises(fd.PermanentHTTPError) as err:
            fd.run(fd.RunSpec(p.url, 1, 4), fd.bytes_workload(limit + 4096, 3))
        assert err.value.status == 413
    with standin.LocalPlatform("nuclio-go", "reverse-go", 1, max_body=1000) as p:
        assert post(p.url, b"x" * 1000)[0] == 200
        assert post(p.url, b"x" * 1001)[0] == 413


def test_scale_up_and_down_and_bad_requests():
    with standin.LocalPlatform("nuclio-cpp", "reverse", 1) as p:
        first = p.instance_pids()
        fd.url_scaler(p.scale_url)(3)
        st = status(p)
        assert st["replicas"] == 3 and len({i["pid"] for i in st["instances"]}) == 3
        assert st["workers_per_instance"] == 1 and st["system_kind"] == "stand-in:nuclio-cpp-shell"
        fd.url_scaler(p.scale_url)(1)
        assert [i["pid"] for i in status(p)["instances"]] == first
        dropped = [i for i in st["instances"] if i["pid"] not in first]
        assert not [i for i in dropped if standin.pid_alive(i["pid"])], "scaled-down instances still running"
        code, _, body = post(p.scale_url, b'{"replicas": "two"}')
        assert code == 400 and b"replicas" in body
        with pytest.raises(fd.DirectorError, match="replicas 0"):
            fd.url_scaler(p.scale_url)(0)


@pytest.mark.parametrize("argv,message", [
    (["up", "--kind", "knative", "--state-dir", "/tmp/x"], "--kind \"knative\""),
    (["up", "--kind", "openfaas", "--state-dir", "/tmp/x", "--fprocess", "/nonexistent"], "not an executable"),
    (["up", "--kind", "openfaas", "--fprocess", "/bin/cat"], "--state-dir is required"),
    (["up", "--kind", "nuclio-go", "--fprocess", "/bin/cat", "--state-dir", "/tmp/x"], "no --fprocess"),
    (["instance", "--kind", "nuclio-cpp"], "needs --fprocess"),
    (["frobnicate"], "unknown command"),
])
def test_bad_arguments_are_named(argv, message):
    done = subprocess.run([str(BIN), *argv], capture_output=True, text=True, timeout=20)
    assert done.returncode != 0
    assert message in done.stderr


def test_down_stops_everything_even_after_sigkill_of_the_supervisor(tmp_path):
    p = standin.LocalPlatform("openfaas", "reverse", 2, state_dir=tmp_path / "st").start()
    pids = p.instance_pids()
    p.proc.kill()  # the supervisor dies without cleaning up: its instances die with it (parent-death signal)
    p.proc.wait()
    deadline = time.monotonic() + 10
    while any(standin.pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if standin.pid_alive(pid)], "instances outlived their killed supervisor"
    subprocess.run([str(BIN), "down", "--state-dir", str(tmp_path / "st")], check=True, timeout=30)
    p.proc = None
    assert_all_gone(pids, tmp_path / "st")


def test_instances_spread_over_the_instance_hosts_and_report_where_they_run(tmp_path):
    """--instance-hosts: each new instance goes to the host with the fewest, through that host's
    launch prefix (here `env SLURMD_NODENAME=...`, standing for an srun step on a node), bound to its
    listen address; status gives each instance's measured node, and a scaled-down then up platform
    fills the emptied host first."""
    hosts = [{"node": f"fake{i}", "listen": "127.0.0.1", "launch": ["env", f"SLURMD_NODENAME=fake{i}"]}
             for i in range(2)]
    with standin.LocalPlatform("nuclio-go", "reverse-go", 1, state_dir=tmp_path / "st", instance_hosts=hosts) as p:
        fd.url_scaler(p.scale_url)(3)
        st = p.status()
        assert [i["node"] for i in st["instances"]] == ["fake0", "fake1", "fake0"]
        assert all(i["hostname"] and i["url"].startswith("http://127.0.0.1:") for i in st["instances"])
        assert st["node"] and st["hostname"]  # the front's own measured place
        assert post(p.url, b"abc")[2] == b"cba"
        fd.url_scaler(p.scale_url)(1)
        fd.url_scaler(p.scale_url)(2)
        assert [i["node"] for i in p.status()["instances"]] == ["fake0", "fake1"]
    without = [{"node": "x", "listen": "", "launch": []}]
    with pytest.raises(standin.StandInError):
        standin.LocalPlatform("nuclio-go", "reverse-go", 1, state_dir=tmp_path / "bad", instance_hosts=without).start()
    assert "no listen address" in (tmp_path / "bad" / "standin.log").read_text()


def test_a_front_that_cannot_listen_is_never_ready(tmp_path):
    """The front cannot bind (an address this host does not have): the supervisor fails at once, naming
    the listen error, and never writes its ready file -- before, it wrote "ready" after waiting 2 s for
    an endpoint file that never came, so a caller polling for ready read a missing endpoint
    (FileNotFoundError instead of the start's failure, seen at load)."""
    state = tmp_path / "st"
    argv = [str(BIN), "up", "--kind", "nuclio-go", "--state-dir", str(state), "--listen", "203.0.113.7:0"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    saw_ready = False
    while proc.poll() is None:
        saw_ready = saw_ready or (state / "ready").exists()
        time.sleep(0.002)
    out = proc.stdout.read()
    assert proc.returncode != 0 and "cannot assign requested address" in out, out
    assert not saw_ready and not (state / "ready").exists(), out
