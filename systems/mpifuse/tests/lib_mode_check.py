"""Library-mode check, run under mpirun with n+1 ranks (the benchmarker's layout):

    mpirun -n 3 python lib_mode_check.py MODE WORKDIR [OPTIONS]

rank 0 generates the files (and never mounts), ranks 1..n start the file
system through libmpifuse (split communicator), hash every file through their
own mount in this same process, compare with the source hashes, check the
stats and stop. Exit status 0 on success; prints "LIBCHECK OK" on rank 0.
"""
import json
import os
import sys

from mpi4py import MPI

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import mpifuse  # noqa: E402
from repro.testing import file_sha256  # noqa: E402 -- (the project's PYTHONPATH, inherited from the test)

SIZES = [0, 1, 4095, 4097, 131071, (1 << 20) + 3, (5 << 20) + 7]


def sha(path):
    return file_sha256(path, 1 << 16)


def main():
    mode, work = sys.argv[1], sys.argv[2]
    opts = dict(kv.split("=", 1) for kv in sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[3] else {}
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    src = os.path.join(work, "src")
    if rank == 0:
        os.makedirs(src, exist_ok=True)
        for s in SIZES:
            with open(os.path.join(src, f"f{s}"), "wb") as f:
                f.write(os.urandom(s))
    world.Barrier()
    expect = {f"f{s}": sha(os.path.join(src, f"f{s}")) for s in SIZES} if rank == 0 else None
    expect = world.bcast(expect, root=0)

    fs_comm = world.Split(1 if rank > 0 else MPI.UNDEFINED, rank)
    ok = 1
    if fs_comm != MPI.COMM_NULL:
        mnt = os.path.join(work, f"mnt{rank}")
        with mpifuse.start(fs_comm, mode, src, mnt, linger=30, timeout=30, **opts) as fs:
            fs_comm.Barrier()
            fs.reset()
            fs_comm.Barrier()
            for name, digest in sorted(expect.items()):
                got = sha(os.path.join(fs.mountpoint, name))
                if got != digest:
                    print(f"rank {rank}: MISMATCH {name} {got} != {digest}", flush=True)
                    ok = 0
            st = fs.stats()
            st_file = json.load(open(os.path.join(fs.mountpoint, ".mpifuse-stats")))
            assert st_file["rank"] == fs_comm.Get_rank(), st_file
            assert mpifuse.stats()["mode"] == mode
            fs_comm.Barrier()
            total = fs_comm.allreduce(st["bytes_read_source"])
            n = fs_comm.Get_size()
            want = sum(SIZES) * (n if mode == "passthrough" else 1)
            if total != want:
                print(f"rank {rank}: bytes_read_source total {total} != {want}", flush=True)
                ok = 0
            fs.reset()
            assert fs.stats()["read_calls"] == 0
        assert not os.path.ismount(mnt)
        fs_comm.Free()
    ok = world.allreduce(ok, op=MPI.MIN)
    if rank == 0:
        print("LIBCHECK OK" if ok else "LIBCHECK FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
