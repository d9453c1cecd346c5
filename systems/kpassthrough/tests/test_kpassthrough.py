"""kpassthrough through real FUSE mounts (root): bytes read back exactly in both modes, the
listing mirrors the source, kernel mode really bypasses the server (0 READ requests), refusals
fail the mount loudly, every mount is unmounted and its server gone. No timings asserted."""
import errno
import os
import signal
import subprocess

import pytest
from kpassthrough_testlib import (BIN, SYS, Mount, kernel_has_passthrough, make_source,
                                  missing_prereq, mounted)

pytestmark = pytest.mark.skipif(missing_prereq() is not None, reason=str(missing_prereq()))

MODES = ["kernel", "off"]


@pytest.fixture(scope="module")
def built():
    subprocess.run(["make", "-s", "-C", SYS], check=True)
    assert os.access(BIN, os.X_OK)
    return BIN


@pytest.fixture()
def tree(tmp_path, built):
    src = tmp_path / "src"
    data = make_source(str(src))
    return str(src), str(tmp_path / "mnt"), str(tmp_path / "stats.json"), data


def need_kernel(mode):
    if mode == "kernel" and not kernel_has_passthrough():
        pytest.skip("kernel FUSE passthrough needs Linux >= 6.9")


def read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("mode", MODES)
def test_bytes_read_back_exactly(tree, mode):
    need_kernel(mode)
    src, mp, stats, data = tree
    with Mount(src, mp, stats, "--passthrough", mode) as m:
        assert m.read_stats()["passthrough"] == mode
        before = m.ops()
        for name, want in data.items():
            got = read(os.path.join(mp, name))
            assert len(got) == len(want), name
            assert got == want, f"{name}: bytes differ through the mount ({mode})"
        # a second read of the big file, in 1 MiB pieces at odd offsets
        with open(os.path.join(mp, "random_8m"), "rb") as f:
            for off in (0, 1, 4095, 3 * (1 << 20) + 7, 8 * (1 << 20) - 1):
                f.seek(off)
                assert f.read(1 << 20) == data["random_8m"][off:off + (1 << 20)]
        assert read(os.path.join(mp, "link_to_big")) == data["random_8m"]
        opens = len(data) + 2
        ops = m.wait_ops(lambda o: o["release"] - before["release"] >= opens)
        served_bytes = sum(len(b) for b in data.values())
        assert ops["open"] - before["open"] == opens
        assert ops["release"] - before["release"] == opens
        assert ops["errors"] == 0 and ops["backing_open_failures"] == 0
        if mode == "kernel":
            # every open passed through, not one READ reached the server
            assert ops["open_passthrough"] - before["open_passthrough"] == opens
            assert ops["read"] == 0 and ops["read_bytes"] == 0
        else:
            assert ops["open_served"] - before["open_served"] == opens
            assert ops["open_passthrough"] == 0
            assert ops["read"] > 0
            assert ops["read_bytes"] >= served_bytes
    final = m.read_stats()
    assert final["state"] == "exited" and m.proc.returncode == 0


@pytest.mark.parametrize("mode", MODES)
def test_listing_and_attributes_mirror_the_source(tree, mode):
    need_kernel(mode)
    src, mp, stats, _ = tree
    with Mount(src, mp, stats, "--passthrough", mode):
        def walk(root):
            out = {}
            for d, dirs, files in os.walk(root):
                rel = os.path.relpath(d, root)
                out[rel] = (sorted(dirs), sorted(files))
                for n in files + dirs:
                    st = os.lstat(os.path.join(d, n))
                    out[os.path.join(rel, n)] = (st.st_mode, st.st_size, st.st_mtime_ns)
            return out
        assert walk(mp) == walk(src)
        assert sorted(os.listdir(mp)) == sorted(os.listdir(src))
        assert os.readlink(os.path.join(mp, "link_to_big")) == "random_8m"
        assert os.listdir(os.path.join(mp, "sub", "deeper")) == []
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(mp, "no-such-file"))
        with pytest.raises(OSError) as e:
            open(os.path.join(mp, "one"), "r+b")
        assert e.value.errno == errno.EROFS


def test_kernel_mode_refused_ioctl_fails_the_mount(tree):
    """max_stack_depth 0 at FUSE_INIT: the kernel does not enable passthrough on the connection
    and refuses FUSE_DEV_IOC_BACKING_OPEN (EPERM) -- kernel mode must fail, not fall back."""
    need_kernel("kernel")
    src, mp, stats, _ = tree
    os.makedirs(mp)
    r = subprocess.run([BIN, src, mp, "--stats", stats, "--max-stack-depth", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "FUSE_DEV_IOC_BACKING_OPEN refused" in r.stderr
    assert "no silent fallback" in r.stderr
    assert not mounted(mp)
    assert Mount.read_stats(type("S", (), {"stats": stats})())["state"] == "failed"


def test_kernel_mode_without_capability_fails_the_mount(tree):
    """As on a kernel before 6.9 (FUSE_PASSTHROUGH not offered at FUSE_INIT; simulated with the
    binary's test hook): the mount fails naming the kernel requirement."""
    src, mp, stats, _ = tree
    os.makedirs(mp)
    r = subprocess.run([BIN, src, mp, "--stats", stats], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, KPASSTHROUGH_TEST_HIDE_CAPABILITY="1"))
    assert r.returncode == 1
    assert "did not offer FUSE_PASSTHROUGH" in r.stderr and "6.9" in r.stderr
    assert not mounted(mp)


@pytest.mark.parametrize("how", ["refused-ioctl", "no-capability"])
def test_auto_logs_its_choice_and_serves_from_user_space(tree, how):
    src, mp, stats, data = tree
    args, env = ["--passthrough", "auto"], {}
    if how == "refused-ioctl":
        args += ["--max-stack-depth", "0"]
    else:
        env["KPASSTHROUGH_TEST_HIDE_CAPABILITY"] = "1"
    with Mount(src, mp, stats, *args, env=env) as m:
        st = m.read_stats()
        assert st["requested"] == "auto" and st["passthrough"] == "off"
        assert "chose passthrough=off" in m.output()
        assert read(os.path.join(mp, "random_8m")) == data["random_8m"]
        assert m.ops()["read"] > 0


def test_auto_chooses_kernel_when_available(tree):
    need_kernel("kernel")
    src, mp, stats, data = tree
    with Mount(src, mp, stats, "--passthrough", "auto") as m:
        assert m.read_stats()["passthrough"] == "kernel"
        assert "chose passthrough=kernel" in m.output()
        assert read(os.path.join(mp, "random_8m")) == data["random_8m"]
        assert m.ops()["read"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_unmounts_and_exits(tree, mode):
    need_kernel(mode)
    src, mp, stats, _ = tree
    m = Mount(src, mp, stats, "--passthrough", mode)
    try:
        m.proc.send_signal(signal.SIGTERM)
        assert m.proc.wait(timeout=15) == 0
        assert not mounted(mp)
        assert m.read_stats()["state"] == "exited"
    finally:
        m.close()


def test_bad_option_fails_at_start_naming_it(built, tmp_path):
    r = subprocess.run([BIN, str(tmp_path), str(tmp_path), "--passthrough", "sometimes"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--passthrough" in r.stderr and "sometimes" in r.stderr
    r = subprocess.run([BIN, str(tmp_path / "nope"), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "nope" in r.stderr
