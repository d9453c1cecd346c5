/*
 * mpifuse - read-only MPI-backed FUSE file systems (One-Sided Reading,
 * refined One-Sided Reading, streaming broadcast, passthrough).
 *
 * Public C API of libmpifuse.so.  All calls are thread safe; start/stop are
 * collective over the communicator given to mpifuse_start().
 */
#ifndef MPIFUSE_H
#define MPIFUSE_H

#include <stddef.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIFUSE_VERSION "1.0.0"

/*
 * Mount SOURCE (a directory with the same content on every rank) read-only at
 * MOUNTPOINT and serve it in background threads of the calling process.
 * Collective over COMM (which is duplicated internally).  MPI must already be
 * initialised with at least MPI_THREAD_SERIALIZED (MPI_THREAD_MULTIPLE
 * recommended); if it is not initialised at all, it is initialised here with
 * MPI_THREAD_MULTIPLE (and never finalised by the library).
 *
 * mode:    "osr" | "osr-refined" | "bcast" | "passthrough"
 * options: comma separated key=value list (NULL or "" for defaults), e.g.
 *          "max_read=1048576,threads=on,timeout=60"; see README.md.
 *
 * Returns a handle >= 0 once the mount is live on every rank, or a negative
 * errno-style value on failure (on every rank: failure is agreed upon).
 */
int mpifuse_start(MPI_Comm comm, const char *mode, const char *source,
                  const char *mountpoint, const char *options);

/* Write this rank's statistics as a JSON object (NUL terminated) into buf.
 * Returns the JSON length, or -ENOSPC (buffer too small, nothing written
 * beyond len) / -EBADF (bad handle). 16 KiB is always enough. */
int mpifuse_stats_json(int h, char *buf, size_t len);

/* Reset this rank's counters and timers to zero (local, not collective). */
int mpifuse_stats_reset(int h);

/* 1 if the file system wants to stop (its mount was unmounted externally,
 * or another rank requested a shutdown), else 0. Local, non blocking. */
int mpifuse_should_stop(int h);

/* Ask every rank of the file system to stop (sets should_stop everywhere).
 * Local, non blocking; the ranks still have to call mpifuse_stop(). */
int mpifuse_request_shutdown(int h);

/* Unmount, join all threads, free windows and communicators.  Collective
 * over the communicator given to mpifuse_start(). Returns 0 on success. */
int mpifuse_stop(int h);

/* Mount point actually used by handle h (NULL if invalid). */
const char *mpifuse_mountpoint(int h);

#ifdef __cplusplus
}
#endif
#endif
