#!/bin/sh
# tools/fuseceiling set-up: FUSE over io_uring (--transport io_uring, tools/fuseuring) needs the
# kernel's module parameter enable_uring=Y (off by default). Switch it on where this may (root, the
# parameter exists) and say what happened; never fail the set-up over it (the transport then falls
# back to /dev/fuse and says why). Idempotent.
p=/sys/module/fuse/parameters/enable_uring
if [ ! -e "$p" ]; then
    echo "enable_uring: no $p (a kernel without CONFIG_FUSE_IO_URING): --transport io_uring falls back to /dev/fuse"
    exit 0
fi
cur=$(cat "$p")
if [ "$cur" = Y ]; then
    echo "enable_uring: already Y ($p)"
elif (echo Y >"$p") 2>/dev/null; then
    echo "enable_uring: set to $(cat "$p") (was $cur) in $p"
else
    echo "enable_uring: $cur, and setting it to Y failed (root only): --transport io_uring falls back to /dev/fuse"
fi
exit 0
