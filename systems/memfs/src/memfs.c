/* MemFS: a symmetric in-memory runtime file system over memcached (FUSE).
 * Metadata operations, FUSE glue and main().  Data path: io.c. */
#define FUSE_USE_VERSION 312
#include "conf.h"
#include "io.h"
#include "meta.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#ifdef HAVE_FUSEURING
#include "../../../tools/fuseuring/fuseuring.h"
#endif
#include <signal.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MEMFS_VERSION "1.0"

static double attr_timeout = 1.0;
static unsigned opt_max_read; /* -o max_read=N: libfuse 3.14 also needs it in init() */

static void scan_fuse_opts(const char *o)
{
    const char *m = strstr(o, "max_read=");
    if (m && (m == o || m[-1] == ',')) opt_max_read = (unsigned)strtoul(m + 9, NULL, 10);
}

static struct timespec now_rt(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts;
}

static void fill_stat(const memfs_rec *r, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = r->mode;
    st->st_uid = r->uid;
    st->st_gid = r->gid;
    st->st_mtim.tv_sec = r->mt_sec;
    st->st_mtim.tv_nsec = r->mt_nsec;
    st->st_atim = st->st_mtim;
    st->st_ctim = st->st_mtim;
    if (r->type == 'd') {
        st->st_nlink = 2;
        st->st_size = 4096;
        st->st_blksize = 4096;
    } else {
        st->st_nlink = 1;
        st->st_size = (off_t)r->size;
        st->st_blksize = (blksize_t)r->ss; /* tools use it as their I/O size */
        st->st_blocks = (blkcnt_t)((r->size + 511) / 512);
    }
}

static void stats_stat(struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    st->st_size = 0; /* content is generated at open; read with direct I/O */
    st->st_mtim.tv_sec = C.mount_time;
    st->st_atim = st->st_ctim = st->st_mtim;
    st->st_uid = getuid();
    st->st_gid = getgid();
}

static int is_stats(const char *path) { return !strcmp(path, MEMFS_STATS_PATH); }

/* ------------------------------------------------- FUSE connection tuning */
static struct fuse_conn_info *G_conn; /* libfuse's, valid for the session */

static void refresh_conn(void)
{
    if (!G_conn) return;
    C.fuse_max_write = G_conn->max_write;
    C.fuse_max_read = G_conn->max_read;
    C.fuse_max_readahead = G_conn->max_readahead;
    C.fuse_max_background = G_conn->max_background;
}

/* "major:minor" of this mount, from /proc/self/mountinfo (no request to our
 * own file system, so it cannot deadlock). */
static int mount_devno(unsigned *maj, unsigned *min)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return -1;
    char line[4096];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned a, b;
        char mp[2048], un[2048];
        if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &a, &b, mp) != 3) continue;
        size_t k = 0; /* undo the \ooo escapes of spaces etc. */
        for (const char *p = mp; *p && k + 1 < sizeof un; p++) {
            if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] && p[3]) {
                un[k++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                p += 3;
            } else {
                un[k++] = *p;
            }
        }
        un[k] = 0;
        const char *fs = strstr(line, " - ");
        if (!strcmp(un, C.mountpoint) && fs && !strncmp(fs + 3, "fuse", 4)) {
            *maj = a;
            *min = b;
            found = 0; /* keep the last (topmost) one */
        }
    }
    fclose(f);
    return found;
}

/* The kernel sends FUSE reads of at most the mount's readahead window
 * (bdi read_ahead_kb: 128 KiB by default; FUSE's INIT can only lower it).
 * Raise it once, at the first open (INIT is done by then, and a file's
 * readahead state is initialised after its FUSE OPEN returns).  Needs
 * write access to /sys/class/bdi (root); otherwise reads stay at 128 KiB. */
static void tune_readahead(void)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return;
    refresh_conn();
    unsigned maj, min;
    C.fuse_read_ahead_kb = -1;
    if (!C.mountpoint || mount_devno(&maj, &min)) return;
    char p[128];
    snprintf(p, sizeof p, "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
    if (C.readahead) {
        FILE *f = fopen(p, "w");
        if (!f || fprintf(f, "%zu\n", C.readahead >> 10) < 0 || fclose(f)) {
            if (f) fclose(f);
            memfs_log("cannot set %s to %zu (%s); FUSE reads stay at the kernel's readahead",
                      p, C.readahead >> 10, strerror(errno));
        }
    }
    FILE *f = fopen(p, "r");
    if (f) {
        if (fscanf(f, "%d", &C.fuse_read_ahead_kb) != 1) C.fuse_read_ahead_kb = -1;
        fclose(f);
    }
    if (C.verbose) memfs_log("%s = %d", p, C.fuse_read_ahead_kb);
}

/* Attributes this mount reported to the kernel (path hash -> generation,
 * size, time).  The kernel caches them for attr_timeout seconds; if a file
 * was meanwhile replaced (another mount unlinked and re-created it) or grew
 * (it was still being written), its cached i_size is stale and page-cache
 * reads would be clamped to it.  open() then uses direct I/O, which passes
 * reads through unclamped. */
#define ATTR_TRACK 16384
typedef struct { uint64_t h, gen, size, t; } attr_seen;
static attr_seen *seen;
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t path_hash(const char *p)
{
    uint8_t d[32];
    sha256(p, strlen(p), d);
    uint64_t h;
    memcpy(&h, d, sizeof h);
    return h ? h : 1;
}

static void track_attr(const char *path, uint64_t gen, uint64_t size)
{
    uint64_t h = path_hash(path);
    pthread_mutex_lock(&seen_mu);
    if (!seen) seen = calloc(ATTR_TRACK, sizeof *seen);
    attr_seen *e = &seen[h % ATTR_TRACK];
    *e = (attr_seen){ h, gen, size, now_ns() };
    pthread_mutex_unlock(&seen_mu);
}

static int attr_stale(const char *path, uint64_t gen, uint64_t size)
{
    uint64_t h = path_hash(path), now = now_ns();
    uint64_t window = (uint64_t)((attr_timeout + 1.0) * 1e9);
    int stale = 0;
    pthread_mutex_lock(&seen_mu);
    if (seen) {
        attr_seen *e = &seen[h % ATTR_TRACK];
        stale = e->h == h && now - e->t < window && (e->gen != gen || e->size != size);
    }
    pthread_mutex_unlock(&seen_mu);
    return stale;
}

/* ------------------------------------------------------------ operations */
static int m_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    ST_INC(meta_ops_getattr);
    if (is_stats(path)) {
        stats_stat(st);
        return 0;
    }
    if (fi && fi->fh) {
        hbase *hb = (hbase *)(uintptr_t)fi->fh;
        if (hb->kind == H_READ) {
            fill_stat(rhandle_rec((rhandle *)hb), st);
            return 0;
        }
        if (hb->kind == H_WRITE) {
            fill_stat(whandle_rec((whandle *)hb), st);
            st->st_size = (off_t)whandle_size((whandle *)hb);
            st->st_blocks = (st->st_size + 511) / 512;
            return 0;
        }
    }
    memfs_rec r;
    int e = meta_get(tls_ctx(), path, &r, NULL);
    if (e && !strcmp(path, "/")) {
        /* the root always exists: keep the mount usable (and unmountable)
         * when the server holding its record is down or was restarted */
        memset(&r, 0, sizeof r);
        r.type = 'd';
        r.mode = S_IFDIR | 0777;
        r.mt_sec = C.mount_time;
        e = 0;
    }
    if (e) return -e;
    fill_stat(&r, st);
    if (r.type == 'f') {
        int64_t ws = ot_writer_size(r.gen);
        if (ws >= 0) {
            st->st_size = (off_t)ws;
            st->st_blocks = (ws + 511) / 512;
        }
        track_attr(path, r.gen, (uint64_t)st->st_size);
    }
    return 0;
}

static int m_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    ST_INC(meta_ops_readdir);
    mc_ctx *c = tls_ctx();
    char key[MEMFS_KEY_MAX + 1];
    size_t kl = key_dir(key, sizeof key, path);
    char *val;
    size_t vl;
    uint64_t cas = 0;
    ST_INC(memcached_meta_get);
    memcached_return_t rc = mc_gets(c->all, key, kl, &val, &vl, NULL, &cas);
    if (rc == MEMCACHED_NOTFOUND) {
        memfs_rec r;
        int e = meta_get(c, path, &r, NULL);
        if (e) return -e;
        return r.type == 'd' ? -EIO : -ENOTDIR;
    }
    if (rc != MEMCACHED_SUCCESS) return meta_err(c, "readdir", path, rc);
    dirlog_view v;
    if (dirlog_fold(val, vl, &v)) {
        free(val);
        return -ENOMEM;
    }
    if (v.total == (size_t)-1) {
        free(val);
        return -ENOENT;
    }
    filler(buf, ".", NULL, 0, 0);
    filler(buf, "..", NULL, 0, 0);
    for (size_t i = 0; i < v.n; i++) {
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_mode = v.e[i].type == 'd' ? S_IFDIR : S_IFREG;
        if (filler(buf, v.e[i].name, &st, 0, 0)) break;
    }
    /* Opportunistic compaction of a log with many dead records: CAS fails
     * harmlessly if anything was appended since our read. */
    size_t dead = v.total - v.n;
    if (dead >= 64 && dead * 2 > v.total) {
        size_t nl;
        char *nv = dirlog_compact(&v, &nl);
        if (nv) {
            ST_INC(memcached_meta_cas);
            if (memcached_cas(c->all, key, kl, nv, nl, 0, 0, cas) == MEMCACHED_SUCCESS)
                ST_INC(memcached_meta_compactions);
            free(nv);
        }
    }
    dirlog_free(&v);
    free(val);
    return 0;
}

/* A new metadata record: zeroed, its type and mode, the calling process's owner, mtime now. */
static void rec_new(memfs_rec *r, char type, mode_t mode)
{
    struct fuse_context *fc = fuse_get_context();
    struct timespec ts = now_rt();
    memset(r, 0, sizeof *r);
    r->type = type;
    r->mode = mode;
    r->uid = fc->uid;
    r->gid = fc->gid;
    r->mt_sec = ts.tv_sec;
    r->mt_nsec = ts.tv_nsec;
}

/* path's record, which must be a directory (dir = 1; else -ENOTDIR) or must not be one (dir = 0;
 * else -EISDIR): 0 or -errno. */
static int meta_get_as(mc_ctx *c, const char *path, memfs_rec *r, int dir)
{
    int e = meta_get(c, path, r, NULL);
    if (e) return -e;
    if ((r->type == 'd') != dir) return dir ? -ENOTDIR : -EISDIR;
    return 0;
}

/* A change to the name space (create, mkdir, unlink, rmdir): this thread's memcached handles,
 * the path split into its parent directory and its entry name, and (unlink, rmdir) the path's
 * record. */
typedef struct {
    mc_ctx *c;
    const char *name;
    memfs_rec r;
    char parent[PATH_MAX];
} ns_op;

enum { NS_NEW, NS_FILE, NS_DIR }; /* what the path must be: not read yet, a file, a directory */

/* 0; -EINVAL when path cannot be split; for NS_FILE and NS_DIR, what meta_get_as returns. */
static int ns_start(ns_op *op, const char *path, int want)
{
    if (path_split(path, op->parent, sizeof op->parent, &op->name)) return -EINVAL;
    op->c = tls_ctx();
    return want == NS_NEW ? 0 : meta_get_as(op->c, path, &op->r, want == NS_DIR);
}

/* Delete path's item under one key kind (key_meta: its record; key_dir: a directory's entry
 * log). */
static memcached_return_t key_delete(mc_ctx *c, size_t (*key)(char *, size_t, const char *),
                                     const char *path)
{
    char k[MEMFS_KEY_MAX + 1];
    size_t kl = key(k, sizeof k, path);
    return memcached_delete(c->all, k, kl, 0);
}

/* Store the record of a new path (memcached add): 0, -EEXIST, -ENAMETOOLONG or -EIO (logged
 * as what). */
static int rec_add(mc_ctx *c, const char *what, const char *path, const memfs_rec *r)
{
    char mkey[MEMFS_KEY_MAX + 1], buf[MEMFS_REC_MAX];
    size_t mkl = key_meta(mkey, sizeof mkey, path);
    int l = rec_format(r, buf, sizeof buf);
    if (l < 0) return -ENAMETOOLONG;
    ST_INC(memcached_meta_add);
    memcached_return_t rc = memcached_add(c->all, mkey, mkl, buf, (size_t)l, 0, 0);
    if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS) return -EEXIST;
    if (rc != MEMCACHED_SUCCESS) return meta_err(c, what, path, rc);
    return 0;
}

/* The last step of a create or mkdir: the new entry (type 'f' or 'd') in its parent's entry log.
 * If that fails, the new record (and a directory's entry log) are deleted again: -ENOENT when the
 * parent vanished, else -EIO (logged as what). */
static int ns_link(const ns_op *op, const char *what, const char *path, char type)
{
    memcached_return_t rc;
    if (!dir_append(op->c, op->parent, type, op->name, &rc)) return 0;
    key_delete(op->c, key_meta, path);
    if (type == 'd') key_delete(op->c, key_dir, path);
    if (rc == MEMCACHED_NOTSTORED) return -ENOENT; /* parent vanished */
    return meta_err(op->c, what, path, rc);
}

static int m_mkdir(const char *path, mode_t mode)
{
    ST_INC(meta_ops_mkdir);
    if (is_stats(path)) return -EEXIST;
    ns_op op;
    int e = ns_start(&op, path, NS_NEW);
    if (e) return e;
    rec_new(&op.r, 'd', S_IFDIR | (mode & 07777));
    if ((e = rec_add(op.c, "mkdir", path, &op.r))) return e;
    char dkey[MEMFS_KEY_MAX + 1];
    size_t dkl = key_dir(dkey, sizeof dkey, path);
    ST_INC(memcached_meta_set);
    memcached_return_t rc = memcached_set(op.c->all, dkey, dkl, "", 0, 0, 0);
    if (rc != MEMCACHED_SUCCESS) {
        key_delete(op.c, key_meta, path);
        return meta_err(op.c, "mkdir (entry log)", path, rc);
    }
    return ns_link(&op, "mkdir (parent log)", path, 'd');
}

static int m_rmdir(const char *path)
{
    ST_INC(meta_ops_rmdir);
    if (!strcmp(path, "/")) return -EBUSY;
    ns_op op;
    int e = ns_start(&op, path, NS_DIR);
    if (e) return e;
    mc_ctx *c = op.c;
    char mkey[MEMFS_KEY_MAX + 1], dkey[MEMFS_KEY_MAX + 1];
    size_t mkl = key_meta(mkey, sizeof mkey, path), dkl = key_dir(dkey, sizeof dkey, path);
    for (int tries = 0;; tries++) {
        char *val;
        size_t vl;
        uint64_t cas = 0;
        ST_INC(memcached_meta_get);
        memcached_return_t rc = mc_gets(c->all, dkey, dkl, &val, &vl, NULL, &cas);
        if (rc == MEMCACHED_NOTFOUND) break;
        if (rc != MEMCACHED_SUCCESS) return meta_err(c, "rmdir", path, rc);
        dirlog_view v;
        if (dirlog_fold(val, vl, &v)) {
            free(val);
            return -ENOMEM;
        }
        size_t live = v.total == (size_t)-1 ? 0 : v.n;
        dirlog_free(&v);
        free(val);
        if (live) return -ENOTEMPTY;
        /* tombstone with CAS: fails if an entry was appended meanwhile */
        ST_INC(memcached_meta_cas);
        rc = memcached_cas(c->all, dkey, dkl, "T", 2, 0, 0, cas);
        if (rc == MEMCACHED_SUCCESS) break;
        if (rc == MEMCACHED_DATA_EXISTS && tries < 20) {
            ST_INC(memcached_meta_cas_conflicts);
            continue;
        }
        return meta_err(c, "rmdir (tombstone)", path, rc);
    }
    ST_ADD(memcached_meta_delete, 2);
    memcached_return_t rc = memcached_delete(c->all, mkey, mkl, 0);
    if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_NOTFOUND) return meta_err(c, "rmdir", path, rc);
    memcached_delete(c->all, dkey, dkl, 0);
    if (dir_append(c, op.parent, 'x', op.name, &rc) && rc != MEMCACHED_NOTSTORED)
        return meta_err(c, "rmdir (parent log)", path, rc);
    return 0;
}

static int m_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    ST_INC(meta_ops_create);
    if (is_stats(path)) return -EEXIST;
    tune_readahead();
    ns_op op;
    int e = ns_start(&op, path, NS_NEW);
    if (e) return e;
    memfs_rec r;
    rec_new(&r, 'f', S_IFREG | (mode & 07777));
    r.state = 'w';
    r.size = 0;
    r.ss = C.stripe_size;
    r.gen = random_u64();
    r.place = C.policy;
    if (C.policy == PLACE_LOCALITY) {
        r.nown = 1;
        r.own[0] = C.local;
    }
    if (!key_stripe_base(r.base, sizeof r.base, path, r.gen)) return -ENAMETOOLONG;
    e = rec_add(op.c, "create", path, &r);
    if (!e) e = ns_link(&op, "create (parent log)", path, 'f');
    if (e) return e;
    whandle *h = whandle_new(path, &r);
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = C.direct_io;
    fi->keep_cache = 0;
    return 0;
}

static int m_open(const char *path, struct fuse_file_info *fi)
{
    ST_INC(meta_ops_open);
    tune_readahead();
    if (is_stats(path)) {
        refresh_conn();
        shandle *h = calloc(1, sizeof *h);
        h->kind = H_STATS;
        h->buf = stats_json(&h->len);
        fi->fh = (uint64_t)(uintptr_t)h;
        fi->direct_io = 1;
        return 0;
    }
    memfs_rec r;
    int e = meta_get_as(tls_ctx(), path, &r, 0);
    if (e == -ENOENT && ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))) {
        /* The kernel still holds a dentry (entry_timeout) for a file that
         * another mount unlinked, so open(O_CREAT) arrives as OPEN, and the
         * kernel strips O_CREAT from FUSE OPEN flags.  A write-mode open of a
         * missing file can only be a create here: create it anew. */
        return m_create(path, 0666 & ~fuse_get_context()->umask, fi);
    }
    if (e) return e;
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        ST_INC(errors_write_once);
        memfs_log("write-once: %s already exists; it cannot be opened for writing or "
                  "truncated (create a new file instead): EROFS", path);
        return -EROFS;
    }
    int pref = -1;
    if (r.place == PLACE_LOCALITY) {
        if (C.local >= 0 && rec_has_owner(&r, C.local)) {
            pref = C.local;
        } else {
            if (C.policy == PLACE_LOCALITY && C.local >= 0 && r.size > 0 &&
                replicate_file(path, &r) == 0)
                pref = C.local;
            if (pref < 0 && r.nown) pref = r.own[(C.local >= 0 ? C.local : 0) % r.nown];
        }
    }
    rhandle *h = rhandle_new(path, &r, pref);
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->keep_cache = 0;
    /* --writeback-cache: the kernel keeps its own cached i_size of a regular
     * file for as long as the inode is cached (getattr's size is ignored,
     * not only for attr_timeout), so a size cached before another node
     * finished writing would silently cut page-cache reads short; direct-I/O
     * reads are not clipped to i_size. */
    fi->direct_io = C.direct_io || C.writeback_cache == 2 || r.state != 'c' ||
                    attr_stale(path, r.gen, r.size);
    return 0;
}

/* Size histogram of the FUSE data requests the kernel actually sends. */
/* count and histogram: the requested size; bytes: what was answered */
#define COUNT_REQ(dir, size)                                                   \
    do {                                                                       \
        ST_INC(dir##_count);                                                   \
        if ((size) <= (128u << 10)) ST_INC(dir##_le_128k);                     \
        else if ((size) <= (512u << 10)) ST_INC(dir##_le_512k);                \
        else if ((size) <= (1u << 20)) ST_INC(dir##_le_1m);                    \
        else ST_INC(dir##_gt_1m);                                              \
    } while (0)
/* and its answer: the bytes answered (r > 0) and the time since t0 */
#define COUNT_ANSWER(dir, r, t0)                                               \
    do {                                                                       \
        if ((r) > 0) ST_ADD(dir##_bytes, (r));                                 \
        ST_ADD(dir##_ns, now_ns() - (t0));                                     \
    } while (0)

static int m_read(const char *path, char *buf, size_t size, off_t off,
                  struct fuse_file_info *fi)
{
    (void)path;
    ST_INC(io_read_calls);
    hbase *hb = (hbase *)(uintptr_t)fi->fh;
    if (hb->kind == H_STATS) {
        shandle *h = (shandle *)hb;
        if ((size_t)off >= h->len) return 0;
        if (size > h->len - (size_t)off) size = h->len - (size_t)off;
        memcpy(buf, h->buf + off, size);
        return (int)size;
    }
    if (hb->kind != H_READ && hb->kind != H_WRITE) return -EBADF;
    COUNT_REQ(fuse_read, size);
    uint64_t t0 = now_ns();
    /* (for H_READ libfuse calls m_read_buf instead: kept for completeness) */
    int r = hb->kind == H_READ ? rhandle_read((rhandle *)hb, buf, size, off)
                               : whandle_read((whandle *)hb, buf, size, off);
    COUNT_ANSWER(fuse_read, r, t0);
    return r;
}

/* read through a buffer vector: lets a request of exactly one whole stripe
 * go to the kernel from the stripe's own buffer (libfuse frees it). */
static int m_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
    hbase *hb = (hbase *)(uintptr_t)fi->fh;
    char *mem = NULL;
    int r;
    if (hb->kind == H_READ) {
        uint64_t t0 = now_ns();
        ST_INC(io_read_calls);
        COUNT_REQ(fuse_read, size);
        r = rhandle_read_buf((rhandle *)hb, &mem, size, off);
        COUNT_ANSWER(fuse_read, r, t0);
    } else {
        if (!(mem = malloc(size ? size : 1))) return -ENOMEM;
        r = m_read(path, mem, size, off, fi);
    }
    if (r < 0) {
        free(mem);
        return r;
    }
    struct fuse_bufvec *bv = malloc(sizeof *bv);
    if (!bv) {
        free(mem);
        return -ENOMEM;
    }
    *bv = (struct fuse_bufvec)FUSE_BUFVEC_INIT((size_t)r);
    bv->buf[0].mem = mem;
    *bufp = bv;
    return 0;
}

static int m_write(const char *path, const char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path;
    ST_INC(io_write_calls);
    hbase *hb = (hbase *)(uintptr_t)fi->fh;
    if (hb->kind == H_WRITE) {
        uint64_t t0 = now_ns();
        COUNT_REQ(fuse_write, size);
        int r = whandle_write((whandle *)hb, buf, size, off);
        COUNT_ANSWER(fuse_write, r, t0);
        return r;
    }
    if (hb->kind == H_STATS) {
        if (size >= 5 && !memcmp(buf, "reset", 5)) stats_reset();
        return (int)size;
    }
    return -EBADF;
}

static int m_flush(const char *path, struct fuse_file_info *fi)
{
    ST_INC(meta_ops_flush);
    hbase *hb = (hbase *)(uintptr_t)fi->fh;
    if (hb->kind == H_WRITE) {
        whandle *h = (whandle *)hb;
        int r = whandle_flush(h);
        /* the kernel's i_size follows this mount's own writes */
        if (path) track_attr(path, whandle_rec(h)->gen, (uint64_t)whandle_size(h));
        return r;
    }
    return 0;
}

static int m_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    return m_flush(path, fi);
}

static int m_release(const char *path, struct fuse_file_info *fi)
{
    ST_INC(meta_ops_release);
    hbase *hb = (hbase *)(uintptr_t)fi->fh;
    switch (hb->kind) {
    case H_READ:
        rhandle_release((rhandle *)hb);
        break;
    case H_WRITE:
        if (path)
            track_attr(path, whandle_rec((whandle *)hb)->gen,
                       (uint64_t)whandle_size((whandle *)hb));
        whandle_release((whandle *)hb);
        break;
    case H_STATS:
        free(((shandle *)hb)->buf);
        free(hb);
        break;
    }
    return 0;
}

static int m_unlink(const char *path)
{
    ST_INC(meta_ops_unlink);
    if (is_stats(path)) return -EPERM;
    ns_op op;
    int e = ns_start(&op, path, NS_FILE);
    if (e) return e;
    ST_INC(memcached_meta_delete);
    memcached_return_t rc = key_delete(op.c, key_meta, path);
    if (rc == MEMCACHED_NOTFOUND) return -ENOENT;
    if (rc != MEMCACHED_SUCCESS) return meta_err(op.c, "unlink", path, rc);
    /* deletion marker in the parent's entry log */
    if (dir_append(op.c, op.parent, 'x', op.name, &rc))
        return meta_err(op.c, "unlink (parent log)", path, rc);
    if (!ot_mark_unlinked(&op.r)) delete_stripes(op.c, &op.r, rec_nstripes(&op.r));
    return 0;
}

static int m_rename(const char *from, const char *to, unsigned int flags)
{
    (void)flags;
    memfs_log("rename %s -> %s: not supported by MemFS (EXDEV: mv falls back to copy+unlink)",
              from, to);
    return -EXDEV;
}

static int m_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    ST_INC(meta_ops_setattr);
    if (is_stats(path)) {
        if (size == 0) stats_reset();
        return 0;
    }
    int64_t cur = -1;
    if (fi && fi->fh) {
        hbase *hb = (hbase *)(uintptr_t)fi->fh;
        if (hb->kind == H_WRITE) cur = whandle_size((whandle *)hb);
        else if (hb->kind == H_READ) cur = (int64_t)rhandle_rec((rhandle *)hb)->size;
    }
    if (cur < 0) {
        memfs_rec r;
        int e = meta_get_as(tls_ctx(), path, &r, 0);
        if (e) return e;
        cur = ot_writer_size(r.gen);
        if (cur < 0) cur = (int64_t)r.size;
    }
    if (size == cur) return 0; /* no-op truncate (e.g. to the current size) */
    ST_INC(errors_write_once);
    memfs_log("write-once: truncate of %s to %lld bytes refused (size %lld): EROFS", path,
              (long long)size, (long long)cur);
    return -EROFS;
}

/* chmod/chown/utimens are accepted and ignored (attributes are fixed at
 * create time; tools like cp -p or touch must not fail). */
static int m_chmod(const char *p, mode_t m, struct fuse_file_info *fi)
{
    (void)p; (void)m; (void)fi;
    ST_INC(meta_ops_setattr);
    return 0;
}

static int m_chown(const char *p, uid_t u, gid_t g, struct fuse_file_info *fi)
{
    (void)p; (void)u; (void)g; (void)fi;
    ST_INC(meta_ops_setattr);
    return 0;
}

static int m_utimens(const char *p, const struct timespec tv[2], struct fuse_file_info *fi)
{
    (void)p; (void)tv; (void)fi;
    ST_INC(meta_ops_setattr);
    return 0;
}

static int m_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    ST_INC(meta_ops_statfs);
    mc_ctx *c = tls_ctx();
    uint64_t lim = 0, used = 0, items = 0;
    int ok = 0;
    for (int i = 0; i < C.sl.n; i++) {
        memcached_return_t rc;
        memcached_stat_st *st = memcached_stat(c->one[i], NULL, &rc);
        if (st && rc == MEMCACHED_SUCCESS) {
            lim += st->limit_maxbytes;
            used += st->bytes;
            items += st->curr_items;
            ok++;
        }
        if (st) memcached_stat_free(c->one[i], st);
    }
    if (!ok) return -EIO;
    memset(sv, 0, sizeof *sv);
    sv->f_bsize = 4096;
    sv->f_frsize = 4096;
    sv->f_blocks = lim / 4096;
    sv->f_bfree = sv->f_bavail = (lim > used ? lim - used : 0) / 4096;
    sv->f_ffree = sv->f_favail = 1u << 30;
    sv->f_files = items + sv->f_ffree;
    sv->f_namemax = 255;
    return 0;
}

static const char XATTRS[] = "user.memfs.owners\0user.memfs.servers\0user.memfs.layout\0";

static int m_getxattr(const char *path, const char *name, char *value, size_t size)
{
    ST_INC(meta_ops_getxattr);
    if (strncmp(name, "user.memfs.", 11) || is_stats(path)) return -ENODATA;
    mc_ctx *c = tls_ctx();
    memfs_rec r;
    int e = meta_get(c, path, &r, NULL);
    if (e) return -e;
    if (r.type != 'f') return -ENODATA;
    char *v;
    if (!strcmp(name, "user.memfs.owners")) v = layout_owners(c->all, &C.sl, &r, 0);
    else if (!strcmp(name, "user.memfs.servers")) v = layout_owners(c->all, &C.sl, &r, 1);
    else if (!strcmp(name, "user.memfs.layout")) v = layout_json(c->all, &C.sl, path, &r);
    else return -ENODATA;
    size_t l = strlen(v);
    int ret = (int)l;
    if (size) {
        if (size < l) ret = -ERANGE;
        else memcpy(value, v, l);
    }
    free(v);
    return ret;
}

static int m_listxattr(const char *path, char *list, size_t size)
{
    if (is_stats(path)) return 0;
    memfs_rec r;
    int e = meta_get(tls_ctx(), path, &r, NULL);
    if (e) return -e;
    if (r.type != 'f') return 0;
    if (!size) return (int)sizeof XATTRS - 1;
    if (size < sizeof XATTRS - 1) return -ERANGE;
    memcpy(list, XATTRS, sizeof XATTRS - 1);
    return (int)sizeof XATTRS - 1;
}

static int m_setxattr(const char *p, const char *n, const char *v, size_t s, int f)
{
    (void)p; (void)n; (void)v; (void)s; (void)f;
    return -ENOTSUP;
}

static void *m_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    cfg->hard_remove = 1; /* no .fuse_hidden renames (rename is unsupported) */
    cfg->use_ino = 0;
    attr_timeout = cfg->attr_timeout;
    if (opt_max_read) conn->max_read = opt_max_read;
    /* FUSE write requests of 1 MiB, the most libfuse 3.14 can receive (its
     * buffer is FUSE_MAX_MAX_PAGES = 256 pages; a larger value makes the
     * session fail).  libfuse asks the kernel for max_pages to match and
     * always sets big_writes: no -o max_pages/big_writes in libfuse 3.
     * (This is also libfuse's default; set here so that it is explicit.) */
    conn->max_write = 1u << 20;
    if (C.writeback_cache) {
        if (conn->capable & FUSE_CAP_WRITEBACK_CACHE) {
            conn->want |= FUSE_CAP_WRITEBACK_CACHE;
            C.writeback_cache = 2;
        } else {
            memfs_log("--writeback-cache: the kernel does not offer FUSE_CAP_WRITEBACK_CACHE; "
                      "mounting without it");
        }
    }
    if (C.uring) /* ring replies are captured from libfuse's writev: no splice (--splice is refused) */
        conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ);
    if (C.splice && !C.uring) { /* read replies by vmsplice + splice; write requests through a pipe */
        unsigned want = FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ;
        conn->want |= want & conn->capable;
        C.splice = (conn->want & FUSE_CAP_SPLICE_WRITE) ? 2 : 1;
    }
    G_conn = conn;
    if (C.verbose)
        memfs_log("max_write=%u max_read=%u max_readahead=%u max_background=%u",
                  conn->max_write, conn->max_read, conn->max_readahead, conn->max_background);
    pools_start();
    fprintf(stderr, "memfs: mounted %s at %s (servers=%d)\n",
            C.policy == PLACE_LOCALITY ? "locality" : "symmetric", C.mountpoint, C.sl.n);
    fflush(stderr);
    return NULL;
}

static void m_destroy(void *p)
{
    (void)p;
    pools_stop();
    memfs_log("unmounted %s", C.mountpoint);
}

static const struct fuse_operations OPS = {
    .getattr = m_getattr,
    .mkdir = m_mkdir,
    .unlink = m_unlink,
    .rmdir = m_rmdir,
    .rename = m_rename,
    .chmod = m_chmod,
    .chown = m_chown,
    .truncate = m_truncate,
    .open = m_open,
    .read = m_read,
    .read_buf = m_read_buf,
    .write = m_write,
    .statfs = m_statfs,
    .flush = m_flush,
    .release = m_release,
    .fsync = m_fsync,
    .setxattr = m_setxattr,
    .getxattr = m_getxattr,
    .listxattr = m_listxattr,
    .readdir = m_readdir,
    .init = m_init,
    .destroy = m_destroy,
    .create = m_create,
    .utimens = m_utimens,
};

/* ------------------------------------------------------------------ main */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: memfs --servers HOST:PORT[,HOST:PORT...] [options] [FUSE options] MOUNTPOINT\n"
            "\n"
            "MemFS options:\n"
            "  --servers LIST          memcached servers (order defines server indexes 0..N-1;\n"
            "                          every mount must use the same list)\n"
            "  --policy P              symmetric (default: stripes hashed over all servers)\n"
            "                          or locality (AMFS-style: writes to --local-server,\n"
            "                          replicate-on-read)\n"
            "  --local-server IDX      index of this node's server (required for locality)\n"
            "  --stripe-size N         stripe size in bytes (default 524288; k/m suffixes)\n"
            "  --buffer-size N         write buffer / read cache per open file (default 8m)\n"
            "  --threads N             threads in each of the write and read pools (default 8)\n"
            "  --distribution D        modula (default) or consistent (ketama)\n"
            "  --hash H                key hash for modula: fnv1_32 (default), one_at_a_time,\n"
            "                          fnv1a_32, fnv1_64, fnv1a_64, md5, crc, murmur, jenkins\n"
            "  --timeout-ms N          memcached connect/poll/io timeout (default 2000)\n"
            "  --readahead N           kernel readahead of the mount = largest FUSE read\n"
            "                          request (default 1m; 0 = kernel default, 128k)\n"
            "  --direct-io             variant (ours, not the paper's): data files bypass\n"
            "                          the kernel page cache (one kernel copy less per\n"
            "                          byte; no kernel readahead; no shared mmap)\n"
            "  --writeback-cache       variant (ours, not the paper's): the kernel's FUSE\n"
            "                          writeback cache batches small writes into requests\n"
            "                          of up to 1 MiB; close() still stores everything;\n"
            "                          data files opened for reading use direct I/O\n"
            "  --transport T           dev-fuse (default, the paper's) | io_uring: variant (ours):\n"
            "                          FUSE over io_uring (needs enable_uring=Y; else /dev/fuse)\n"
            "  --splice                variant (ours): ask for splice in both directions\n"
            "                          (read replies vmspliced from the stripe buffer)\n"
            "  --keep-buffers          variant (ours): stripe buffers come from the heap and\n"
            "                          freed memory is kept (no mmap/munmap and page faults per stripe)\n"
            "  --verbose               log FUSE connection parameters\n"
            "  -h, --help              this help (followed by FUSE's options)\n"
            "  -V, --version           version\n"
            "\n"
            "FUSE options: -f (foreground), -d (debug), -s (single-threaded), -o opt[,opt...]\n");
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    }
    if (*end == 'i' || *end == 'b' || *end == 'B') end++;
    if (*end) return -1;
    *out = v;
    return 0;
}

/* A command-line error: "memfs: <message>" on stderr; returns main's exit status for it, 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "memfs: %s\n", msg); /* one write, as before */
    return 2;
}

/* A size option's value (k/m/g suffixes) in lo..hi: 0, or -1 when it is not. */
static int size_in(const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
    return parse_size(val, out) || *out < lo || *out > hi ? -1 : 0;
}

/* fuse_main() without its exit status 8 after a signal: SIGTERM/SIGINT/
 * SIGHUP unmount cleanly and exit 0. */
static int run_fuse(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    int res = 1;
    if (fuse_parse_cmdline(&args, &opts) != 0) return 1;
    if (!opts.mountpoint) {
        fprintf(stderr, "memfs: no mount point\n");
        goto out_args;
    }
    struct fuse *fuse = fuse_new(&args, &OPS, sizeof OPS, NULL);
    if (!fuse) goto out_args;
    if (fuse_mount(fuse, opts.mountpoint) != 0) goto out_destroy;
    if (fuse_daemonize(opts.foreground) != 0) goto out_unmount;
    struct fuse_session *se = fuse_get_session(fuse);
    if (fuse_set_signal_handlers(se) != 0) goto out_unmount;
#ifdef HAVE_FUSEURING
    struct fuseuring *U = NULL;
    if (C.uring) { /* INIT and the per-CPU queues before the loop, which keeps serving /dev/fuse */
        U = fuseuring_start(se, 1, 0);
        fprintf(stderr, "memfs: %s\n", fuseuring_message(U));
    }
#else
    if (C.uring) fprintf(stderr, "memfs: built without liburing: --transport=io_uring serves through /dev/fuse\n");
#endif
    if (opts.singlethread) {
        res = fuse_loop(fuse);
    } else {
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_clone_fd(lc, opts.clone_fd);
        if (opts.max_idle_threads != UINT_MAX) /* 3.14 warns about "unset" */
            fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
        if (opts.max_threads > 0 && opts.max_threads <= 100000)
            fuse_loop_cfg_set_max_threads(lc, opts.max_threads);
        res = fuse_loop_mt(fuse, lc);
        fuse_loop_cfg_destroy(lc);
    }
    if (res == SIGTERM || res == SIGINT || res == SIGHUP) res = 0;
    else if (res) res = 1;
    fuse_remove_signal_handlers(se);
#ifdef HAVE_FUSEURING
    if (U) {
        char j[1024];
        fuse_unmount(fuse); /* ends the ring's commands */
        fuseuring_stop(U);
        fuseuring_json(U, j, sizeof j); /* how many requests went through the ring */
        fprintf(stderr, "memfs: %s\n", j);
    }
#endif
out_unmount:
    fuse_unmount(fuse);
out_destroy:
    fuse_destroy(fuse);
out_args:
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    return res;
}

static int check_servers(void)
{
    mc_ctx *c = ctx_new();
    if (!c) {
        fprintf(stderr, "memfs: cannot create memcached handles\n");
        return -1;
    }
    int bad = 0;
    for (int i = 0; i < C.sl.n; i++) {
        memcached_return_t rc = memcached_version(c->one[i]);
        if (rc != MEMCACHED_SUCCESS) {
            fprintf(stderr, "memfs: memcached server %d (%s) unreachable: %s\n", i,
                    C.sl.spec[i], memcached_strerror(c->one[i], rc));
            bad = 1;
        }
    }
    if (!bad) { /* make sure the root directory exists (idempotent) */
        struct timespec ts = now_rt();
        memfs_rec r;
        memset(&r, 0, sizeof r);
        r.type = 'd';
        r.mode = S_IFDIR | 0777;
        r.mt_sec = ts.tv_sec;
        r.mt_nsec = ts.tv_nsec;
        char buf[MEMFS_REC_MAX], key[16];
        int l = rec_format(&r, buf, sizeof buf);
        size_t kl = key_meta(key, sizeof key, "/");
        memcached_return_t rc = memcached_add(c->all, key, kl, buf, (size_t)l, 0, 0);
        if (rc == MEMCACHED_SUCCESS || rc == MEMCACHED_NOTSTORED) {
            kl = key_dir(key, sizeof key, "/");
            rc = memcached_add(c->all, key, kl, "", 0, 0, 0);
        }
        if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_NOTSTORED) {
            fprintf(stderr, "memfs: cannot create root directory: %s\n",
                    memcached_strerror(c->all, rc));
            bad = 1;
        }
    }
    ctx_free(c);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    memset(&C, 0, sizeof C);
    C.policy = PLACE_SYMMETRIC;
    C.local = -1;
    C.stripe_size = 512 * 1024;
    C.buffer_size = 8u << 20;
    C.threads = 8;
    C.dist = DIST_MODULA;
    C.hash = MEMFS_HASH_DEFAULT;
    C.timeout_ms = 2000;
    C.readahead = 1u << 20;
    C.fuse_read_ahead_kb = -1;
    C.mount_time = (int64_t)time(NULL);

    char **fargv = calloc((size_t)argc + 8, sizeof(char *));
    int fargc = 0, help = 0, have_fsname = 0;
    fargv[fargc++] = argv[0];
    const char *policy = "symmetric", *dist = "modula";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        static const char *const longs[] = {"--servers", "--policy", "--local-server",
                                            "--stripe-size", "--buffer-size", "--threads",
                                            "--distribution", "--timeout-ms", "--hash",
                                            "--readahead", NULL};
        int matched = -1;
        for (int k = 0; longs[k]; k++) {
            size_t l = strlen(longs[k]);
            if (!strncmp(a, longs[k], l) && (a[l] == 0 || a[l] == '=')) {
                matched = k;
                if (a[l] == '=') val = a + l + 1;
                else if (i + 1 < argc) val = argv[++i];
                else return usage_error("%s needs a value", longs[k]);
                break;
            }
        }
        if (matched < 0) {
            if (!strcmp(a, "--verbose")) { C.verbose = 1; continue; }
            if (!strcmp(a, "--direct-io")) { C.direct_io = 1; continue; }
            if (!strcmp(a, "--writeback-cache")) { C.writeback_cache = 1; continue; }
            if (!strcmp(a, "--splice")) { C.splice = 1; continue; }
            if (!strcmp(a, "--transport") || !strncmp(a, "--transport=", 12)) { /* issue 30 */
                const char *t = a[11] == '=' ? a + 12 : (i + 1 < argc ? argv[++i] : "");
                if (strcmp(t, "io_uring") && strcmp(t, "dev-fuse"))
                    return usage_error("--transport must be dev-fuse or io_uring");
                C.uring = t[0] == 'i';
                continue;
            }
            if (!strcmp(a, "--keep-buffers")) { C.keep_buffers = 1; continue; }
            if (!strcmp(a, "-h") || !strcmp(a, "--help")) help = 1;
            if (!strcmp(a, "-V") || !strcmp(a, "--version"))
                printf("memfs %s (libmemcached %s)\n", MEMFS_VERSION, LIBMEMCACHED_VERSION_STRING);
            if (strstr(a, "fsname=")) have_fsname = 1;
            if (!strncmp(a, "-o", 2) && a[2]) scan_fuse_opts(a + 2);
            if (!strcmp(a, "-o") && i + 1 < argc) {
                if (strstr(argv[i + 1], "fsname=")) have_fsname = 1;
                scan_fuse_opts(argv[i + 1]);
                fargv[fargc++] = argv[i++];
                fargv[fargc++] = argv[i];
                continue;
            }
            if (a[0] != '-' && !C.mountpoint) {
                char *rp = realpath(a, NULL);
                C.mountpoint = rp ? rp : strdup(a);
            }
            fargv[fargc++] = (char *)a;
            continue;
        }
        uint64_t v;
        char err[256];
        switch (matched) {
        case 0:
            C.servers_arg = strdup(val);
            if (servers_parse(val, &C.sl, err, sizeof err))
                return usage_error("--servers: %s", err);
            break;
        case 1: policy = val; break;
        case 2: C.local = atoi(val); break;
        case 3:
            if (size_in(val, 4096, 64u << 20, &v)) return usage_error("--stripe-size must be 4k..64m");
            C.stripe_size = (uint32_t)v;
            break;
        case 4:
            if (size_in(val, 1, UINT64_MAX, &v)) return usage_error("bad --buffer-size");
            C.buffer_size = (size_t)v;
            break;
        case 5:
            C.threads = atoi(val);
            if (C.threads < 1 || C.threads > 256) return usage_error("--threads must be 1..256");
            break;
        case 6: dist = val; break;
        case 8:
            if ((C.hash = hash_parse(val)) < 0) return usage_error("unknown --hash %s", val);
            break;
        case 9:
            if (size_in(val, 0, 1u << 30, &v))
                return usage_error("bad --readahead (bytes, k/m suffixes; 0 = kernel default)");
            C.readahead = (size_t)v;
            break;
        case 7:
            C.timeout_ms = atoi(val);
            if (C.timeout_ms < 1) return usage_error("bad --timeout-ms");
            break;
        }
    }
    if (help) {
        usage(stdout);
        printf("\nFUSE options:\n");
        fuse_cmdline_help();
        struct fuse_args hargs = FUSE_ARGS_INIT(0, NULL);
        fuse_opt_add_arg(&hargs, argv[0]);
        fuse_lib_help(&hargs);
        fuse_opt_free_args(&hargs);
        return 0;
    }
    if (!C.sl.n) {
        usage(stderr);
        return usage_error("--servers is required");
    }
    if (!strcmp(policy, "symmetric")) C.policy = PLACE_SYMMETRIC;
    else if (!strcmp(policy, "locality")) C.policy = PLACE_LOCALITY;
    else return usage_error("--policy must be symmetric or locality");
    if ((C.dist = dist_parse(dist)) < 0)
        return usage_error("--distribution must be modula or consistent");
    if (C.local >= C.sl.n || (C.policy == PLACE_LOCALITY && C.local < 0))
        return usage_error("--local-server must be an index into --servers (0..%d)%s", C.sl.n - 1,
                           C.policy == PLACE_LOCALITY ? " and is required for locality" : "");
    if (!C.mountpoint) {
        usage(stderr);
        return usage_error("no mount point");
    }
    if (C.uring && C.splice) /* ring replies are copied from libfuse's writev, never spliced */
        return usage_error("--splice needs --transport=dev-fuse (FUSE over io_uring replies are not spliced)");
    if (!have_fsname) {
        fargv[fargc++] = "-o";
        fargv[fargc++] = "fsname=memfs,subtype=memfs";
    }
    /* FUSE read requests of one stripe (unless -o max_read= was given): the
     * kernel's readahead windows start stripe-aligned, so each request is
     * one whole stripe, answered from the stripe's buffer without a copy
     * (read_buf).  Stripes above 1 MiB exceed FUSE's request limit. */
    static char mr_opt[32];
    if (!opt_max_read && C.stripe_size >= (128u << 10) && C.stripe_size <= (1u << 20) &&
        C.stripe_size % 4096 == 0) {
        snprintf(mr_opt, sizeof mr_opt, "max_read=%u", C.stripe_size);
        fargv[fargc++] = "-o";
        fargv[fargc++] = mr_opt;
        opt_max_read = C.stripe_size;
    }
    if (C.keep_buffers) {
        /* Stripe buffers (and libmemcached's values) are allocated per stripe and freed after the
         * reply: above glibc's mmap threshold each is a fresh mapping whose pages fault in again,
         * and freed heap tops are trimmed.  Keep them: serve them from the heap, never trim. */
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
    }
    tls_init();
    stats_init();
    if (check_servers()) return 1;
    int r = run_fuse(fargc, fargv);
    free(fargv);
    return r;
}
