/* MemFS data path: the write-buffering and prefetching thread pools, write handles (sequential write-once buffer),
 * read handles (stripe cache + sequential prefetch), replicate-on-read for
 * the locality policy. */
#include "io.h"
#include "meta.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------- thread pools */
typedef struct {
    const char     *name;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    job            *head, *tail;
    int             stop, n;
    pthread_t      *th;
} pool;

static pool WP = { "write", PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0 };
static pool RP = { "read", PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0 };

static void *pool_main(void *arg)
{
    pool *p = arg;
    mc_ctx *c = ctx_new();
    if (!c) {
        memfs_log("%s pool: cannot create memcached handles", p->name);
        abort();
    }
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
        if (!p->head && p->stop) break;
        job *j = p->head;
        p->head = j->next;
        if (!p->head) p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        uint64_t t0 = now_ns(), q = t0 - j->t_submit;
        j->fn(j, c); /* j may be freed by fn (a detached read handle) */
        uint64_t run = now_ns() - t0;
        if (p == &WP) {
            ST_INC(pool_write_jobs);
            ST_ADD(pool_write_queue_ns, q);
            ST_ADD(pool_write_run_ns, run);
        } else {
            ST_INC(pool_read_jobs);
            ST_ADD(pool_read_queue_ns, q);
            ST_ADD(pool_read_run_ns, run);
        }
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    ctx_free(c);
    return NULL;
}

static void pool_start(pool *p, int n)
{
    p->n = n;
    p->stop = 0;
    p->th = calloc((size_t)n, sizeof *p->th);
    for (int i = 0; i < n; i++) pthread_create(&p->th[i], NULL, pool_main, p);
}

static void pool_stop(pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++) pthread_join(p->th[i], NULL);
    free(p->th);
    p->th = NULL;
    p->n = 0;
}

static void pool_submit(pool *p, job *j, int front)
{
    j->next = NULL;
    j->t_submit = now_ns();
    pthread_mutex_lock(&p->mu);
    if (front && p->head) {
        j->next = p->head;
        p->head = j;
    } else {
        if (p->tail) p->tail->next = j;
        else p->head = j;
        p->tail = j;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void pools_start(void)
{
    pool_start(&WP, C.threads);
    pool_start(&RP, C.threads);
}

void pools_stop(void)
{
    pool_stop(&WP);
    pool_stop(&RP);
}

/* Unlink every queued (not yet started) job for which match() is true;
 * returns how many.  Lock order: a handle's mutex, then the pool's. */
static int pool_cancel(pool *p, int (*match)(job *, void *), void *arg)
{
    int n = 0;
    pthread_mutex_lock(&p->mu);
    job *prev = NULL;
    for (job *j = p->head; j;) {
        job *next = j->next;
        if (match(j, arg)) {
            if (prev) prev->next = next;
            else p->head = next;
            if (p->tail == j) p->tail = prev;
            n++;
        } else {
            prev = j;
        }
        j = next;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

void wpool_submit(job *j) { pool_submit(&WP, j, 0); }
void rpool_submit(job *j) { pool_submit(&RP, j, 0); }

/* -------------------------------------------------------- open-file table */
static pthread_mutex_t ot_mu = PTHREAD_MUTEX_INITIALIZER;
static ofile *ot_head;

ofile *ot_get(const memfs_rec *rec)
{
    pthread_mutex_lock(&ot_mu);
    ofile *of;
    for (of = ot_head; of; of = of->next)
        if (of->gen == rec->gen) break;
    if (!of) {
        of = calloc(1, sizeof *of);
        of->gen = rec->gen;
        of->rec = *rec;
        of->next = ot_head;
        ot_head = of;
    }
    of->refs++;
    pthread_mutex_unlock(&ot_mu);
    return of;
}

void ot_put(ofile *of, uint64_t size_for_delete)
{
    pthread_mutex_lock(&ot_mu);
    int last = --of->refs == 0;
    if (last) {
        for (ofile **pp = &ot_head; *pp; pp = &(*pp)->next)
            if (*pp == of) {
                *pp = of->next;
                break;
            }
    }
    pthread_mutex_unlock(&ot_mu);
    if (!last) return;
    if (of->unlinked) {
        memfs_rec r = of->rec;
        if (size_for_delete > r.size) r.size = size_for_delete;
        delete_stripes(tls_ctx(), &r, rec_nstripes(&r));
    }
    free(of);
}

int ot_mark_unlinked(const memfs_rec *fresh)
{
    int found = 0;
    pthread_mutex_lock(&ot_mu);
    for (ofile *of = ot_head; of; of = of->next)
        if (of->gen == fresh->gen) {
            of->unlinked = 1;
            found = 1;
            /* replicas registered since open must be deleted too */
            if (fresh->nown > of->rec.nown) {
                of->rec.nown = fresh->nown;
                memcpy(of->rec.own, fresh->own, sizeof fresh->own);
            }
            if (fresh->size > of->rec.size) of->rec.size = fresh->size;
        }
    pthread_mutex_unlock(&ot_mu);
    return found;
}

int64_t ot_writer_size(uint64_t gen)
{
    int64_t sz = -1;
    pthread_mutex_lock(&ot_mu);
    for (ofile *of = ot_head; of; of = of->next)
        if (of->gen == gen && of->w) {
            sz = whandle_size(of->w);
            break;
        }
    pthread_mutex_unlock(&ot_mu);
    return sz;
}

void delete_stripes(mc_ctx *c, const memfs_rec *rec, uint64_t nstripes)
{
    char key[MEMFS_KEY_MAX + 8];
    for (uint64_t n = 0; n < nstripes; n++) {
        size_t kl = key_stripe(key, sizeof key, rec->base, n);
        if (!kl) return;
        if (rec->place == PLACE_LOCALITY) {
            for (int i = 0; i < rec->nown; i++) {
                int o = rec->own[i];
                if (o < 0 || o >= C.sl.n) continue;
                if (memcached_delete(c->one[o], key, kl, 0) == MEMCACHED_SUCCESS)
                    ST_INC(stripes_deleted);
            }
        } else if (memcached_delete(c->all, key, kl, 0) == MEMCACHED_SUCCESS) {
            ST_INC(stripes_deleted);
        }
    }
}

/* ------------------------------------------------------------ stripe I/O */
static void count_get(int srv, size_t len)
{
    ST_INC(stripes_get);
    ST_ADD(stripes_bytes_get, len);
    SS_ADD(srv, stripes_get, 1);
    SS_ADD(srv, bytes_get, len);
    if (C.local >= 0) {
        if (srv == C.local) ST_INC(locality_gets_local);
        else ST_INC(locality_gets_remote);
    }
}

static void count_set(int srv, size_t len)
{
    ST_INC(stripes_set);
    ST_ADD(stripes_bytes_set, len);
    SS_ADD(srv, stripes_set, 1);
    SS_ADD(srv, bytes_set, len);
}

static int storage_errno(memcached_return_t rc)
{
    int e = mc_errno(rc);
    if (e == ENOSPC || e == EFBIG) {
        ST_INC(errors_enospc);
        return ENOSPC;
    }
    ST_INC(errors_storage);
    return EIO;
}

int fetch_stripe(mc_ctx *c, const memfs_rec *rec, int pref, uint64_t n,
                 char **data, size_t *len)
{
    char key[MEMFS_KEY_MAX + 8];
    size_t kl = key_stripe(key, sizeof key, rec->base, n);
    uint64_t want = rec_stripe_len(rec, n);
    *data = NULL;
    *len = 0;
    if (!kl) return EIO;
    int order[MEMFS_MAX_OWNERS + 1], no = 0;
    if (rec->place == PLACE_LOCALITY) {
        if (pref >= 0 && rec_has_owner(rec, pref)) order[no++] = pref;
        for (int i = 0; i < rec->nown; i++)
            if (rec->own[i] != pref && rec->own[i] >= 0 && rec->own[i] < C.sl.n)
                order[no++] = rec->own[i];
        if (!no) {
            memfs_log("stripe %" PRIu64 " of %s: no valid owner", n, rec->base);
            return EIO;
        }
    } else {
        order[no++] = -1;
    }
    int err = EIO;
    for (int i = 0; i < no; i++) {
        int srv = order[i];
        memcached_st *m = srv < 0 ? c->all : c->one[srv];
        if (srv < 0) srv = (int)memcached_generate_hash(c->all, key, kl);
        memcached_return_t rc;
        uint32_t flags;
        size_t vl = 0;
        uint64_t t0 = now_ns();
        char *v = memcached_get(m, key, kl, &vl, &flags, &rc);
        ST_INC(mc_rtt_get_count);
        ST_ADD(mc_rtt_get_ns, now_ns() - t0);
        if (rc == MEMCACHED_SUCCESS && v && vl == want) {
            count_get(srv, vl);
            *data = v;
            *len = vl;
            return 0;
        }
        if (rc == MEMCACHED_SUCCESS) {
            ST_INC(errors_bad_stripe_length);
            memfs_log("stripe %s on %s has %zu bytes, expected %" PRIu64 ": EIO", key,
                      C.sl.spec[srv], vl, want);
        } else if (rc == MEMCACHED_NOTFOUND) {
            ST_INC(errors_missing_stripe);
            memfs_log("stripe %s missing on %s: EIO", key, C.sl.spec[srv]);
        } else {
            ST_INC(errors_storage);
            SS_ADD(srv, errors, 1);
            memfs_log("get %s from %s failed: %s", key, C.sl.spec[srv], memcached_strerror(m, rc));
        }
        free(v);
        err = EIO;
    }
    return err;
}

/* ============================================================ write path */
enum { W_FREE, W_FILLING, W_INFLIGHT };

/* The head both open-file handles start with (hbase in io.h is its first field: memfs.c tells
 * them apart by kind), its initialisation (path copied, record copied), and the freeing of a
 * handle: its slots' buffers (field buf of each of its nslots slots), then the head, then h. */
#define HANDLE_HEAD                                                                           \
    int             kind;                                                                     \
    pthread_mutex_t mu;                                                                       \
    pthread_cond_t  cv;                                                                       \
    char           *path;                                                                     \
    memfs_rec       rec;                                                                      \
    ofile          *of;
#define HANDLE_INIT(h, k, p, r)                                                               \
    do {                                                                                      \
        (h)->kind = (k);                                                                      \
        pthread_mutex_init(&(h)->mu, NULL);                                                   \
        pthread_cond_init(&(h)->cv, NULL);                                                    \
        (h)->path = strdup(p);                                                                \
        (h)->rec = *(r);                                                                      \
    } while (0)
#define HANDLE_FREE(h, buf)                                                                   \
    do {                                                                                      \
        for (int i_ = 0; i_ < (h)->nslots; i_++) free((h)->slots[i_].buf);                    \
        free((h)->slots);                                                                     \
        free((h)->path);                                                                      \
        pthread_mutex_destroy(&(h)->mu);                                                      \
        pthread_cond_destroy(&(h)->cv);                                                       \
        free(h);                                                                              \
    } while (0)

typedef struct {
    char    *buf;
    size_t   len;
    uint64_t stripe;
    int      state;
    int      keep;    /* after storing, keep filling (partial tail stripe) */
    whandle *h;
    job      j;
} wslot;

struct whandle {
    HANDLE_HEAD
    int             srv;            /* locality: the server holding all stripes */
    uint64_t        size;           /* bytes accepted so far                     */
    uint64_t        published_size;
    int             published;
    int             nslots;
    wslot          *slots;
    int             cur;            /* slot being filled, -1 if none             */
    size_t          tail_stored;    /* bytes of the cur slot already stored      */
    int             inflight;
    int             err;            /* sticky errno of the first failed set      */
    int             busy;           /* a write/flush is running on this handle   */
};

static void wjob_fn(job *j, mc_ctx *c)
{
    wslot *s = container_of(j, wslot, j);
    whandle *h = s->h;
    char key[MEMFS_KEY_MAX + 8];
    size_t kl = key_stripe(key, sizeof key, h->rec.base, s->stripe);
    memcached_st *m;
    int srv;
    if (h->rec.place == PLACE_LOCALITY) {
        srv = h->srv;
        m = c->one[srv];
    } else {
        m = c->all;
        srv = (int)memcached_generate_hash(c->all, key, kl);
    }
    uint64_t t0 = now_ns();
    memcached_return_t rc = kl ? memcached_set(m, key, kl, s->buf, s->len, 0, 0) : MEMCACHED_FAILURE;
    ST_INC(mc_rtt_set_count);
    ST_ADD(mc_rtt_set_ns, now_ns() - t0);
    int err = 0;
    if (rc == MEMCACHED_SUCCESS) {
        count_set(srv, s->len);
    } else {
        err = storage_errno(rc);
        SS_ADD(srv, errors, 1);
        memfs_log("set %s (%zu bytes) on %s failed: %s -> %s", key, s->len, C.sl.spec[srv],
                  memcached_strerror(m, rc), strerror(err));
    }
    uint64_t lt;
    tlock(&h->mu, &lt);
    if (err && !h->err) h->err = err;
    s->state = s->keep ? W_FILLING : W_FREE;
    h->inflight--;
    pthread_cond_broadcast(&h->cv);
    tunlock(&h->mu, lt);
}

static void wsubmit(whandle *h, wslot *s, int keep)
{
    s->state = W_INFLIGHT;
    s->keep = keep;
    s->h = h;
    s->j.fn = wjob_fn;
    h->inflight++;
    wpool_submit(&s->j);
}

whandle *whandle_new(const char *path, const memfs_rec *rec)
{
    whandle *h = calloc(1, sizeof *h);
    HANDLE_INIT(h, H_WRITE, path, rec);
    h->srv = rec->nown ? rec->own[0] : -1;
    h->nslots = (int)(C.buffer_size / rec->ss);
    if (h->nslots < 2) h->nslots = 2;
    h->slots = calloc((size_t)h->nslots, sizeof *h->slots);
    h->cur = -1;
    h->of = ot_get(rec);
    pthread_mutex_lock(&ot_mu);
    h->of->w = h;
    pthread_mutex_unlock(&ot_mu);
    __atomic_fetch_add(&G_open_write, 1, __ATOMIC_RELAXED);
    return h;
}

int64_t whandle_size(whandle *h) { return (int64_t)__atomic_load_n(&h->size, __ATOMIC_RELAXED); }
const memfs_rec *whandle_rec(whandle *h) { return &h->rec; }

static void wait_not_busy(whandle *h, uint64_t *lt)
{
    while (h->busy) tcondwait(&h->cv, &h->mu, lt);
}

int whandle_write(whandle *h, const char *buf, size_t size, off_t off)
{
    uint64_t lt;
    tlock(&h->mu, &lt);
    wait_not_busy(h, &lt);
    if (h->err) {
        int e = h->err;
        tunlock(&h->mu, lt);
        return -e;
    }
    if (C.writeback_cache == 2 && (uint64_t)off > h->size) {
        /* --writeback-cache: the kernel writes dirty pages back in several
         * concurrent WRITE requests, which FUSE threads may hand us out of
         * order.  Wait (bounded) for the bytes before this one to arrive. */
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 10;
        int rc = 0;
        while ((uint64_t)off > h->size && !h->err && rc != ETIMEDOUT) {
            uint64_t t0 = now_ns();
            ST_ADD(lock_hold_ns, t0 - lt);
            rc = pthread_cond_timedwait(&h->cv, &h->mu, &dl);
            lt = now_ns();
            wait_not_busy(h, &lt);
        }
        if (!h->err && (uint64_t)off > h->size) {
            h->err = EIO; /* sticky: close() fails and the file is not sealed */
            uint64_t cur = h->size;
            tunlock(&h->mu, lt);
            ST_INC(errors_write_once);
            memfs_log("write-once (writeback cache): %s: write at offset %lld, but the bytes "
                      "from %" PRIu64 " never arrived (a hole?): EIO, file left unsealed",
                      h->path, (long long)off, cur);
            return -EIO;
        }
        if (h->err) {
            int e = h->err;
            tunlock(&h->mu, lt);
            return -e;
        }
    }
    if (C.writeback_cache == 2 && (uint64_t)off < h->size && h->cur >= 0 &&
        (uint64_t)off >= h->slots[h->cur].stripe * h->rec.ss) {
        /* --writeback-cache: a page written back again (the partial last
         * page, re-dirtied by the next write).  It is still in the unsent
         * tail slot: overwrite it there, then append the rest. */
        wslot *s = &h->slots[h->cur];
        uint64_t base = s->stripe * h->rec.ss, in = (uint64_t)off - base;
        size_t n = (size_t)(h->size - (uint64_t)off);
        if (n > size) n = size;
        memcpy(s->buf + in, buf, n);
        ST_ADD(copy_write_bytes, n);
        if (h->tail_stored > in) h->tail_stored = in; /* flush stores it again */
        if (n == size) {
            tunlock(&h->mu, lt);
            ST_ADD(io_bytes_written, n);
            return (int)n;
        }
        int r = (int)n;
        tunlock(&h->mu, lt);
        int r2 = whandle_write(h, buf + n, size - n, off + (off_t)n);
        return r2 < 0 ? r2 : r + r2;
    }
    if ((uint64_t)off != h->size) {
        uint64_t cur = h->size;
        int wb = C.writeback_cache == 2;
        if (wb && !h->err) h->err = EIO; /* the kernel's error is only seen at close */
        tunlock(&h->mu, lt);
        ST_INC(errors_write_once);
        memfs_log("write-once: %s: non-sequential write at offset %lld (file has %" PRIu64
                  " bytes; only appending writes are allowed): %s",
                  h->path, (long long)off, cur,
                  wb ? "EIO (writeback cache: file left unsealed)" : "EROFS");
        return wb ? -EIO : -EROFS;
    }
    h->busy = 1;
    size_t done = 0;
    while (done < size) {
        if (h->cur < 0) {
            int f = -1;
            for (;;) {
                for (int i = 0; i < h->nslots; i++)
                    if (h->slots[i].state == W_FREE) {
                        f = i;
                        break;
                    }
                if (f >= 0 || h->err) break;
                ST_INC(wait_write_slot_count); /* back-pressure: all slots in flight */
                ST_ADD(wait_write_slot_ns, tcondwait(&h->cv, &h->mu, &lt));
            }
            if (h->err) break;
            wslot *s = &h->slots[f];
            if (!s->buf) {
                s->buf = malloc(h->rec.ss);
                if (!s->buf) {
                    h->err = ENOMEM;
                    break;
                }
            }
            s->stripe = h->size / h->rec.ss;
            s->len = 0;
            s->state = W_FILLING;
            h->cur = f;
            h->tail_stored = 0;
        }
        wslot *s = &h->slots[h->cur];
        size_t n = h->rec.ss - s->len;
        if (n > size - done) n = size - done;
        /* copy without the lock: a W_FILLING slot belongs to this writer
         * (busy keeps other writes/flushes out), so the pool threads that
         * finish stripes do not wait for the copy */
        tunlock(&h->mu, lt);
        memcpy(s->buf + s->len, buf + done, n);
        ST_ADD(copy_write_bytes, n);
        tlock(&h->mu, &lt);
        s->len += n;
        done += n;
        __atomic_store_n(&h->size, h->size + n, __ATOMIC_RELAXED);
        if (s->len == h->rec.ss) {
            wsubmit(h, s, 0);
            h->cur = -1;
        }
    }
    h->busy = 0;
    int err = h->err;
    pthread_cond_broadcast(&h->cv);
    tunlock(&h->mu, lt);
    ST_ADD(io_bytes_written, done);
    if (done < size && err) return done ? (int)done : -err;
    return (int)done;
}

/* Publish size (and with seal, state 'c') in the file's metadata record with
 * CAS.  flush() publishes the size; release() (the last close) seals.  If the
 * record is gone or belongs to another generation, the file was unlinked
 * while being written: its stripes are deleted when the handle goes. */
typedef struct {
    const whandle *h;
    uint64_t       size;
    int            seal;
} publish_arg;

static int publish_edit(memfs_rec *r, void *arg)
{
    const publish_arg *p = arg;
    if (r->type != 'f' || r->gen != p->h->rec.gen) return ESTALE; /* another file now */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (p->h->rec.place == PLACE_LOCALITY && r->size != p->size) {
        /* new content: only the writer's copy is valid */
        r->nown = 1;
        r->own[0] = p->h->srv;
    }
    if (p->seal) r->state = 'c';
    r->size = p->size;
    r->mt_sec = ts.tv_sec;
    r->mt_nsec = ts.tv_nsec;
    return 0;
}

static int publish(whandle *h, uint64_t size, int seal)
{
    publish_arg p = {h, size, seal};
    int err = meta_update(tls_ctx(), h->path, publish_edit, &p, NULL);
    if (err == ENOENT || err == ESTALE) {
        pthread_mutex_lock(&ot_mu);
        h->of->unlinked = 1; /* stripes are deleted when the handle is released */
        pthread_mutex_unlock(&ot_mu);
        return 0;
    }
    if (err) memfs_log("publish %s: %s", h->path, strerror(err));
    return err;
}

static int wflush(whandle *h, int seal)
{
    uint64_t lt, t0 = now_ns();
    tlock(&h->mu, &lt);
    wait_not_busy(h, &lt);
    h->busy = 1;
    wslot *tail = h->cur >= 0 ? &h->slots[h->cur] : NULL;
    if (tail && tail->len > h->tail_stored && !h->err) wsubmit(h, tail, 1);
    /* the design's durability point: every buffered stripe is stored */
    while (h->inflight) tcondwait(&h->cv, &h->mu, &lt);
    ST_INC(wait_flush_count);
    ST_ADD(wait_flush_ns, now_ns() - t0);
    if (tail && !h->err) h->tail_stored = tail->len;
    int err = h->err;
    uint64_t size = h->size;
    int need = !err && (seal || !h->published || h->published_size != size);
    tunlock(&h->mu, lt);
    if (need) {
        err = publish(h, size, seal);
        if (!err) {
            h->published = 1;
            h->published_size = size;
        }
    }
    tlock(&h->mu, &lt);
    h->busy = 0;
    pthread_cond_broadcast(&h->cv);
    tunlock(&h->mu, lt);
    if (err) {
        if (err == EIO) ST_INC(errors_eio);
        memfs_log("flush/close %s: data not fully stored: %s", h->path, strerror(err));
    }
    return -err;
}

/* Reading through a handle created for writing (O_RDWR): stored stripes are
 * fetched, the partial tail comes from the buffer. */
int whandle_read(whandle *h, char *buf, size_t size, off_t off)
{
    uint64_t lt;
    tlock(&h->mu, &lt);
    wait_not_busy(h, &lt);
    h->busy = 1;
    while (h->inflight) tcondwait(&h->cv, &h->mu, &lt);
    int err = h->err;
    memfs_rec r = h->rec;
    r.size = h->size;
    tunlock(&h->mu, lt);
    size_t done = 0;
    while (!err && (uint64_t)off + done < r.size && done < size) {
        uint64_t o = (uint64_t)off + done, n = o / r.ss, in = o % r.ss;
        size_t chunk = (size_t)(r.ss - in);
        if (chunk > size - done) chunk = size - done;
        if (o + chunk > r.size) chunk = (size_t)(r.size - o);
        wslot *tail = h->cur >= 0 ? &h->slots[h->cur] : NULL;
        if (tail && tail->stripe == n) {
            memcpy(buf + done, tail->buf + in, chunk);
        } else {
            char *d;
            size_t dl;
            err = fetch_stripe(tls_ctx(), &r, h->srv, n, &d, &dl);
            if (err) break;
            memcpy(buf + done, d + in, chunk);
            free(d);
        }
        ST_ADD(copy_read_bytes, chunk);
        done += chunk;
    }
    tlock(&h->mu, &lt);
    h->busy = 0;
    pthread_cond_broadcast(&h->cv);
    tunlock(&h->mu, lt);
    if (err) { /* no short reads on error (see rhandle_read) */
        ST_INC(errors_eio);
        return -err;
    }
    ST_ADD(io_bytes_read, done);
    return (int)done;
}

int whandle_flush(whandle *h) { return wflush(h, 0); }

int whandle_release(whandle *h)
{
    int r = wflush(h, 1);
    pthread_mutex_lock(&ot_mu);
    h->of->w = NULL;
    pthread_mutex_unlock(&ot_mu);
    ot_put(h->of, h->size);
    HANDLE_FREE(h, buf);
    __atomic_fetch_sub(&G_open_write, 1, __ATOMIC_RELAXED);
    return r;
}

/* ============================================================= read path */
enum { R_EMPTY, R_LOADING, R_READY, R_ERROR };

typedef struct {
    int64_t  stripe;
    int      state;
    int      prefetched;
    int      err;
    uint32_t seq;      /* bumped on (re)use: stale job results are dropped */
    char    *data;
    size_t   len;
    uint64_t lru;
    rhandle *h;
    job      j;
} rslot;

struct rhandle {
    HANDLE_HEAD
    int             pref;      /* preferred owner (locality placement) */
    int             nslots;
    rslot          *slots;
    int             inflight;  /* pool jobs queued or running              */
    int             inline_n;  /* demand fetches running in FUSE threads   */
    int64_t         last;      /* last stripe read, -1 initially */
    int             closing;   /* released: queued prefetches are skipped */
    int             detached;  /* released with jobs running: the last frees it */
    int64_t         gone[32];  /* stripes recently handed to the kernel (zero */
    unsigned        ngone;     /* copy): not prefetched again                 */
    uint64_t        tick;
    uint64_t        nstripes;
};

static void rfree(rhandle *h) { HANDLE_FREE(h, data); }

static void rinstall(rslot *s, uint32_t seq, int err, char *d, size_t dl)
{
    if (s->seq == seq && s->state == R_LOADING) {
        if (err) {
            s->state = R_ERROR;
            s->err = err;
            free(d);
        } else {
            s->state = R_READY;
            s->data = d;
            s->len = dl;
        }
    } else {
        free(d);
    }
}

static void rjob_fn(job *j, mc_ctx *c)
{
    rslot *s = container_of(j, rslot, j);
    rhandle *h = s->h;
    uint64_t lt;
    tlock(&h->mu, &lt);
    int64_t n = s->stripe;
    uint32_t seq = s->seq;
    int skip = h->closing;
    tunlock(&h->mu, lt);
    char *d = NULL;
    size_t dl = 0;
    int err = skip ? ECANCELED : fetch_stripe(c, &h->rec, h->pref, (uint64_t)n, &d, &dl);
    tlock(&h->mu, &lt);
    rinstall(s, seq, err, d, dl);
    h->inflight--;
    int last = h->detached && h->inflight == 0;
    pthread_cond_broadcast(&h->cv);
    tunlock(&h->mu, lt);
    if (last) rfree(h); /* close() did not wait for this prefetch */
}

rhandle *rhandle_new(const char *path, const memfs_rec *rec, int pref)
{
    rhandle *h = calloc(1, sizeof *h);
    HANDLE_INIT(h, H_READ, path, rec);
    h->pref = pref;
    h->nstripes = rec_nstripes(rec);
    h->nslots = (int)(C.buffer_size / rec->ss);
    if (h->nslots < 2) h->nslots = 2;
    h->slots = calloc((size_t)h->nslots, sizeof *h->slots);
    for (int i = 0; i < h->nslots; i++) {
        h->slots[i].stripe = -1;
        h->slots[i].h = h;
        h->slots[i].j.fn = rjob_fn;
    }
    h->last = -1;
    for (int i = 0; i < 32; i++) h->gone[i] = -1;
    h->of = ot_get(rec);
    __atomic_fetch_add(&G_open_read, 1, __ATOMIC_RELAXED);
    return h;
}

const memfs_rec *rhandle_rec(rhandle *h) { return &h->rec; }

static rslot *rfind(rhandle *h, int64_t n)
{
    for (int i = 0; i < h->nslots; i++)
        if (h->slots[i].stripe == n && h->slots[i].state != R_EMPTY) return &h->slots[i];
    return NULL;
}

static void rdrop(rslot *s)
{
    free(s->data);
    s->data = NULL;
    s->len = 0;
    s->state = R_EMPTY;
    s->stripe = -1;
    s->seq++;
}

/* A slot to (re)use for stripe n.  protect_lo..protect_hi are never evicted
 * (the current prefetch window).  Returns NULL if all slots are busy. */
static rslot *rvictim(rhandle *h, int64_t protect_lo, int64_t protect_hi)
{
    rslot *best = NULL;
    for (int i = 0; i < h->nslots; i++) {
        rslot *s = &h->slots[i];
        if (s->state == R_EMPTY) return s;
        if (s->state == R_LOADING) continue;
        if (s->stripe >= protect_lo && s->stripe <= protect_hi) continue;
        if (!best || s->lru < best->lru) best = s;
    }
    return best;
}

/* Claim slot s for stripe n (state R_LOADING). */
static void rclaim(rhandle *h, rslot *s, int64_t n, int prefetched)
{
    if (s->state != R_EMPTY) rdrop(s);
    s->stripe = n;
    s->state = R_LOADING;
    s->prefetched = prefetched;
    s->err = 0;
    s->lru = ++h->tick;
}

/* A prefetch: fetched by the read pool. */
static void rstart(rhandle *h, rslot *s, int64_t n)
{
    rclaim(h, s, n, 1);
    h->inflight++;
    rpool_submit(&s->j);
}


static void rprefetch(rhandle *h, int64_t n)
{
    int64_t hi = n + (h->nslots > 3 ? h->nslots - 2 : 1); /* keep a slot for stripe n-1 */
    for (int64_t t = n + 1; t <= hi && (uint64_t)t < h->nstripes; t++) {
        if (rfind(h, t)) continue;
        int gone = 0; /* already handed over: requests can arrive out of order */
        for (int i = 0; i < 32; i++) gone |= h->gone[i] == t;
        if (gone) continue;
        rslot *v = rvictim(h, n - 1, hi);
        if (!v) break;
        ST_INC(stripes_prefetch_issued);
        rstart(h, v, t);
    }
}

/* Read [off, off+size) into *bufp.  If *bufp is NULL, it is malloc'd here
 * -- unless the request is exactly one whole cached stripe: then the stripe's
 * buffer itself is handed over (no memcpy) and leaves the cache (a
 * sequential reader does not come back to it; a re-read fetches it again). */
static int rread(rhandle *h, char **bufp, size_t size, off_t off)
{
    if ((uint64_t)off >= h->rec.size || size == 0) return 0;
    if ((uint64_t)off + size > h->rec.size) size = (size_t)(h->rec.size - (uint64_t)off);
    char *buf = *bufp;
    int own = buf == NULL;
    size_t done = 0;
    int err = 0;
    uint64_t lt;
    tlock(&h->mu, &lt);
    while (done < size) {
        uint64_t o = (uint64_t)off + done;
        int64_t n = (int64_t)(o / h->rec.ss);
        size_t in = (size_t)(o % h->rec.ss);
        int sequential = (h->last < 0 && n == 0) || n == h->last || n == h->last + 1;
        rslot *s = rfind(h, n);
        if (!s) {
            s = rvictim(h, n, n);
            if (!s) { /* all slots loading: wait for one */
                ST_INC(wait_read_stripe_count);
                ST_ADD(wait_read_stripe_ns, tcondwait(&h->cv, &h->mu, &lt));
                continue;
            }
            /* Demand fetch, inline in this FUSE thread (no pool queue in
             * front of a waiting reader); the prefetches of the following
             * stripes are queued first so that the pool overlaps them. */
            ST_INC(stripes_demand_fetches);
            rclaim(h, s, n, 0);
            uint32_t sq = s->seq;
            if (sequential) rprefetch(h, n);
            h->inline_n++;
            tunlock(&h->mu, lt);
            uint64_t t0 = now_ns();
            char *d = NULL;
            size_t dl = 0;
            int e = fetch_stripe(tls_ctx(), &h->rec, h->pref, (uint64_t)n, &d, &dl);
            ST_INC(wait_inline_fetch_count);
            ST_ADD(wait_inline_fetch_ns, now_ns() - t0);
            tlock(&h->mu, &lt);
            h->inline_n--;
            rinstall(s, sq, e, d, dl);
            pthread_cond_broadcast(&h->cv);
            continue; /* re-find */
        }
        if (sequential) rprefetch(h, n);
        if (s->state == R_LOADING) {
            ST_INC(wait_read_stripe_count);
            ST_ADD(wait_read_stripe_ns, tcondwait(&h->cv, &h->mu, &lt));
            continue; /* re-find: the slot may have been reused meanwhile */
        }
        if (s->state == R_ERROR) {
            err = s->err ? s->err : EIO;
            rdrop(s); /* a later read retries */
            break;
        }
        if (s->prefetched) {
            ST_INC(stripes_prefetch_hits);
            s->prefetched = 0;
        }
        size_t chunk = s->len - in;
        if (chunk > size - done) chunk = size - done;
        if (own && !done && !in && chunk == s->len && chunk == size) {
            buf = s->data; /* zero copy: the whole request is this stripe */
            s->data = NULL;
            rdrop(s);
            h->gone[h->ngone++ % 32] = n;
            ST_INC(fuse_read_zero_copy);
            ST_ADD(copy_read_zero_copy_bytes, chunk);
            done = chunk;
            h->last = n;
            break;
        }
        if (!buf && !(buf = malloc(size))) {
            err = ENOMEM;
            break;
        }
        memcpy(buf + done, s->data + in, chunk);
        ST_ADD(copy_read_bytes, chunk);
        done += chunk;
        s->lru = ++h->tick;
        h->last = n;
    }
    tunlock(&h->mu, lt);
    if (err && own) {
        free(buf);
        buf = NULL;
    }
    *bufp = buf;
    if (err) {
        /* Never return a short read on error: FUSE takes a short read as
         * end-of-file and would shrink the cached file size (silent
         * truncation).  The whole request fails instead. */
        ST_INC(errors_eio);
        return -err;
    }
    ST_ADD(io_bytes_read, done);
    return (int)done;
}

int rhandle_read(rhandle *h, char *buf, size_t size, off_t off)
{
    return rread(h, &buf, size, off);
}

int rhandle_read_buf(rhandle *h, char **mem, size_t size, off_t off)
{
    *mem = NULL;
    return rread(h, mem, size, off);
}

static int rjob_of(job *j, void *h)
{
    return j->fn == rjob_fn && container_of(j, rslot, j)->h == h;
}

/* close() of a read handle does not wait for prefetches: queued ones are
 * dropped from the pool's queue, running ones are detached (the last to
 * finish frees the handle).  Nothing is written on the read path, so no
 * data can be lost by not waiting. */
void rhandle_release(rhandle *h)
{
    uint64_t lt, t0 = now_ns();
    tlock(&h->mu, &lt);
    h->closing = 1;
    /* the kernel sends RELEASE after the last READ, so this does not wait */
    while (h->inline_n) tcondwait(&h->cv, &h->mu, &lt);
    int dropped = pool_cancel(&RP, rjob_of, h);
    h->inflight -= dropped;
    ST_ADD(pool_read_cancelled, dropped);
    int free_now = h->inflight == 0;
    if (!free_now) {
        h->detached = 1;
        ST_INC(pool_read_detached);
    }
    tunlock(&h->mu, lt);
    ot_put(h->of, 0);
    if (free_now) rfree(h);
    ST_INC(wait_release_read_count);
    ST_ADD(wait_release_read_ns, now_ns() - t0);
    __atomic_fetch_sub(&G_open_read, 1, __ATOMIC_RELAXED);
}

/* ======================================================= replicate-on-read */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    uint64_t        pending;
    int             err;
    const memfs_rec *rec;
    int             pref;
} rep_ctl;

typedef struct {
    job      j;
    rep_ctl *ctl;
    uint64_t n;
} rep_job;

static void repjob_fn(job *j, mc_ctx *c)
{
    rep_job *rj = container_of(j, rep_job, j);
    rep_ctl *ctl = rj->ctl;
    char *d = NULL;
    size_t dl = 0;
    int err = fetch_stripe(c, ctl->rec, ctl->pref, rj->n, &d, &dl);
    if (!err) {
        char key[MEMFS_KEY_MAX + 8];
        size_t kl = key_stripe(key, sizeof key, ctl->rec->base, rj->n);
        uint64_t t0 = now_ns();
        memcached_return_t rc = memcached_set(c->one[C.local], key, kl, d, dl, 0, 0);
        ST_INC(mc_rtt_set_count);
        ST_ADD(mc_rtt_set_ns, now_ns() - t0);
        if (rc == MEMCACHED_SUCCESS) {
            count_set(C.local, dl);
            ST_INC(locality_replicated_stripes);
            ST_ADD(locality_replicated_bytes, dl);
        } else {
            err = storage_errno(rc);
            SS_ADD(C.local, errors, 1);
            memfs_log("replicate %s to %s failed: %s", key, C.sl.spec[C.local],
                      memcached_strerror(c->one[C.local], rc));
        }
        free(d);
    }
    pthread_mutex_lock(&ctl->mu);
    if (err && !ctl->err) ctl->err = err;
    ctl->pending--;
    pthread_cond_broadcast(&ctl->cv);
    pthread_mutex_unlock(&ctl->mu);
}

/* The record must still be the file that was copied; this node joins its owners. */
static int add_owner_edit(memfs_rec *r, void *arg)
{
    const memfs_rec *copied = arg;
    if (r->type != 'f' || r->gen != copied->gen || r->size != copied->size || r->place != PLACE_LOCALITY)
        return ESTALE;
    if (rec_has_owner(r, C.local)) return META_KEEP;
    if (r->nown >= MEMFS_MAX_OWNERS) return ENOSPC;
    r->own[r->nown++] = C.local;
    return 0;
}

int replicate_file(const char *path, memfs_rec *rec)
{
    uint64_t ns = rec_nstripes(rec);
    rep_ctl ctl;
    pthread_mutex_init(&ctl.mu, NULL);
    pthread_cond_init(&ctl.cv, NULL);
    ctl.pending = ns;
    ctl.err = 0;
    ctl.rec = rec;
    ctl.pref = rec->nown ? rec->own[(C.local >= 0 ? C.local : 0) % rec->nown] : -1;
    rep_job *jobs = calloc(ns ? ns : 1, sizeof *jobs);
    for (uint64_t i = 0; i < ns; i++) {
        jobs[i].j.fn = repjob_fn;
        jobs[i].ctl = &ctl;
        jobs[i].n = i;
        rpool_submit(&jobs[i].j);
    }
    pthread_mutex_lock(&ctl.mu);
    while (ctl.pending) pthread_cond_wait(&ctl.cv, &ctl.mu);
    pthread_mutex_unlock(&ctl.mu);
    free(jobs);
    int err = ctl.err;
    pthread_mutex_destroy(&ctl.mu);
    pthread_cond_destroy(&ctl.cv);
    if (err) goto failed;

    /* register this node as an additional owner (CAS on the record) */
    err = meta_update(tls_ctx(), path, add_owner_edit, rec, rec);
    if (!err) goto done;
failed:
    ST_INC(locality_replication_failures);
    if (!rec_has_owner(rec, C.local)) { /* drop partial copies */
        memfs_rec loc = *rec;
        loc.nown = 1;
        loc.own[0] = C.local;
        delete_stripes(tls_ctx(), &loc, ns);
    }
    memfs_log("replicate %s to %s failed (%s); reading remotely", path,
              C.sl.spec[C.local], strerror(err));
    return err;
done:
    ST_INC(locality_replications);
    return 0;
}
