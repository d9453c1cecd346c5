"""Is ``storage.paths.lustre_dir`` on Lustre? (issue 28 part 4)

With ``paths.lustre_dir`` set, Lustre+MinIO serves S3 from it and mdtest's Lustre side works in it:
a directory on any other file system (a node-local disk, NFS, a typo that lands on /tmp) would be
measured and labelled Lustre. Every job that uses it checks the file system type first, by the
statfs(2) magic number (``f_type``), and refuses one that is not Lustre's ``LUSTRE_MAGIC``
(systems/minio/stack.py, 0x0BD00BD0 as in Lustre's lustre_user.h), naming the key, the directory and
the magic it found:

    refusal(path)            -> None (Lustre) or the message
    refusal(path, magic=m)   -> the same decision on a given magic (tests; no Lustre here)
    python3 -m studies.storage.lustre DIR   # prints the magic and the decision; exit 1 when refused
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

from systems.minio.stack import LUSTRE_MAGIC

KEY = "storage.paths.lustre_dir"
# a few magics (linux/magic.h) so the message says what the directory is instead
KNOWN = {0xEF53: "ext2/3/4", 0x58465342: "xfs", 0x01021994: "tmpfs", 0x9123683E: "btrfs", 0x6969: "nfs",
         0x65735546: "fuse", 0x794C7630: "overlayfs", 0x00C36400: "ceph", 0x5346414F: "afs",
         0x47504653: "gpfs", 0x2FC12FC1: "zfs", 0x858458F6: "ramfs", 0x73717368: "squashfs",
         LUSTRE_MAGIC: "lustre"}


class _Statfs(ctypes.Structure):
    # struct statfs (Linux, 64-bit): f_type first, the rest is only room for the kernel to fill
    _fields_ = [("f_type", ctypes.c_long), ("_rest", ctypes.c_byte * 256)]


def fs_magic(path: str) -> int:
    """statfs(2)'s f_type of ``path`` (unsigned 32-bit, as linux/magic.h writes them)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    buf = _Statfs()
    if libc.statfs(os.fsencode(path), ctypes.byref(buf)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return buf.f_type & 0xFFFFFFFF


def name(magic: int) -> str:
    return KNOWN.get(magic, "unknown")


def refusal(path: str | None, magic: int | None = None) -> str | None:
    """None when ``path`` is on Lustre (its statfs magic is LUSTRE_MAGIC), else why not, naming the
    key; ``magic`` given: judge that magic instead of calling statfs (the directory is not read)."""
    if not path:
        return None
    if magic is None:
        p = os.path.expandvars(os.path.expanduser(str(path)))
        if not os.path.isdir(p):
            return (f"{KEY} = {path!r}: not a directory (set it to a directory on the site's Lustre file system, "
                    "or null: Lustre+MinIO not run on the cluster)")
        try:
            magic = fs_magic(p)
        except OSError as exc:
            return f"{KEY} = {path!r}: statfs failed ({exc})"
    if magic == LUSTRE_MAGIC:
        return None
    return (f"{KEY} = {path!r}: not on Lustre -- statfs magic {magic:#010x} ({name(magic)}), Lustre's is "
            f"{LUSTRE_MAGIC:#010x}; a directory on another file system would be measured and labelled Lustre "
            "(set it to a directory on the site's Lustre, or null: Lustre+MinIO not run)")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    why = refusal(argv[0])
    if why:
        print(why, file=sys.stderr)
        return 1
    print(f"{argv[0]}: Lustre (statfs magic {LUSTRE_MAGIC:#010x})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
