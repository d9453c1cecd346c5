/* MemFS FUSE daemon internals (shared between memfs.c, io.c, stats.c). */
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

/* ---------------------------------------------------------- thread pools */
typedef struct job {
    struct job *next;
    void (*fn)(struct job *, mc_ctx *);
} job;

void pools_start(void);
void pools_stop(void);
void wpool_submit(job *j);
void rpool_submit(job *j);
void rpool_submit_front(job *j);

/* -------------------------------------------------------- open-file table */
typedef struct ofile {
    uint64_t      gen;
    int           refs;
    int           unlinked;   /* delete stripes when the last handle goes */
    memfs_rec     rec;
    struct whandle *w;        /* this mount's writer, if any              */
    struct ofile *next;
} ofile;

ofile *ot_get(const memfs_rec *rec);
void   ot_put(ofile *of, uint64_t size_for_delete);
/* Returns 1 if the file is open on this mount (deletion is then deferred). */
int    ot_mark_unlinked(const memfs_rec *fresh);
/* Current size of a file being written through this mount, or -1. */
int64_t ot_writer_size(uint64_t gen);

void delete_stripes(mc_ctx *c, const memfs_rec *rec, uint64_t nstripes);

/* ------------------------------------------------------------- handles */
enum { H_READ = 1, H_WRITE = 2, H_STATS = 3 };

typedef struct { int kind; } hbase;

typedef struct whandle whandle;
typedef struct rhandle rhandle;

typedef struct {
    int    kind;
    char  *buf;
    size_t len;
} shandle;

whandle *whandle_new(const char *path, const memfs_rec *rec);
int      whandle_write(whandle *h, const char *buf, size_t size, off_t off);
int      whandle_flush(whandle *h);                     /* 0 or -errno */
int      whandle_read(whandle *h, char *buf, size_t size, off_t off);
int64_t  whandle_size(whandle *h);
const memfs_rec *whandle_rec(whandle *h);
int      whandle_release(whandle *h);                   /* 0 or -errno */

rhandle *rhandle_new(const char *path, const memfs_rec *rec, int pref_server);
int      rhandle_read(rhandle *h, char *buf, size_t size, off_t off);
const memfs_rec *rhandle_rec(rhandle *h);
void     rhandle_release(rhandle *h);

/* Fetch stripe n of a file (one memcached get, owners tried in order for
 * locality placement).  Returns 0 (data malloc'd) or an errno. */
int fetch_stripe(mc_ctx *c, const memfs_rec *rec, int pref, uint64_t n,
                 char **data, size_t *len);

/* Locality policy: copy all stripes of rec into server C.local and register
 * it as an owner.  On success rec->own gains C.local.  0 or errno. */
int replicate_file(const char *path, memfs_rec *rec);

/* Metadata helpers (memfs.c) */
int meta_get(mc_ctx *c, const char *path, memfs_rec *rec, uint64_t *cas);

#endif
