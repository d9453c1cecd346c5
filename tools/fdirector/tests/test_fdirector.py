"""The function director: raw files that recompute their totals, retries when an instance dies
mid-run, permanent errors, wrong answers, the CLI, its ceiling against the echo server, iperf3."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))
from tools.fdirector import director as fd  # noqa: E402
from tools.fdirector import standin  # noqa: E402
from tools.fdirector.iperf import IperfError, run_iperf3  # noqa: E402
from tools.iperf3.parser import parse_iperf3_report  # noqa: E402



@pytest.fixture(scope="module", autouse=True)
def built():
    standin.ensure_built()


@pytest.fixture(scope="module")
def echo():
    with standin.EchoServer() as e:
        yield e


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return standin.make_test_images(tmp_path_factory.mktemp("img"), 8)


def assert_raw_consistent(raw: dict) -> None:
    assert raw["schema"] == fd.SCHEMA
    assert raw["totals"] == fd.recompute_totals(raw)
    reqs = raw["requests"]
    assert sorted(r["index"] for r in reqs) == list(range(len(reqs)))
    assert all(0 <= r["start"] <= r["last_attempt_start"] <= r["end"] <= raw["elapsed_s"] for r in reqs)
    assert raw["totals"]["bytes_sent"] == sum(r["bytes_sent"] for r in reqs)


def test_raw_file_recomputes_its_totals(tmp_path):
    with standin.LocalPlatform("nuclio-cpp", "reverse", 1) as p:
        raw = fd.run(fd.RunSpec(p.url, 2, 4, labels={"repeat": "0"}), fd.bytes_workload(4096, 20),
                     fd.url_scaler(p.scale_url))
    path = fd.save_raw(raw, tmp_path / "runs" / "run.json")
    back = fd.load_raw(path)
    assert_raw_consistent(back)
    t = back["totals"]
    assert (t["requests"], t["bytes_sent"], t["retries"], t["instances_seen"]) == (20, 20 * 4096, 0, 2)
    assert t["throughput_mib_s"] == pytest.approx(20 * 4096 / back["elapsed_s"] / 2**20)
    assert back["concurrency"] == 8 and back["labels"] == {"repeat": "0"}
    assert back["system_kind"] == "stand-in:nuclio-cpp-shell"
    assert not list(path.parent.glob(".*tmp")), "no temporary file left"
    back["requests"][0]["bytes_sent"] += 1
    assert fd.recompute_totals(back) != back["totals"], "a tampered raw file no longer matches its totals"


def test_killed_instance_is_retried_and_counted(images):
    """An instance's process group is killed mid-run (a pod crash): requests in flight there and
    the ones the gateway routes to it before it restarts fail; the director retries them until
    they succeed and counts the retries (paper Sec. 2.4)."""
    with standin.LocalPlatform("openfaas", "imageproc-np", 2) as p:
        victim = p.instance_pids()[0]
        result: dict = {}

        def drive():
            result["raw"] = fd.run(fd.RunSpec(p.url, 2, 2), fd.image_workload(images))

        t = threading.Thread(target=drive)
        t.start()
        time.sleep(0.5)  # the first four requests sleep 1 s inside their instances
        os.killpg(victim, signal.SIGKILL)
        t.join(timeout=120)
        assert not t.is_alive()
        raw = result["raw"]
        restarts = sum(i["restarts"] for i in json.loads(
            subprocess.run(["curl", "-s", p.status_url], capture_output=True, text=True).stdout)["instances"])
    assert_raw_consistent(raw)
    assert raw["totals"]["requests"] == len(images)
    assert raw["totals"]["retries"] >= 1
    retried = [r for r in raw["requests"] if r["retries"]]
    assert retried and all(r["errors"] for r in retried)
    assert all(r["status"] == 200 for r in raw["requests"])
    assert restarts >= 1, "the killed instance was restarted (restartPolicy: Always)"
    assert not standin.pid_alive(victim)


def test_single_variant_sends_one_request_at_a_time(echo):
    raw = fd.run(fd.RunSpec(echo.url, 4, 4, variant="single"), fd.bytes_workload(1024, 30, echo=True))
    assert raw["concurrency"] == 1
    reqs = sorted(raw["requests"], key=lambda r: r["start"])
    assert all(a["end"] <= b["start"] for a, b in zip(reqs, reqs[1:]))
    assert raw["totals"]["single_mean_mib_s"] > 0
    assert_raw_consistent(raw)


def test_wrong_answers_fail_the_run(echo):
    with pytest.raises(fd.WrongAnswer, match="not the reverse"):
        fd.run(fd.RunSpec(echo.url, 1, 4), fd.bytes_workload(100, 4))  # echo does not reverse
    with pytest.raises(fd.WrongAnswer, match="not a PNG"):
        fd.run(fd.RunSpec(echo.url, 1, 2), fd.Workload("images", [b"plain text"], fd.check_png))


def test_permanent_errors_are_not_retried():
    with standin.LocalPlatform("nuclio-go", "reverse-go", 1, max_body=512) as p:
        with pytest.raises(fd.PermanentHTTPError, match="HTTP 413") as err:
            fd.run(fd.RunSpec(p.url, 1, 4), fd.bytes_workload(513, 2))
        assert b"body-size limit of 512 bytes" in err.value.body


def test_bad_input_is_named(tmp_path):
    with pytest.raises(fd.DirectorError, match="no test images"):
        fd.image_workload([])
    (tmp_path / "x.png").write_bytes(b"nope")
    with pytest.raises(fd.DirectorError, match="not a PNG"):
        fd.image_workload([tmp_path / "x.png"])
    with pytest.raises(fd.DirectorError, match="want http"):
        fd.run(fd.RunSpec("ftp://x/", 1, 1), fd.bytes_workload(1, 1))
    with pytest.raises(fd.DirectorError, match="must be >= 1"):
        fd.run(fd.RunSpec("http://127.0.0.1:9/", 0, 1), fd.bytes_workload(1, 1))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.fdirector", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_cli_images_bytes_and_ceiling(tmp_path, images, echo):
    with standin.LocalPlatform("nuclio-cpp", "imageproc", 1) as p:
        done = cli("images", "--url", p.url, "--instances", "2", "--scale-url", p.scale_url,
                   "--images", str(images[0].parent), "--limit", "4", "--out", str(tmp_path / "img.json"),
                   "--label", "system=nuclio")
        assert done.returncode == 0, done.stderr
        raw = fd.load_raw(tmp_path / "img.json")
        assert raw["per_instance"] == 2 and raw["instances"] == 2 and raw["totals"]["instances_seen"] == 2
        assert raw["labels"] == {"system": "nuclio"} and raw["totals"]["requests"] == 4
        done = cli("bytes", "--url", p.url, "--instances", "1", "--scale-url", p.scale_url, "--size", "10",
                   "--requests", "3", "--max-retries", "2", "--out", str(tmp_path / "b.json"))
        # imageproc fails on bytes that are no image (HTTP 500): retried, then the run fails loudly
        assert done.returncode == 1 and "still failing after 2 retries" in done.stderr, done.stderr
        assert not (tmp_path / "b.json").exists()
    done = cli("ceiling", "--url", echo.url, "--size", "65536", "--requests", "40", "--out", str(tmp_path / "c.json"))
    assert done.returncode == 0, done.stderr
    raw = fd.load_raw(tmp_path / "c.json")
    assert raw["workload"] == "echo" and raw["system_kind"] == "none:echo-server" and raw["concurrency"] == 4
    assert_raw_consistent(raw)
    done = cli("bytes", "--url", echo.url, "--instances", "1", "--size", "1", "--label", "oops", "--out", "x.json")
    assert done.returncode == 1 and "want key=value" in done.stderr


def test_iperf3_runner_over_loopback():
    parsed, text = run_iperf3(seconds=1)
    assert parsed["bytes_received"] > 0 and parsed["remote"] == "127.0.0.1"
    assert parse_iperf3_report(text) == parsed and parsed["local"] == "127.0.0.1"
    with pytest.raises(IperfError, match="not JSON"):  # the parser's error, as the runner's
        run_iperf3(seconds=1, iperf3="/bin/echo")


def test_baseline_runs_the_function_directly(images):
    exe = standin.FUNCTIONS["imageproc"]
    raw = fd.run(fd.RunSpec(f"exec:{exe}", 2, 1), fd.image_workload(images[:4]))
    assert raw["system_kind"] == "none:direct-exec" and raw["concurrency"] == 2
    assert_raw_consistent(raw)
    with pytest.raises(fd.DirectorError, match="still failing after 1 retries"):
        fd.run(fd.RunSpec(f"exec:{exe}", 1, 1, max_retries=1), fd.bytes_workload(10, 1))
    with pytest.raises(fd.DirectorError, match="not an executable"):
        fd.run(fd.RunSpec("exec:/nonexistent", 1, 1), fd.bytes_workload(10, 1))


def test_cli_sweep_records_sizes_over_the_limit_as_failed(tmp_path):
    with standin.LocalPlatform("nuclio-go", "reverse-go", 1, max_body=1000) as p:
        done = cli("sweep", "--url", p.url, "--instances", "2", "--scale-url", p.scale_url, "--min-exp", "8",
                   "--max-exp", "11", "--requests", "5", "--out-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["size~1024.failed.json", "size~2048.failed.json",
                                                          "size~256.json", "size~512.json"]
    ok = fd.load_raw(tmp_path / "size~512.json")
    assert ok["labels"]["size"] == "512" and ok["totals"]["bytes_sent"] == 5 * 512 and ok["instances"] == 2
    bad = json.loads((tmp_path / "size~2048.failed.json").read_text())
    assert bad["schema"] == fd.FAILED_SCHEMA and bad["status"] == 413


def _rgb(data: bytes, tmp_path: Path) -> bytes:
    f = tmp_path / "x.png"
    f.write_bytes(data)
    return subprocess.run(["/usr/bin/convert", str(f), "-depth", "16", "rgb:-"], capture_output=True,
                          check=True).stdout


def _refilter(png: bytes, kind: int) -> bytes:
    """The PNG with every row stored with filter `kind` (None, Sub, Up, Average, Paeth)."""
    import zlib

    pos, chunks = 8, []
    while pos < len(png):
        n = int.from_bytes(png[pos:pos + 4], "big")
        chunks.append((png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]))
        pos += 12 + n
    w, h = fd.png_size(png)
    bpp = 6 if png[24] == 16 else 3
    stride = w * bpp
    raw = zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT"))
    rows, prior = [], bytes(stride)
    for y in range(h):
        start = y * (stride + 1)
        rows.append(bytes(fd._unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prior, bpp)))
        prior = rows[-1]
    out, prior = bytearray(), bytes(stride)
    for row in rows:
        f = bytearray([kind])
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            b, c = prior[i], (prior[i - bpp] if i >= bpp else 0)
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            pred = [0, a, b, (a + b) >> 1, a if pa <= pb and pa <= pc else (b if pb <= pc else c)][kind]
            f.append((row[i] - pred) & 0xFF)
        out += f
        prior = row
    body = b"".join(fd._chunk(k, d) for k, d in chunks if k not in (b"IDAT", b"IEND"))
    return png[:8] + body + fd._chunk(b"IDAT", zlib.compress(bytes(out))) + fd._chunk(b"IEND", b"")


@pytest.mark.parametrize("png_filter", ["adaptive", "0", "1", "2", "3", "4"])
def test_one_pixel_changes_per_image_and_run(tmp_path, png_filter):
    """As the paper's director did before each run: exactly one pixel differs (decoded by ImageMagick),
    whatever PNG row filters the image uses; another run's seed changes another pixel; the size stays."""
    import random

    src = standin.make_test_images(tmp_path / "img", 1)[0]
    data = src.read_bytes()
    if png_filter != "adaptive":  # mkimages' libpng picks filters per row; here every row gets one filter
        data = _refilter(data, int(png_filter))
        assert _rgb(data, tmp_path) == _rgb(src.read_bytes(), tmp_path)
    before = _rgb(data, tmp_path)
    bpp = 6 if data[24] == 16 else 3
    cols = set()
    for seed in ("run-a", "run-b", "run-c"):
        out, x = fd.change_one_pixel(data, random.Random(seed))
        after = _rgb(out, tmp_path)
        diff = [i // bpp for i in range(0, len(before), bpp) if before[i:i + bpp] != after[i:i + bpp]]
        assert diff == [x], (seed, diff[:5], x)
        assert fd.png_size(out) == fd.png_size(data) and abs(len(out) / len(data) - 1) < 0.02
        cols.add(x)
    assert len(cols) > 1


def test_image_workload_changes_a_pixel_of_every_image_per_run(tmp_path):
    paths = standin.make_test_images(tmp_path / "img", 3)
    plain = fd.image_workload(paths)
    a, b = fd.image_workload(paths, change_pixel="rep0"), fd.image_workload(paths, change_pixel="rep1")
    assert plain.prep == {} and a.prep["pixel_changed"] and len(a.prep["columns"]) == 3
    for i in range(3):
        assert plain.payloads[i] != a.payloads[i] != b.payloads[i]
    assert fd.image_workload(paths, change_pixel="rep0").payloads == a.payloads, "seeded: a rerun sends the same"


def test_iperf3_server_through_a_prefix_says_where_it_ran():
    """A server started through a prefix (an srun step on another node on a cluster; here `env`)
    reports its node and hostname, which the parsed result carries."""
    parsed, _text = run_iperf3(seconds=1, server_prefix=["env", "SLURMD_NODENAME=fakenode"])
    assert parsed["server_node"] == "fakenode" and parsed["server_hostname"]
    assert parsed["bytes_received"] > 0
