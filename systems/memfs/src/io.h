/* MemFS data path (io.c): the thread pools, the open-file table, the write
 * and read handles with their stripe buffers, stripe fetch/delete and the
 * locality design's replication.  Record changes go through meta.h. */
#ifndef MEMFS_IO_H
#define MEMFS_IO_H

#include "conf.h"
#include "stats.h"

/* ---------------------------------------------------------- thread pools */
typedef struct job {
    struct job *next;
    void (*fn)(struct job *, mc_ctx *);
    uint64_t t_submit;   /* now_ns() at submission: queue-wait accounting */
} job;

void pools_start(void);
void pools_stop(void);
void wpool_submit(job *j);
void rpool_submit(job *j);

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
/* Like rhandle_read, into *mem (malloc'd, the caller frees it): a request of
 * exactly one whole stripe gets the stripe's own buffer (no copy). */
int      rhandle_read_buf(rhandle *h, char **mem, size_t size, off_t off);
const memfs_rec *rhandle_rec(rhandle *h);
void     rhandle_release(rhandle *h);

/* Fetch stripe n of a file (one memcached get, owners tried in order for
 * locality placement).  Returns 0 (data malloc'd) or an errno. */
int fetch_stripe(mc_ctx *c, const memfs_rec *rec, int pref, uint64_t n,
                 char **data, size_t *len);

/* Locality policy: copy all stripes of rec into server C.local and register
 * it as an owner.  On success rec->own gains C.local.  0 or errno. */
int replicate_file(const char *path, memfs_rec *rec);

#endif
