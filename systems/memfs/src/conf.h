/* MemFS daemon: what every part shares -- the configuration (filled in by
 * memfs.c's option parsing), the log and the per-thread memcached handles,
 * defined in conf.c.  The counters are stats.h (stats.c); the data path's
 * interface is io.h (io.c), the metadata's meta.h (meta.c); the FUSE
 * operations and main() (memfs.c) use all of them, and nothing uses memfs.c. */
#ifndef MEMFS_CONF_H
#define MEMFS_CONF_H

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
    int         direct_io;   /* --direct-io (ours, not the paper's): no page cache */
    int         writeback_cache; /* --writeback-cache (ours, not the paper's): asked for;
                                    2 once the kernel granted FUSE_CAP_WRITEBACK_CACHE */
    int         splice;      /* --splice (ours, not the paper's): replies through splice
                                (FUSE_CAP_SPLICE_WRITE|MOVE); 2 once granted */
    int         keep_buffers; /* --keep-buffers (ours): mallopt, no mmap/trim per stripe buffer */
    int         uring;       /* --transport io_uring (ours, issue 30): FUSE over io_uring
                                (tools/fuseuring); falls back to /dev/fuse and says why */
    size_t      readahead;   /* kernel readahead of the mount (bdi read_ahead_kb),
                                bytes; 0 = leave the kernel's default (128 KiB) */
    /* the FUSE connection as negotiated (refreshed when the stats are read) */
    unsigned    fuse_max_write, fuse_max_read, fuse_max_readahead, fuse_max_background;
    int         fuse_read_ahead_kb; /* the mount's bdi read_ahead_kb, -1 = unknown */
    char       *mountpoint;
    char       *servers_arg;
    int64_t     mount_time;
} memfs_cfg;
extern memfs_cfg C;

void memfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
