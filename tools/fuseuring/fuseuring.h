/* fuseuring: FUSE over io_uring for a libfuse 3.14 low-level file system.
 *
 * Debian 12's libfuse (3.14) only reads requests from /dev/fuse; the kernel
 * (>= 6.14, CONFIG_FUSE_IO_URING, module parameter enable_uring=Y) can instead
 * hand requests to per-CPU queues of io_uring commands (uAPI in
 * Documentation/filesystems/fuse-io-uring.rst).  This is the transport, ours:
 *
 *  - INIT is read from /dev/fuse as always; if the kernel offers
 *    FUSE_OVER_IO_URING, libfuse's reply is amended to accept it (libfuse 3.14
 *    cannot express a flags2 capability itself);
 *  - one thread per possible CPU (the kernel's queue count) sets up an io_uring
 *    (SQE128), registers DEPTH entries (a 288-byte header buffer and a payload
 *    buffer of max(max_write, max_pages pages)) with FUSE_IO_URING_CMD_REGISTER
 *    and serves each request it fetches with fuse_session_process_buf() on the
 *    request rebuilt in place (fuse_in_header and the per-op header are copied
 *    in front of the payload, no data is moved); libfuse's reply is captured
 *    through a custom-I/O writev and committed with
 *    FUSE_IO_URING_CMD_COMMIT_AND_FETCH;
 *  - /dev/fuse stays read by libfuse's own loop (FORGET and INTERRUPT always
 *    come that way, and everything does until every queue is registered).
 *
 * When the kernel or the module parameter does not allow it, the file system
 * keeps serving through /dev/fuse and fuseuring_message() says why.
 * Replies must be sent from the callback itself (every fuseceiling reply is). */
#ifndef FUSEURING_H
#define FUSEURING_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>

struct fuseuring;

/* Call after fuse_session_mount() (and fuse_daemonize()), before the session
 * loop.  Installs a pass-through custom I/O on `se`, processes the INIT request
 * (asking for io_uring if `want`), and registers the queues (DEPTH entries
 * each, 0 = default 4).  Never returns NULL unless out of memory; the session
 * is usable either way.  Prints what happened to stderr. */
struct fuseuring *fuseuring_start(struct fuse_session *se, int want, unsigned depth);

/* 1 when requests are served through the ring */
int fuseuring_active(const struct fuseuring *u);

/* "io_uring: N queues x D ..." or why not (the step and errno) */
const char *fuseuring_message(const struct fuseuring *u);

/* (u NULL: the one being started) a JSON object: {"transport":..., "queues":..., "depth":..., "ring_reqs":...,
 * "ring_errors":..., "offered":..., "enable_uring":..., "message":...} */
int fuseuring_json(const struct fuseuring *u, char *buf, size_t cap);

/* after the session loop: stop the queue threads */
void fuseuring_stop(struct fuseuring *u);

/* after fuseuring_stop and fuse_session_destroy (no request can come): the rings, their buffers and
 * u itself (a file system that mounts again in the same process; nothing if a thread did not end) */
void fuseuring_free(struct fuseuring *u);

/* the module parameter: 'Y', 'N', or '?' (not readable) */
char fuseuring_param(void);

#endif
