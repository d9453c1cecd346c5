"""The on-demand broadcast (bcast_on_demand=1): the paper's Naive design, where
the broadcast of a block waits until every rank's reader has asked for it.
Content and the usual file-system behaviour are covered by the on-demand
configurations of test_modes.py; here: mixed readers of a fresh file, ranks
that never open or close early, the pacing itself, loud failure, options."""
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from mpifuse_testlib import BIN, MIB, mpi_env, read_bytes, sha256_file
from mpifuse_testlib import built, fsjob, source  # noqa: F401  (pytest fixtures)

LOCKSTEP = "bcast_on_demand=1,block=128K,bcast_depth=1"
PAPER = LOCKSTEP + ",max_read=131072,readahead_kb=128"  # one 128 KiB FUSE request = one block

# reads a file in 128 KiB requests, sleeping after each; prints "open" once the file is open,
# at the end bytes, seconds and JSON samples of the protocol counters taken after each request:
# first every other rank's bcast_bytes (blocks it has posted), then this rank's bcast_demand_bytes
SLOW_READER = r"""
import json, os, sys, time
path, pause = sys.argv[1], float(sys.argv[2])
own, others = sys.argv[3], sys.argv[4:]
def stats(mnt):
    with open(os.path.join(mnt, ".mpifuse-stats")) as f:
        return json.load(f)
t0 = time.monotonic()
n = 0
samples = []
with open(path, "rb", buffering=0) as f:
    print("open", flush=True)
    while True:
        b = f.read(131072)
        if not b:
            break
        n += len(b)
        posted = [stats(m)["bcast_bytes"] for m in others]
        me = stats(own)
        samples.append({"pos": n, "posted": posted + [me["bcast_bytes"]], "demand": me["bcast_demand_bytes"]})
        time.sleep(pause)
print(n, time.monotonic() - t0, flush=True)
print(json.dumps(samples), flush=True)
"""

# the same file twice: one descriptor sequential (hashed), the other random preads
RANDOM_READER = r"""
import hashlib, os, random, sys
path, seed = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(path)
rnd = random.Random(seed)
seq = os.open(path, os.O_RDONLY)
rand = os.open(path, os.O_RDONLY)
h = hashlib.sha256()
pos, ranges = 0, []
while pos < size:
    b = os.pread(seq, 100000, pos)
    h.update(b)
    pos += len(b)
    off, ln = rnd.randrange(size), rnd.randrange(1, 300000)
    ranges.append((off, ln, hashlib.sha256(os.pread(rand, ln, off)).hexdigest()))
os.close(seq)
os.close(rand)
print(h.hexdigest())
for r in ranges:
    print(*r)
"""

# reads a prefix, closes, later opens again and hashes the whole file
EARLY_CLOSE = r"""
import sys, time
from repro.testing import file_sha256
path = sys.argv[1]
with open(path, "rb", buffering=0) as f:
    f.read(300000)
time.sleep(0.5)
print(file_sha256(path), flush=True)
"""


def fresh_file(d, name, size):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(os.urandom(size))
    return p


def finish_times(procs, t0, timeout=120):
    """Wait for every process; the monotonic time each one ended, relative to t0."""
    ends = {}
    deadline = time.monotonic() + timeout
    while len(ends) < len(procs):
        for k, p in procs.items():
            if k not in ends and p.poll() is not None:
                ends[k] = time.monotonic() - t0
        if time.monotonic() > deadline:
            raise AssertionError(f"readers still running after {timeout} s: {set(procs) - set(ends)}")
        time.sleep(0.005)
    return ends


@pytest.mark.parametrize("tcp_only", [False, True], ids=["shm", "tcp"])
def test_mixed_readers_fresh_file(fsjob, tmp_path, tcp_only):
    """cat | sha256sum, sha256sum and a Python reader with two descriptors (sequential +
    random preads) read a new file at the same time on three ranks, in lockstep"""
    src = tmp_path / "src"
    src.mkdir()
    size = 9 * MIB + 7
    path = fresh_file(src, "mixed.bin", size)
    data = read_bytes(path)
    want = hashlib.sha256(data).hexdigest()
    job = fsjob("bcast", 3, src, opts=PAPER if tcp_only else LOCKSTEP, tcp_only=tcp_only)
    procs = {
        "cat": subprocess.Popen(f"cat {job.mount(0)}/mixed.bin | sha256sum", shell=True, stdout=subprocess.PIPE,
                                text=True),
        "sha256sum": subprocess.Popen(["sha256sum", f"{job.mount(1)}/mixed.bin"], stdout=subprocess.PIPE,
                                      text=True),
        "python": subprocess.Popen([sys.executable, "-c", RANDOM_READER, f"{job.mount(2)}/mixed.bin", "7"],
                                   stdout=subprocess.PIPE, text=True),
    }
    outs = {k: p.communicate(timeout=120)[0] for k, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values()), job.log()
    assert outs["cat"].split()[0] == want
    assert outs["sha256sum"].split()[0] == want
    lines = outs["python"].splitlines()
    assert lines[0] == want
    assert len(lines) > 50
    for line in lines[1:]:
        off, ln, digest = line.split()
        off, ln = int(off), int(ln)
        assert hashlib.sha256(data[off:off + ln]).hexdigest() == digest, (off, ln)
    st = [job.stats(r) for r in range(3)]
    assert all(s["bcast_on_demand"] and s["bcast_sync"] == "barrier" for s in st)
    assert sum(s["bytes_read_source"] for s in st) == size  # read once
    assert all(s["bcast_bytes"] >= size and s["bcast_sync_calls"] >= size // (128 << 10) for s in st)
    assert job.stop() == 0


def test_never_opens_and_early_close_do_not_stall(fsjob, tmp_path):
    """rank 2 never opens the file, rank 1 reads a prefix and closes (then opens it again
    later): neither may hold rank 0's lockstep reader back"""
    src = tmp_path / "src"
    src.mkdir()
    path = fresh_file(src, "partial.bin", 8 * MIB + 1)
    want = sha256_file(path)
    job = fsjob("bcast", 3, src, opts=PAPER, tcp_only=True, timeout=20)
    t0 = time.monotonic()
    procs = {
        "full": subprocess.Popen(["sha256sum", f"{job.mount(0)}/partial.bin"], stdout=subprocess.PIPE, text=True),
        "early": subprocess.Popen([sys.executable, "-c", EARLY_CLOSE, f"{job.mount(1)}/partial.bin"],
                                  stdout=subprocess.PIPE, text=True),
    }
    ends = finish_times(procs, t0, timeout=60)
    outs = {k: p.communicate()[0] for k, p in procs.items()}
    assert procs["full"].returncode == 0 and procs["early"].returncode == 0, job.log()
    assert outs["full"].split()[0] == want
    assert outs["early"].split()[0] == want
    assert ends["full"] < 15, ends  # no stall until the 20 s timeout
    st = [job.stats(r) for r in range(3)]
    assert st[2]["open_calls"] == 0 and st[2]["bcast_bytes"] >= 8 * MIB  # received it all the same
    assert st[2]["bcast_demand_wait_time_s"] == 0  # never gated
    assert "FATAL" not in job.log()
    assert job.stop() == 0


# (mode options, transport, slow rank) -> lockstep expected?
PACING = [
    pytest.param(PAPER, False, 0, True, id="lockstep-shm-slow-root"),
    pytest.param(PAPER, True, 2, True, id="lockstep-tcp-slow-leaf"),
    # the negative case: streaming does not wait for the slow reader, and the check below must see it
    pytest.param("block=128K,max_read=131072,readahead_kb=128", True, 2, False, id="streaming-tcp"),
    # a block below the eager limit: only the barrier keeps the ranks together
    pytest.param(PAPER.replace("block=128K", "block=16K"), True, 2, True, id="lockstep-tcp-eager-block"),
]


def ahead_of_demand(samples, block, depth, size):
    """The samples in which some rank had posted a broadcast block that the slow reader's rank had not
    asked for. Lockstep (depth 1, barrier before every block) forbids it: block b is posted on any rank
    only after the barrier of block b, which the slow rank enters only once its reader asked for a byte
    in block b (in b-(depth-1) or beyond in general). The other ranks' counters are read before the slow
    rank's demand, which only grows, so the check holds exactly, however slow or busy the machine."""
    bad = []
    for s in samples:
        d = s["demand"]
        allowed = 0 if d == 0 else min(size, ((d - 1) // block + depth) * block)
        if max(s["posted"]) > allowed:
            bad.append({**s, "allowed": allowed})
    return bad


@pytest.mark.parametrize("opts,tcp_only,slow_rank,lockstep", PACING)
def test_pacing_fast_reader_waits_for_slow_reader(fsjob, tmp_path, opts, tcp_only, slow_rank, lockstep):
    """A slow reader (128 KiB, then 20 ms sleep) on one rank, sha256sum on the others.
    On demand (lockstep), no rank gets a block before the slow reader has asked for it -- the
    paper's 'wait until all nodes have reached the next broadcast' -- so the fast readers move at
    the slow reader's pace. Streaming, the file reaches them regardless of the slow reader.
    Asserted from the protocol's own counters (blocks posted per rank vs the slow rank's demand,
    sampled after each of the slow reader's requests), not from wall-clock ratios."""
    src = tmp_path / "src"
    src.mkdir()
    size = 12 * MIB
    path = fresh_file(src, "pace.bin", size)
    want = sha256_file(path)
    job = fsjob("bcast", 3, src, opts=opts, tcp_only=tcp_only, timeout=30)
    fast_ranks = [r for r in range(3) if r != slow_rank]
    slow = subprocess.Popen([sys.executable, "-c", SLOW_READER, f"{job.mount(slow_rank)}/pace.bin", "0.02",
                             job.mount(slow_rank), *[job.mount(r) for r in fast_ranks]],
                            stdout=subprocess.PIPE, text=True)
    # the slow reader holds the file before the others open it, so its rank gates from the first block
    assert slow.stdout.readline().strip() == "open", job.log()
    procs = {r: subprocess.Popen(["sha256sum", f"{job.mount(r)}/pace.bin"], stdout=subprocess.PIPE, text=True)
             for r in fast_ranks}
    procs["slow"] = slow
    outs = {k: p.communicate(timeout=120)[0] for k, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values()), job.log()
    nbytes_secs, samples = outs["slow"].splitlines()  # (its "open" was read above)
    assert int(nbytes_secs.split()[0]) == size
    assert all(outs[r].split()[0] == want for r in fast_ranks)
    samples = json.loads(samples)
    assert len(samples) == size // (128 << 10)
    st = [job.stats(r) for r in range(3)]
    assert all(s["bcast_bytes"] == size for s in st)
    assert st[slow_rank]["bcast_demand_bytes"] == size
    block, depth = st[0]["bcast_block"], st[0]["bcast_depth"]
    bad = ahead_of_demand(samples, block, depth, size)
    detail = f"{len(bad)} of {len(samples)} samples ahead of the slow reader's demand, first {bad[:3]}"
    if lockstep:
        assert not bad, detail
        # and the check was not vacuous: most samples were taken with most of the file still unsent
        assert sum(max(s["posted"]) < size // 2 for s in samples) >= len(samples) // 3, samples[::8]
    else:
        assert bad, detail
        assert all(s["bcast_demand_wait_time_s"] == 0 for s in st)
    assert job.stop() == 0


def test_idle_holder_makes_peers_abort_loudly(fsjob, tmp_path):
    """A reader that keeps the file open but stops reading holds the lockstep broadcast
    back (as in the paper's design); instead of hanging, the waiting ranks abort after
    `timeout` with a message that names the on-demand broadcast."""
    src = tmp_path / "src"
    src.mkdir()
    fresh_file(src, "idle.bin", 4 * MIB)
    job = fsjob("bcast", 2, src, opts=PAPER, tcp_only=True, timeout=4)
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; f = open(sys.argv[1], 'rb', buffering=0); f.read(131072); "
                               "time.sleep(60)", f"{job.mount(1)}/idle.bin"])
    try:
        time.sleep(0.5)
        reader = subprocess.Popen(["sha256sum", f"{job.mount(0)}/idle.bin"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        try:
            rc = job.proc.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"job still running 60 s after its reader stalled:\n{job.log()}")
        assert rc != 0
        assert "FATAL: timeout" in job.log() and "on-demand" in job.log(), job.log()
        reader.communicate(timeout=30)
        assert reader.returncode != 0
    finally:
        holder.kill()
        holder.wait()


def test_options(built, tmp_path):
    """bcast_sync needs bcast_on_demand; bad values are refused; the stats say what runs"""
    env = mpi_env()
    (tmp_path / "src").mkdir()
    for opts, msg in (("bcast_sync=barrier", "needs bcast_on_demand"), ("bcast_sync=sometimes", "bad value"),
                      ("bcast_on_demand=maybe", "bad value")):
        r = subprocess.run(["mpirun", "-n", "1", BIN, "--mode", "bcast", "-o", opts, str(tmp_path / "src"),
                            str(tmp_path / "m{rank}")], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and msg in r.stdout + r.stderr, (opts, r.stdout + r.stderr)


def test_stats_fields_default_and_on_demand(fsjob, source):
    job = fsjob("bcast", 1, source, opts="bcast_on_demand=1,bcast_depth=2,bcast_sync=none,block=64K")
    assert read_bytes(os.path.join(job.mount(0), f"f{MIB + 3}")) == read_bytes(os.path.join(source, f"f{MIB + 3}"))
    st = job.stats(0)
    assert st["bcast_on_demand"] is True and st["bcast_sync"] == "none"
    assert st["bcast_block"] == 64 << 10 and st["bcast_depth"] == 2
    assert st["bcast_sync_calls"] == 0 and st["bcast_calls"] >= 17
    for k in ("bcast_time_s", "bcast_sync_time_s", "bcast_demand_wait_time_s"):
        assert st[k] >= 0
    assert job.stop() == 0
    job = fsjob("bcast", 1, source)
    st = job.stats(0)
    assert st["bcast_on_demand"] is False and st["bcast_sync"] == "none"
    assert st["bcast_block"] == 4 << 20 and st["bcast_depth"] == 4
    assert job.stop() == 0
