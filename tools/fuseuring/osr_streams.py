"""Issue 30, a one-off measurement (not part of a study): refined OSR (mpifuse osr-refined, 1 rank, the local
config's single-threaded loop, 1 MiB requests) at 1 and 8 concurrent dd readers (1 MiB blocks, 32 MiB files),
over /dev/fuse and over io_uring, beside the FUSE ceiling over both (tools/fuseceiling, the same max_read,
readahead and loop), interleaved per repeat (the order rotating); every file read back equal to its source
after the timed part; each line has the transport's counters (ring_reqs, dev_rw_reqs).

    ./repro env > /tmp/e && . /tmp/e && python3 tools/fuseuring/osr_streams.py [REPS] > out.jsonl
(from the repository root; the fusespeed study's one-node part has one reader, hence this)."""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro import procs
from tools.fuseceiling import ceiling as fc

REPS, SIZE, MiB = int(sys.argv[1]) if len(sys.argv) > 1 else 3, 32 << 20, 1 << 20
BIN = "systems/mpifuse/build/mpifuse"
top = Path(tempfile.mkdtemp(prefix="i30-osr-"))
src = top / "src"
src.mkdir()
for i in range(8):
    (src / f"f{i}").write_bytes(os.urandom(SIZE))
want = {f"f{i}": (src / f"f{i}").read_bytes() for i in range(8)}
out = []
def mpifuse(uring, streams, rep):
    mnt = top / f"m{rep}{streams}{int(uring)}"
    opts = "timeout=60,linger=5,threads=off,max_read=1048576" + (",io_uring=on" if uring else "")
    p = subprocess.Popen(["mpirun", "-n", "1", "--oversubscribe", BIN, "--mode", "osr-refined", "--mount-template",
                          str(mnt) + "{rank}", "-o", opts, str(src)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=procs.mpi_env(shm=True), start_new_session=True)
    m = Path(str(mnt) + "0")
    for _ in range(600):
        if os.path.ismount(m) and (m / ".mpifuse-stats").exists():
            break
        time.sleep(0.05)
    names = [f"f{i}" for i in range(streams)]
    r = fc.run_streams([m / n for n in names], "read", MiB, SIZE)
    st = json.loads((m / ".mpifuse-stats").read_text())
    ok = all((m / n).read_bytes() == want[n] for n in names)
    subprocess.run(["fusermount3", "-u", str(m)])
    p.wait(60)
    return {"system": "osr-refined", "transport": "io_uring" if uring else "dev-fuse", "streams": streams, "rep": rep,
            "mib_s": r["mib_s"], "load": r["loadavg"][0], "equal": ok, "tr": st["transport"]}
def ceiling(uring, streams, rep):
    mnt = top / f"c{rep}{streams}{int(uring)}"
    opts = ["--max-read", str(MiB), "--readahead", str(4 * MiB), "-s"] + (["--transport", "io_uring"] if uring else [])
    with fc.Mount(mnt, opts, preload=[(f"r{i}", SIZE) for i in range(streams)]) as m:
        r = fc.run_streams([mnt / f"r{i}" for i in range(streams)], "read", MiB, SIZE)
        st = m.stats()
        ok = (mnt / "r0").read_bytes() == fc.pattern(SIZE)  # the preload pattern (one file: generating is slow)
    return {"system": "ceiling", "transport": "io_uring" if uring else "dev-fuse", "streams": streams, "rep": rep,
            "mib_s": r["mib_s"], "load": r["loadavg"][0], "equal": ok, "tr": st["transport"]}
print(fc.enable_uring(), file=sys.stderr)
for rep in range(REPS):
    for streams in (1, 8):
        jobs = [(f, u) for f in (mpifuse, ceiling) for u in (False, True)]
        k = rep % len(jobs)
        for f, u in jobs[k:] + jobs[:k]:
            x = f(u, streams, rep)
            out.append(x)
            print(json.dumps({k: v for k, v in x.items() if k != "tr"} | {"ring_reqs": x["tr"].get("ring_reqs"),
                  "dev_rw_reqs": x["tr"].get("dev_rw_reqs"), "used": x["tr"].get("transport")}), flush=True)
subprocess.run(["rm", "-rf", str(top)])
bad = [x for x in out if not x["equal"] or (x["transport"] == "io_uring" and (x["tr"].get("transport") != "io_uring"
                                                                           or x["tr"].get("dev_rw_reqs")))]
sys.exit(1 if bad else 0)
