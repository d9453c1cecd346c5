/* MemFS daemon: what every part shares -- the configuration, the log, the
 * counters and the per-thread memcached handles.  The data path's interface
 * is io.h (io.c), the metadata's meta.h (meta.c); the FUSE operations
 * (memfs.c) use both, and io.c uses meta.h, never memfs.c's internals. */
#ifndef MEMFS_MEMFS_H
#define MEMFS_MEMFS_H

#include "common.h"

#include <pthread.h>
#include <stdarg.h>

#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))

/* ------------------------------------------------------------ configuration */
typedef struct {
    server_list sl;
    char        policy;      /* PLACE_SYMMETRIC / PLACE_LOCALITY            */
    int         local;       /* index of this node's server, -1 = none      */
    uint32_t    stripe_size;
    size_t      buffer_size; /* per open file (write buffer / read cache)   */
    int         threads;     /* per pool (write pool and read pool)         */
    int         dist;
    int         hash;        /* key hash for the modula distribution       */
    int         timeout_ms;
    int         verbose;
    char       *mountpoint;
    char       *servers_arg;
    int64_t     mount_time;
} memfs_cfg;
extern memfs_cfg C;

void memfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
    X(errors, storage) X(errors, metadata)

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
#define SS_ADD(i, f, v) \
    do { if ((i) >= 0 && (i) < C.sl.n) __atomic_fetch_add(&SS[(i)].f, (uint64_t)(v), __ATOMIC_RELAXED); } while (0)

void stats_init(void);
void stats_reset(void);
char *stats_json(size_t *len); /* malloc'd */

/* ------------------------------------------------- per-thread memcached */
typedef struct {
    memcached_st  *all;  /* all servers, hashed distribution */
    memcached_st **one;  /* one handle per server            */
} mc_ctx;

mc_ctx *ctx_new(void);
void    ctx_free(mc_ctx *c);
mc_ctx *tls_ctx(void);     /* lazily created per FUSE thread */
void    tls_init(void);

#endif
