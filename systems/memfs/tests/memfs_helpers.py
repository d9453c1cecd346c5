"""Small helpers shared by the MemFS tests."""
import hashlib
import os
import random

from repro.testing import file_sha256 as file_sha  # noqa: F401 -- the tests import it from here

STRIPE = 512 * 1024
MiB = 1 << 20


def payload(size, seed=0):
    return random.Random(seed).randbytes(size)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def write_file(path, data, chunk=None):
    """Write data sequentially (one big write, or chunk-sized writes)."""
    with open(path, "wb") as f:
        if chunk is None:
            f.write(data)
        else:
            for i in range(0, len(data), chunk):
                f.write(data[i:i + chunk])


def read_file(path, chunk=None):
    with open(path, "rb") as f:
        if chunk is None:
            return f.read()
        parts = []
        while True:
            b = f.read(chunk)
            if not b:
                break
            parts.append(b)
        return b"".join(parts)


def check_random_preads(path, data, n=40, seed=1):
    """Random pread ranges (including stripe boundaries and EOF) must match."""
    rnd = random.Random(seed)
    size = len(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        offs = [0, max(0, size - 1), size, size + 10]
        for k in range(1, 4):
            offs += [k * STRIPE - 1, k * STRIPE, k * STRIPE + 1]
        offs += [rnd.randrange(0, size + 1) for _ in range(n)] if size else []
        for off in offs:
            length = rnd.choice([1, 7, 4096, STRIPE - 3, STRIPE + 5, 3 * STRIPE])
            got = os.pread(fd, length, off)
            assert got == data[off:off + length], f"pread({length}, {off}) mismatch"
    finally:
        os.close(fd)
