"""ctypes wrapper around libmpifuse.so (library mode of mpifuse).

Typical use inside an mpi4py program (MPI is initialised by mpi4py with
MPI_THREAD_MULTIPLE; the library never initialises or finalises MPI then):

    from mpi4py import MPI
    import mpifuse
    fs_comm = MPI.COMM_WORLD.Split(0 if rank > 0 else MPI.UNDEFINED, rank)
    if fs_comm != MPI.COMM_NULL:
        with mpifuse.start(fs_comm, "osr", "/shared/src", f"/tmp/mnt{rank}",
                           max_read=1 << 20, threads=True) as fs:
            ...read files under fs.mountpoint...
            print(fs.stats()["bytes_read_source"])
            fs.reset()
        # leaving the block calls stop(): collective over fs_comm

The library is found through $MPIFUSE_LIB, then ../build/libmpifuse.so next
to this file, then the dynamic linker's search path (libmpifuse.so).
"""

import ctypes
import json
import os

__all__ = ["MpiFuse", "start", "stats", "reset", "stop", "load_library", "comm_handle"]

_lib = None
_current = None


def load_library(path=None):
    """Load (once) and return the ctypes handle of libmpifuse.so."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    candidates = []
    if path:
        candidates.append(path)
    if os.environ.get("MPIFUSE_LIB"):
        candidates.append(os.environ["MPIFUSE_LIB"])
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "build", "libmpifuse.so"))
    candidates.append(os.path.join(here, "..", "..", "lib", "libmpifuse.so"))  # PREFIX/share/mpifuse/python
    candidates.append("libmpifuse.so")
    err = None
    for c in candidates:
        if os.sep in c and not os.path.exists(c):
            continue
        try:
            lib = ctypes.CDLL(c, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError as e:  # pragma: no cover - depends on the system
            err = e
    else:
        raise OSError(f"cannot load libmpifuse.so (tried {candidates}): {err}")
    lib.mpifuse_stats_json.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.mpifuse_stats_json.restype = ctypes.c_int
    lib.mpifuse_stats_reset.argtypes = [ctypes.c_int]
    lib.mpifuse_stats_reset.restype = ctypes.c_int
    lib.mpifuse_stop.argtypes = [ctypes.c_int]
    lib.mpifuse_stop.restype = ctypes.c_int
    lib.mpifuse_should_stop.argtypes = [ctypes.c_int]
    lib.mpifuse_should_stop.restype = ctypes.c_int
    lib.mpifuse_request_shutdown.argtypes = [ctypes.c_int]
    lib.mpifuse_request_shutdown.restype = ctypes.c_int
    lib.mpifuse_mountpoint.argtypes = [ctypes.c_int]
    lib.mpifuse_mountpoint.restype = ctypes.c_char_p
    _lib = lib
    return lib


def comm_handle(comm):
    """The C MPI_Comm of an mpi4py communicator, as a ctypes value.

    mpi4py 4.x has ``comm.handle`` (an int); ``MPI._handleof(comm)`` works
    in 3.x and 4.x. Open MPI's MPI_Comm is a pointer, MPICH's an int."""
    from mpi4py import MPI

    h = getattr(comm, "handle", None)
    if h is None:
        h = MPI._handleof(comm)
    if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) and MPI._sizeof(MPI.Comm) != ctypes.sizeof(ctypes.c_int):
        return ctypes.c_void_p(h), ctypes.c_void_p
    return ctypes.c_int(h), ctypes.c_int


def _opts_string(opts):
    parts = []
    for k, v in opts.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "on" if v else "off"
        parts.append(f"{k}={v}")
    return ",".join(parts)


class MpiFuse:
    """One running file system instance on this rank (see module doc)."""

    def __init__(self, comm, mode, source, mountpoint, lib=None, **opts):
        self._lib = load_library(lib)
        ch, ctype = comm_handle(comm)
        self._lib.mpifuse_start.argtypes = [ctype, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                            ctypes.c_char_p]
        self._lib.mpifuse_start.restype = ctypes.c_int
        self.mode = mode
        self.source = source
        self.options = _opts_string(opts)
        h = self._lib.mpifuse_start(ch, mode.encode(), os.fsencode(source), os.fsencode(mountpoint),
                                    self.options.encode())
        if h < 0:
            raise OSError(-h, f"mpifuse_start({mode!r}, {source!r}, {mountpoint!r}, {self.options!r}) failed: "
                              f"{os.strerror(-h)}")
        self.handle = h
        mp = self._lib.mpifuse_mountpoint(h)
        self.mountpoint = os.fsdecode(mp) if mp else mountpoint

    def stats(self):
        """This rank's counters as a dict (see README for the fields)."""
        self._check()
        buf = ctypes.create_string_buffer(1 << 16)
        n = self._lib.mpifuse_stats_json(self.handle, buf, len(buf))
        if n < 0:
            raise OSError(-n, "mpifuse_stats_json failed")
        return json.loads(buf.value.decode())

    def reset(self):
        """Zero this rank's counters and timers (local)."""
        self._check()
        rc = self._lib.mpifuse_stats_reset(self.handle)
        if rc < 0:
            raise OSError(-rc, "mpifuse_stats_reset failed")

    def should_stop(self):
        self._check()
        return self._lib.mpifuse_should_stop(self.handle) == 1

    def request_shutdown(self):
        self._check()
        self._lib.mpifuse_request_shutdown(self.handle)

    def stop(self):
        """Unmount and tear down; collective over the start communicator."""
        global _current
        if self.handle is None:
            return
        rc = self._lib.mpifuse_stop(self.handle)
        self.handle = None
        if _current is self:
            _current = None
        if rc != 0:
            raise OSError(-rc if rc < 0 else rc, "mpifuse_stop failed")

    def _check(self):
        if self.handle is None:
            raise ValueError("file system already stopped")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return f"MpiFuse(mode={self.mode!r}, mountpoint={self.mountpoint!r}, handle={self.handle})"


def start(comm, mode, source, mountpoint, **opts):
    """Mount (collective over comm); returns an MpiFuse usable as a context manager.

    Keyword options map to the library's option string, e.g.
    start(c, "osr-refined", src, mnt, max_read=1 << 20, threads=True, chunk="8M")."""
    global _current
    fs = MpiFuse(comm, mode, source, mountpoint, **opts)
    _current = fs
    return fs


def _cur():
    if _current is None:
        raise ValueError("no mpifuse file system started in this process")
    return _current


def stats():
    """Stats of the most recently started file system."""
    return _cur().stats()


def reset():
    """Reset the stats of the most recently started file system."""
    _cur().reset()


def stop():
    """Stop the most recently started file system (collective)."""
    _cur().stop()
