/* MemFS daemon's counters (stats.c): what the .stats file reports. */
#ifndef MEMFS_STATS_H
#define MEMFS_STATS_H

#include "conf.h"

/* ------------------------------------------------------------------ stats */
/* X(group, name): monotonically increasing counters, all reset together. */
#define MEMFS_COUNTERS(X)                                                    \
    X(io, bytes_written) X(io, bytes_read) X(io, write_calls)                 \
    X(io, read_calls)                                                        \
    X(stripes, set) X(stripes, get) X(stripes, bytes_set)                    \
    X(stripes, bytes_get) X(stripes, deleted) X(stripes, demand_fetches)     \
    X(stripes, prefetch_issued) X(stripes, prefetch_hits)                    \
    X(locality, gets_local) X(locality, gets_remote)                         \
    X(locality, replications) X(locality, replicated_stripes)                \
    X(locality, replicated_bytes) X(locality, replication_failures)          \
    X(meta_ops, getattr) X(meta_ops, readdir) X(meta_ops, mkdir)             \
    X(meta_ops, rmdir) X(meta_ops, create) X(meta_ops, open)                 \
    X(meta_ops, unlink) X(meta_ops, statfs) X(meta_ops, getxattr)            \
    X(meta_ops, flush) X(meta_ops, release) X(meta_ops, setattr)             \
    X(memcached_meta, get) X(memcached_meta, add) X(memcached_meta, set)     \
    X(memcached_meta, append) X(memcached_meta, cas)                         \
    X(memcached_meta, cas_conflicts) X(memcached_meta, delete)               \
    X(memcached_meta, compactions)                                           \
    X(errors, eio) X(errors, enospc) X(errors, write_once)                   \
    X(errors, missing_stripe) X(errors, bad_stripe_length)                   \
    X(errors, storage) X(errors, metadata)                                   \
    /* per-request breakdown of the data path (times in ns, CLOCK_MONOTONIC) */ \
    MEMFS_REQUESTS(X, fuse_read) X(fuse_read, zero_copy) X(fuse_read, ns)    \
    MEMFS_REQUESTS(X, fuse_write) X(fuse_write, ns)                          \
    X(copy, write_bytes) X(copy, read_bytes) X(copy, read_zero_copy_bytes)   \
    MEMFS_TIMED(X, mc_rtt, get) MEMFS_TIMED(X, mc_rtt, set)                  \
    MEMFS_POOL(X, write) MEMFS_POOL(X, read)                                 \
    X(pool, read_cancelled) X(pool, read_detached)                           \
    MEMFS_TIMED(X, wait, write_slot) MEMFS_TIMED(X, wait, read_stripe)       \
    MEMFS_TIMED(X, wait, inline_fetch) MEMFS_TIMED(X, wait, flush)           \
    MEMFS_TIMED(X, wait, release_read)                                       \
    X(lock, acquisitions) X(lock, wait_ns) X(lock, hold_ns)
/* The FUSE requests of one direction: how many, the bytes answered, and a histogram of the
 * requested sizes (COUNT_REQ in memfs.c). */
#define MEMFS_REQUESTS(X, dir)                                               \
    X(dir, count) X(dir, bytes) X(dir, le_128k) X(dir, le_512k) X(dir, le_1m) X(dir, gt_1m)
/* Timed events: how many, and the ns they took together. */
#define MEMFS_TIMED(X, group, what) X(group, what##_count) X(group, what##_ns)
/* The jobs of one thread pool: how many, and the ns they spent queued and running. */
#define MEMFS_POOL(X, dir) X(pool, dir##_jobs) X(pool, dir##_queue_ns) X(pool, dir##_run_ns)

typedef struct {
#define MEMFS_FIELD(g, n) uint64_t g##_##n;
    MEMFS_COUNTERS(MEMFS_FIELD)
#undef MEMFS_FIELD
} memfs_counters;

typedef struct {
    uint64_t stripes_set, stripes_get, bytes_set, bytes_get, errors;
} memfs_srv_counters;

extern memfs_counters S;
extern memfs_srv_counters *SS;   /* one per server */
extern int64_t G_open_read, G_open_write; /* gauges */

#define ST_ADD(f, v) __atomic_fetch_add(&S.f, (uint64_t)(v), __ATOMIC_RELAXED)
#define ST_INC(f) ST_ADD(f, 1)
#define ST_LOAD(f) __atomic_load_n(&S.f, __ATOMIC_RELAXED)

/* The per-file handle lock (h->mu), timed: wait_ns = time to acquire,
 * hold_ns = time held (a condition wait ends one hold and starts the next;
 * the time asleep is counted by the caller in a wait.* counter). */
static inline void tlock(pthread_mutex_t *mu, uint64_t *t)
{
    uint64_t t0 = now_ns();
    pthread_mutex_lock(mu);
    *t = now_ns();
    ST_INC(lock_acquisitions);
    ST_ADD(lock_wait_ns, *t - t0);
}
static inline void tunlock(pthread_mutex_t *mu, uint64_t t)
{
    ST_ADD(lock_hold_ns, now_ns() - t);
    pthread_mutex_unlock(mu);
}
/* pthread_cond_wait with the hold accounting; returns the ns asleep. */
static inline uint64_t tcondwait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t *t)
{
    uint64_t t0 = now_ns();
    ST_ADD(lock_hold_ns, t0 - *t);
    pthread_cond_wait(cv, mu);
    *t = now_ns();
    return *t - t0;
}
#define SS_ADD(i, f, v) \
    do { if ((i) >= 0 && (i) < C.sl.n) __atomic_fetch_add(&SS[(i)].f, (uint64_t)(v), __ATOMIC_RELAXED); } while (0)

void stats_init(void);
void stats_reset(void);
char *stats_json(size_t *len); /* malloc'd */

#endif
