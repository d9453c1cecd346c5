/* fuseceiling: the smallest FUSE file system that can stand beside another
 * one as its ceiling.  Files live in this process's memory, in
 * one flat directory, with no backend.  It uses libfuse's low-level API: a
 * read is answered straight from the file's memory (fuse_reply_data on one
 * buffer: no copy in this process; with splice, vmsplice), a write copies the
 * request's bytes into it (write_buf, where splice-read requests land).  A
 * file's bytes are one contiguous mapping that grows with mremap, so every
 * reply is a single buffer (libfuse would copy a multi-buffer reply).  Whatever a
 * FUSE file system does on top of this (a network round trip, a copy, a
 * lock) can only make it slower, so the bandwidth measured here, with the
 * same request sizes, stream counts and mount options, is the best any FUSE
 * file system reaches on this machine and kernel.
 *
 * The mount knobs mirror MemFS's (systems/memfs): --max-write (FUSE write
 * request size; libfuse 3.14's maximum is 1 MiB and libfuse sets max_pages
 * to match, big writes are always on in libfuse 3), --max-read (-o max_read
 * and conn->max_read), --readahead (the mount's bdi read_ahead_kb, which caps
 * the kernel's read requests), --direct-io, --writeback-cache, --splice
 * (none / default / all), -s (single-threaded loop), -o clone_fd,
 * -o max_threads=N.  --preload NAME:SIZE creates a file of SIZE bytes whose
 * content is the pattern below, so a read ceiling needs no write first.
 *
 * Pattern: 64-bit little-endian word k of a preloaded file (bytes 8k..8k+7)
 * is splitmix64(k + 1); the last word is cut at the file's size.
 *
 * Counters (requests, bytes, largest request, what INIT negotiated) are in
 * the read-only file /.fuseceiling-stats as one JSON object. */
#define FUSE_USE_VERSION 314
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#ifdef HAVE_FUSEURING
#include "../fuseuring/fuseuring.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define STATS_NAME ".fuseceiling-stats"
#define STATS_INO 2
#define MAX_FILES 4096
#define NAME_MAX_LEN 255
#define TIMEOUT 1.0 /* entry and attribute timeout, libfuse's high-level default */

/* ------------------------------------------------------------- config */
static struct {
    unsigned max_write; /* conn->max_write */
    unsigned max_read;  /* -o max_read + conn->max_read (0: libfuse default) */
    long readahead;     /* bdi read_ahead_kb in bytes; 0: leave the kernel's */
    int direct_io;
    int direct_io_read;  /* files opened read-only use direct I/O (MemFS --writeback-cache's reads) */
    int writeback_cache; /* 1 asked, 2 granted */
    int splice;          /* 0 none, 1 libfuse default, 2 all */
    const char *mountpoint;
    int uring;           /* --transport io_uring (falls back to /dev/fuse when refused) */
    unsigned uring_depth; /* ring entries per queue (0: fuseuring's default) */
} C = {1u << 20, 0, 1 << 20, 0, 0, 0, 1, NULL, 0, 0};

#ifdef HAVE_FUSEURING
static struct fuseuring *U;
#endif

/* ------------------------------------------------------------- files */
typedef struct file {
    char name[NAME_MAX_LEN + 1];
    pthread_rwlock_t lock; /* data, size, cap */
    char *data;            /* MAP_FAILED-free: NULL while cap == 0 */
    size_t size, cap;
    mode_t mode;
    struct timespec mtime;
    /* under dir_lock: */
    uint64_t nlookup;
    int open_count;
    int unlinked;
} file_t;

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static file_t *files[MAX_FILES];
static int nfiles;

static struct {
    uint64_t read_reqs, read_bytes, read_max, write_reqs, write_bytes, write_max;
    uint64_t opens, creates, unlinks, enomem;
} S;
static uint64_t init_capable, init_want;
static unsigned init_max_write, init_max_read, init_max_readahead, init_max_background;
static int bdi_read_ahead_kb = -1;

static void add(uint64_t *c, uint64_t v) { __atomic_fetch_add(c, v, __ATOMIC_RELAXED); }
static void upmax(uint64_t *c, uint64_t v)
{
    uint64_t o = __atomic_load_n(c, __ATOMIC_RELAXED);
    while (v > o && !__atomic_compare_exchange_n(c, &o, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static void logmsg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuseceiling: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int find_locked(const char *name)
{
    for (int i = 0; i < nfiles; i++)
        if (!strcmp(files[i]->name, name)) return i;
    return -1;
}

static file_t *file_new(const char *name, mode_t mode)
{
    file_t *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    snprintf(f->name, sizeof f->name, "%s", name);
    pthread_rwlock_init(&f->lock, NULL);
    f->mode = S_IFREG | (mode & 07777);
    clock_gettime(CLOCK_REALTIME, &f->mtime);
    return f;
}

/* Memory of unlinked files is kept for the next file (up to POOL_MAX mappings),
 * populated: a file written into it takes no page faults and no zeroing, as a
 * file system writing into buffers it recycles.  --prealloc fills it at start. */
#define POOL_MAX 256
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char *p; size_t cap; } pool[POOL_MAX];
static int npool;

static int pool_take(size_t want, char **p, size_t *cap)
{
    int best = -1;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < npool; i++) /* the smallest that fits, else the largest */
        if (best < 0 || (pool[i].cap >= want ? pool[best].cap < want || pool[i].cap < pool[best].cap
                                             : pool[best].cap < want && pool[i].cap > pool[best].cap))
            best = i;
    if (best >= 0) {
        *p = pool[best].p;
        *cap = pool[best].cap;
        pool[best] = pool[--npool];
    }
    pthread_mutex_unlock(&pool_lock);
    return best >= 0;
}

static void pool_give(char *p, size_t cap)
{
    pthread_mutex_lock(&pool_lock);
    if (npool < POOL_MAX) {
        pool[npool].p = p;
        pool[npool++].cap = cap;
        p = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    if (p) munmap(p, cap);
}

static void file_drop_data(file_t *f)
{
    if (f->cap) pool_give(f->data, f->cap);
    f->data = NULL;
    f->size = f->cap = 0;
}

static void file_free(file_t *f)
{
    file_drop_data(f);
    pthread_rwlock_destroy(&f->lock);
    free(f);
}

/* dir_lock held: free what nobody can reach any more */
static void maybe_free_locked(file_t *f)
{
    if (!f->unlinked || f->open_count) return;
    if (f->nlookup == 0) file_free(f);
    else file_drop_data(f);
}

static size_t page_up(size_t n)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    return (n + ps - 1) / ps * ps;
}

/* capacity for n bytes (one contiguous mapping); lock held (write) */
static int ensure_cap(file_t *f, size_t n)
{
    if (n <= f->cap) return 0;
    if (!f->cap && pool_take(n, &f->data, &f->cap) && n <= f->cap) return 0;
    size_t old = f->cap;
    size_t cap = f->cap ? f->cap : (1u << 20);
    while (cap < n) cap *= 2;
    cap = page_up(cap);
    void *p = f->cap ? mremap(f->data, f->cap, cap, MREMAP_MAYMOVE)
                     : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -ENOMEM;
    f->data = p;
    f->cap = cap;
    /* fault the new range in at once (not page by page inside the copy) */
    madvise(f->data + old, cap - old, MADV_POPULATE_WRITE);
    return 0;
}

/* lock held (write) */
static int file_truncate(file_t *f, size_t size)
{
    if (size < f->size) {
    } else if (size > f->size) {
        int e = ensure_cap(f, size);
        if (e) return e;
        memset(f->data + f->size, 0, size - f->size); /* a recycled mapping holds old bytes */
    }
    f->size = size;
    clock_gettime(CLOCK_REALTIME, &f->mtime);
    return 0;
}

static int preload(const char *name, size_t size)
{
    if (find_locked(name) >= 0 || nfiles >= MAX_FILES) return -1;
    file_t *f = file_new(name, 0644);
    if (!f || (size && ensure_cap(f, size))) return -1;
    size_t words = size / 8;
    uint64_t *w = (uint64_t *)(void *)f->data;
    for (size_t k = 0; k < words; k++) w[k] = splitmix64(k + 1); /* little-endian host */
    if (size % 8) {
        uint64_t v = splitmix64(words + 1);
        for (size_t b = 0; b < size % 8; b++) f->data[words * 8 + b] = (char)(v >> (8 * b));
    }
    f->size = size;
    files[nfiles++] = f;
    return 0;
}

static file_t *F(fuse_ino_t ino) { return (file_t *)(uintptr_t)ino; }

/* ------------------------------------------------------------- stats */
static int stats_json(char *buf, size_t cap)
{
    int files_n;
    uint64_t bytes = 0;
    pthread_mutex_lock(&dir_lock);
    files_n = nfiles;
    for (int i = 0; i < nfiles; i++) bytes += files[i]->size;
    pthread_mutex_unlock(&dir_lock);
    struct rusage ru; /* the whole daemon, threads that ended included */
    getrusage(RUSAGE_SELF, &ru);
    char tr[1024] = "{\"transport\":\"dev-fuse\",\"requested\":0}";
#ifdef HAVE_FUSEURING
    if (C.uring) fuseuring_json(U, tr, sizeof tr);
#endif
#define L(x) (unsigned long long)__atomic_load_n(&S.x, __ATOMIC_RELAXED)
    return snprintf(
        buf, cap,
        "{\"read_reqs\":%llu,\"read_bytes\":%llu,\"read_max\":%llu,"
        "\"write_reqs\":%llu,\"write_bytes\":%llu,\"write_max\":%llu,"
        "\"opens\":%llu,\"creates\":%llu,\"unlinks\":%llu,\"enomem\":%llu,"
        "\"files\":%d,\"bytes_stored\":%llu,"
        "\"fuse\":{\"max_write\":%u,\"max_read\":%u,\"max_readahead\":%u,\"max_background\":%u,"
        "\"read_ahead_kb\":%d,\"capable\":%llu,\"want\":%llu,"
        "\"splice_read\":%d,\"splice_write\":%d,\"splice_move\":%d,\"writeback_cache\":%d,"
        "\"direct_io\":%d,\"direct_io_read\":%d},"
        "\"rusage\":{\"utime\":%.6f,\"stime\":%.6f,\"nvcsw\":%ld,\"nivcsw\":%ld},"
        "\"transport\":%s}\n",
        L(read_reqs), L(read_bytes), L(read_max), L(write_reqs), L(write_bytes), L(write_max),
        L(opens), L(creates), L(unlinks), L(enomem), files_n, (unsigned long long)bytes,
        init_max_write, init_max_read, init_max_readahead, init_max_background, bdi_read_ahead_kb,
        (unsigned long long)init_capable, (unsigned long long)init_want,
        !!(init_want & FUSE_CAP_SPLICE_READ), !!(init_want & FUSE_CAP_SPLICE_WRITE),
        !!(init_want & FUSE_CAP_SPLICE_MOVE), C.writeback_cache == 2, C.direct_io, C.direct_io_read,
        ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
        ru.ru_nvcsw, ru.ru_nivcsw, tr);
#undef L
}

/* --------------------------------------------------- readahead (bdi) */
static int mount_devno(unsigned *maj, unsigned *min)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return -1;
    char line[4096];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned a, b;
        char mp[2048];
        if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &a, &b, mp) != 3) continue;
        const char *fs = strstr(line, " - ");
        if (!strcmp(mp, C.mountpoint) && fs && !strncmp(fs + 3, "fuse", 4)) {
            *maj = a;
            *min = b;
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* as MemFS: the kernel's read requests are capped by the mount's readahead
 * window (FUSE's INIT can only lower it); raise it at the first open, root only */
static void tune_readahead(void)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return;
    unsigned maj, min;
    if (!C.mountpoint || mount_devno(&maj, &min)) return;
    char p[128];
    snprintf(p, sizeof p, "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
    if (C.readahead > 0) {
        FILE *f = fopen(p, "w");
        if (!f || fprintf(f, "%ld\n", C.readahead >> 10) < 0 || fclose(f)) {
            if (f) fclose(f);
            logmsg("cannot set %s (%s); reads stay at the kernel's readahead", p, strerror(errno));
        }
    }
    FILE *f = fopen(p, "r");
    if (f) {
        if (fscanf(f, "%d", &bdi_read_ahead_kb) != 1) bdi_read_ahead_kb = -1;
        fclose(f);
    }
}

/* ------------------------------------------------------------- ops */
static void fill_stat(fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (ino == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0777;
        st->st_nlink = 2;
    } else if (ino == STATS_INO) {
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = 4096; /* opened with direct I/O: the length is what read returns */
    } else {
        file_t *f = F(ino);
        pthread_rwlock_rdlock(&f->lock);
        st->st_mode = f->mode;
        st->st_nlink = 1;
        st->st_size = (off_t)f->size;
        st->st_blksize = 1 << 20;
        st->st_blocks = (blkcnt_t)((f->size + 511) / 512);
        st->st_mtim = st->st_ctim = st->st_atim = f->mtime;
        pthread_rwlock_unlock(&f->lock);
    }
}

static void reply_entry_locked(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.ino = ino;
    e.attr_timeout = e.entry_timeout = TIMEOUT;
    fill_stat(ino, &e.attr);
    if (ino != STATS_INO) F(ino)->nlookup++;
    if (fi) fuse_reply_create(req, &e, fi);
    else fuse_reply_entry(req, &e);
}

static void c_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (parent != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (!strcmp(name, STATS_NAME)) {
        reply_entry_locked(req, STATS_INO, NULL);
        return;
    }
    pthread_mutex_lock(&dir_lock);
    int i = find_locked(name);
    if (i < 0) fuse_reply_err(req, ENOENT);
    else reply_entry_locked(req, (fuse_ino_t)(uintptr_t)files[i], NULL);
    pthread_mutex_unlock(&dir_lock);
}

static void c_forget(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
    if (ino != FUSE_ROOT_ID && ino != STATS_INO) {
        pthread_mutex_lock(&dir_lock);
        file_t *f = F(ino);
        f->nlookup = f->nlookup > n ? f->nlookup - n : 0;
        maybe_free_locked(f);
        pthread_mutex_unlock(&dir_lock);
    }
    fuse_reply_none(req);
}

static void c_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    fill_stat(ino, &st);
    fuse_reply_attr(req, &st, TIMEOUT);
}

static void c_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                      struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == FUSE_ROOT_ID || ino == STATS_INO) {
        if (to_set & FUSE_SET_ATTR_SIZE) {
            fuse_reply_err(req, EACCES);
            return;
        }
    } else if (to_set & FUSE_SET_ATTR_SIZE) {
        if (attr->st_size < 0) {
            fuse_reply_err(req, EINVAL);
            return;
        }
        file_t *f = F(ino);
        pthread_rwlock_wrlock(&f->lock);
        int e = file_truncate(f, (size_t)attr->st_size);
        pthread_rwlock_unlock(&f->lock);
        if (e) {
            fuse_reply_err(req, -e);
            return;
        }
    }
    c_getattr(req, ino, NULL); /* mode, owner, times: accepted and ignored */
}

static void c_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    size_t used = 0;
    pthread_mutex_lock(&dir_lock);
    int n = nfiles + 3;
    for (int k = (int)off; k < n; k++) {
        struct stat st;
        memset(&st, 0, sizeof st);
        const char *name;
        if (k == 0) { name = "."; st.st_ino = FUSE_ROOT_ID; st.st_mode = S_IFDIR; }
        else if (k == 1) { name = ".."; st.st_ino = FUSE_ROOT_ID; st.st_mode = S_IFDIR; }
        else if (k == 2) { name = STATS_NAME; st.st_ino = STATS_INO; st.st_mode = S_IFREG; }
        else { name = files[k - 3]->name; st.st_ino = (ino_t)(uintptr_t)files[k - 3]; st.st_mode = S_IFREG; }
        size_t l = fuse_add_direntry(req, buf + used, size - used, name, &st, k + 1);
        if (l > size - used) break;
        used += l;
    }
    pthread_mutex_unlock(&dir_lock);
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void set_open_flags(struct fuse_file_info *fi)
{
    fi->direct_io = C.direct_io || (C.direct_io_read && (fi->flags & O_ACCMODE) == O_RDONLY);
    fi->keep_cache = 0; /* every open reads through FUSE, never a warm page cache */
    tune_readahead();
    add(&S.opens, 1);
}

static void c_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     struct fuse_file_info *fi)
{
    if (parent != FUSE_ROOT_ID || !strcmp(name, STATS_NAME)) {
        fuse_reply_err(req, EACCES);
        return;
    }
    if (strlen(name) > NAME_MAX_LEN) {
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    pthread_mutex_lock(&dir_lock);
    int i = find_locked(name);
    file_t *f;
    if (i >= 0) {
        f = files[i];
        if (fi->flags & O_EXCL) {
            pthread_mutex_unlock(&dir_lock);
            fuse_reply_err(req, EEXIST);
            return;
        }
        if (fi->flags & O_TRUNC) {
            pthread_rwlock_wrlock(&f->lock);
            file_truncate(f, 0);
            pthread_rwlock_unlock(&f->lock);
        }
    } else {
        if (nfiles >= MAX_FILES || !(f = file_new(name, mode))) {
            pthread_mutex_unlock(&dir_lock);
            fuse_reply_err(req, ENOSPC);
            return;
        }
        files[nfiles++] = f;
        add(&S.creates, 1);
    }
    f->open_count++;
    fi->fh = (uint64_t)(uintptr_t)f;
    set_open_flags(fi);
    reply_entry_locked(req, (fuse_ino_t)(uintptr_t)f, fi);
    pthread_mutex_unlock(&dir_lock);
}

static void c_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino == STATS_INO) {
        if ((fi->flags & O_ACCMODE) != O_RDONLY) {
            fuse_reply_err(req, EACCES);
            return;
        }
        /* one snapshot per open: a reader that reads in pieces gets one consistent object
         * (the counters, the daemon's rusage move with every request) */
        char *snap = malloc(4096);
        if (!snap) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        stats_json(snap, 4096);
        fi->fh = (uint64_t)(uintptr_t)snap;
        fi->direct_io = 1;
        fuse_reply_open(req, fi);
        return;
    }
    if (ino == FUSE_ROOT_ID) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    file_t *f = F(ino);
    pthread_mutex_lock(&dir_lock);
    f->open_count++;
    pthread_mutex_unlock(&dir_lock);
    if (fi->flags & O_TRUNC) {
        pthread_rwlock_wrlock(&f->lock);
        file_truncate(f, 0);
        pthread_rwlock_unlock(&f->lock);
    }
    fi->fh = (uint64_t)(uintptr_t)f;
    set_open_flags(fi);
    fuse_reply_open(req, fi);
}

static void c_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino == STATS_INO) free((char *)(uintptr_t)fi->fh);
    if (ino != STATS_INO && ino != FUSE_ROOT_ID) {
        pthread_mutex_lock(&dir_lock);
        file_t *f = F(ino);
        f->open_count--;
        maybe_free_locked(f);
        pthread_mutex_unlock(&dir_lock);
    }
    fuse_reply_err(req, 0);
}

static void c_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (parent != FUSE_ROOT_ID || !strcmp(name, STATS_NAME)) {
        fuse_reply_err(req, EACCES);
        return;
    }
    pthread_mutex_lock(&dir_lock);
    int i = find_locked(name);
    if (i < 0) {
        pthread_mutex_unlock(&dir_lock);
        fuse_reply_err(req, ENOENT);
        return;
    }
    file_t *f = files[i];
    files[i] = files[--nfiles];
    f->unlinked = 1;
    maybe_free_locked(f);
    pthread_mutex_unlock(&dir_lock);
    add(&S.unlinks, 1);
    fuse_reply_err(req, 0);
}

static void c_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    if (ino == STATS_INO) {
        const char *tmp = (const char *)(uintptr_t)fi->fh;
        size_t l = strlen(tmp);
        size_t n = (size_t)off >= l ? 0 : l - (size_t)off;
        fuse_reply_buf(req, n ? tmp + off : tmp, n > size ? size : n);
        return;
    }
    file_t *f = F(ino);
    add(&S.read_reqs, 1);
    upmax(&S.read_max, size);
    /* the read lock is held while the reply is sent: the bytes go from the
     * file's mapping to the kernel without a copy in this process */
    pthread_rwlock_rdlock(&f->lock);
    size_t n = (size_t)off >= f->size ? 0 : f->size - (size_t)off;
    if (n > size) n = size;
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);
    bv.buf[0].mem = n ? f->data + off : NULL;
    fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
    pthread_rwlock_unlock(&f->lock);
    add(&S.read_bytes, n);
}

static void c_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *src, off_t off,
                        struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == STATS_INO || ino == FUSE_ROOT_ID) {
        fuse_reply_err(req, EACCES);
        return;
    }
    file_t *f = F(ino);
    size_t size = fuse_buf_size(src);
    add(&S.write_reqs, 1);
    upmax(&S.write_max, size);
    pthread_rwlock_wrlock(&f->lock);
    size_t end = (size_t)off + size;
    int e = ensure_cap(f, end);
    if (e) {
        pthread_rwlock_unlock(&f->lock);
        add(&S.enomem, 1);
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if ((size_t)off > f->size) memset(f->data + f->size, 0, (size_t)off - f->size);
    struct fuse_bufvec d = FUSE_BUFVEC_INIT(size);
    d.buf[0].mem = f->data + off;
    ssize_t r = fuse_buf_copy(&d, src, 0);
    if (r >= 0 && (size_t)off + (size_t)r > f->size) f->size = (size_t)off + (size_t)r;
    clock_gettime(CLOCK_REALTIME, &f->mtime);
    pthread_rwlock_unlock(&f->lock);
    if (r < 0) {
        fuse_reply_err(req, (int)-r);
        return;
    }
    add(&S.write_bytes, (uint64_t)r);
    fuse_reply_write(req, (size_t)r);
}

static void c_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino; (void)fi;
    fuse_reply_err(req, 0);
}

static void c_fsync(fuse_req_t req, fuse_ino_t ino, int d, struct fuse_file_info *fi)
{
    (void)ino; (void)d; (void)fi;
    fuse_reply_err(req, 0);
}

static void c_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs st;
    memset(&st, 0, sizeof st);
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    st.f_bsize = st.f_frsize = (unsigned long)ps;
    st.f_blocks = st.f_bfree = st.f_bavail = (fsblkcnt_t)pages;
    st.f_files = MAX_FILES;
    st.f_ffree = MAX_FILES - (fsfilcnt_t)nfiles;
    st.f_namemax = NAME_MAX_LEN;
    fuse_reply_statfs(req, &st);
}

static void c_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    if (C.max_read) conn->max_read = C.max_read;
    conn->max_write = C.max_write; /* libfuse asks the kernel for max_pages to match */
    if (C.writeback_cache) {
        if (conn->capable & FUSE_CAP_WRITEBACK_CACHE) {
            conn->want |= FUSE_CAP_WRITEBACK_CACHE;
            C.writeback_cache = 2;
        } else {
            logmsg("--writeback-cache: the kernel does not offer it; mounting without");
        }
    }
    uint64_t sp = FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
    if (C.splice == 0) conn->want &= ~sp;
    else if (C.splice == 2) conn->want |= sp & conn->capable;
    /* io_uring: replies to ring requests are captured from libfuse's writev (no splice of replies),
     * and what still comes through /dev/fuse is read (counted) rather than spliced */
    if (C.uring) conn->want &= ~sp;
    init_capable = conn->capable;
    init_want = conn->want;
    init_max_write = conn->max_write;
    init_max_read = conn->max_read;
    init_max_readahead = conn->max_readahead;
    init_max_background = conn->max_background;
    fprintf(stderr, "fuseceiling: mounted at %s (files=%d)\n", C.mountpoint, nfiles);
    fflush(stderr);
}

static void c_destroy(void *userdata)
{
    (void)userdata;
    pthread_mutex_lock(&dir_lock);
    for (int i = 0; i < nfiles; i++) file_drop_data(files[i]);
    pthread_mutex_unlock(&dir_lock);
}

static const struct fuse_lowlevel_ops OPS = {
    .init = c_init,
    .destroy = c_destroy,
    .lookup = c_lookup,
    .forget = c_forget,
    .getattr = c_getattr,
    .setattr = c_setattr,
    .readdir = c_readdir,
    .create = c_create,
    .open = c_open,
    .release = c_release,
    .unlink = c_unlink,
    .read = c_read,
    .write_buf = c_write_buf,
    .flush = c_ok,
    .fsync = c_fsync,
    .statfs = c_statfs,
};

/* ------------------------------------------------------------- main */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: fuseceiling [options] [FUSE options] MOUNTPOINT\n"
            "  --preload NAME:SIZE   a file /NAME of SIZE bytes (k/m/g), pattern content (repeatable)\n"
            "  --preload-many PREFIX:COUNT:SIZE   files /PREFIX0 .. /PREFIX{COUNT-1}\n"
            "  --prealloc COUNT:SIZE  COUNT populated mappings of SIZE for new files (no page faults\n"
            "                        while writing; memory of unlinked files is reused the same way)\n"
            "  --max-write N         FUSE write request size (default 1m, libfuse 3.14's maximum)\n"
            "  --max-read N          FUSE read request cap (-o max_read=N; default: none)\n"
            "  --readahead N         the mount's read_ahead_kb, in bytes (default 1m; 0 = kernel's)\n"
            "  --direct-io           data files with FUSE direct I/O (no page cache)\n"
            "  --direct-io-read      only files opened read-only with direct I/O\n"
            "  --writeback-cache     ask for the kernel's FUSE writeback cache\n"
            "  --splice MODE         none | default (libfuse's: splice-read if offered) | all\n"
            "                        (splice read, write and move)\n"
            "  --transport T         dev-fuse (default: requests read from /dev/fuse) | io_uring\n"
            "                        (FUSE over io_uring, per-CPU queues; needs the kernel's\n"
            "                        enable_uring=Y, else falls back to /dev/fuse and says why)\n"
            "  --uring-depth N       ring entries per queue (default 4)\n"
            "FUSE options: -f (foreground), -s (single-threaded), -d, -o clone_fd, -o max_threads=N ...\n"
            "Counters: cat MOUNTPOINT/" STATS_NAME "\n");
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

static int run_fuse(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    int res = 1;
    if (fuse_parse_cmdline(&args, &opts) != 0) return 1;
    if (!opts.mountpoint) {
        fprintf(stderr, "fuseceiling: no mount point\n");
        goto out_args;
    }
    struct fuse_session *se = fuse_session_new(&args, &OPS, sizeof OPS, NULL);
    if (!se) goto out_args;
    if (fuse_set_signal_handlers(se) != 0) goto out_destroy;
    if (fuse_session_mount(se, opts.mountpoint) != 0) goto out_handlers;
    if (fuse_daemonize(opts.foreground) != 0) goto out_unmount;
#ifdef HAVE_FUSEURING
    if (C.uring) { /* INIT and the queues, before the loop; /dev/fuse stays served by the loop */
        U = fuseuring_start(se, 1, C.uring_depth);
        fprintf(stderr, "fuseceiling: %s\n", fuseuring_message(U));
        fflush(stderr);
    }
#endif
    if (opts.singlethread) {
        res = fuse_session_loop(se);
    } else {
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_clone_fd(lc, opts.clone_fd);
        if (opts.max_idle_threads != UINT_MAX) fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
        if (opts.max_threads > 0 && opts.max_threads <= 100000)
            fuse_loop_cfg_set_max_threads(lc, opts.max_threads);
        res = fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
    }
    if (res == SIGTERM || res == SIGINT || res == SIGHUP) res = 0;
    else if (res) res = 1;
out_unmount:
#ifdef HAVE_FUSEURING
    if (U) fuse_session_unmount(se); /* the kernel ends the ring's commands: then stop the threads */
    fuseuring_stop(U);
#endif
    fuse_session_unmount(se);
out_handlers:
    fuse_remove_signal_handlers(se);
out_destroy:
    fuse_session_destroy(se);
out_args:
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    return res;
}

int main(int argc, char **argv)
{
    char **fargv = calloc((size_t)argc + 8, sizeof *fargv);
    static char mr_opt[40];
    int fargc = 0, have_fsname = 0;
    if (!fargv) return 1;
    fargv[fargc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--direct-io")) { C.direct_io = 1; continue; }
        if (!strcmp(a, "--direct-io-read")) { C.direct_io_read = 1; continue; }
        if (!strcmp(a, "--writeback-cache")) { C.writeback_cache = 1; continue; }
        if (!strncmp(a, "--", 2) && a[2]) {
            if (i + 1 >= argc) {
                fprintf(stderr, "fuseceiling: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            uint64_t n;
            if (!strcmp(a, "--max-write")) {
                if (parse_size(v, &n) || n < 4096 || n > (1u << 20)) {
                    fprintf(stderr, "fuseceiling: bad --max-write (4k..1m)\n");
                    return 2;
                }
                C.max_write = (unsigned)n;
            } else if (!strcmp(a, "--max-read")) {
                if (parse_size(v, &n) || n > (1u << 20) || (n && n < 4096)) {
                    fprintf(stderr, "fuseceiling: bad --max-read (0 or 4k..1m)\n");
                    return 2;
                }
                C.max_read = (unsigned)n;
            } else if (!strcmp(a, "--readahead")) {
                if (parse_size(v, &n) || n > (1u << 30)) {
                    fprintf(stderr, "fuseceiling: bad --readahead\n");
                    return 2;
                }
                C.readahead = (long)n;
            } else if (!strcmp(a, "--transport")) {
                if (!strcmp(v, "dev-fuse")) C.uring = 0;
                else if (!strcmp(v, "io_uring") || !strcmp(v, "uring")) C.uring = 1;
                else {
                    fprintf(stderr, "fuseceiling: --transport must be dev-fuse or io_uring\n");
                    return 2;
                }
#ifndef HAVE_FUSEURING
                if (C.uring) {
                    fprintf(stderr, "fuseceiling: built without liburing (Debian: liburing-dev): "
                                    "--transport io_uring falls back to /dev/fuse reads\n");
                    C.uring = 0;
                }
#endif
            } else if (!strcmp(a, "--uring-depth")) {
                if (parse_size(v, &n) || n < 1 || n > 256) {
                    fprintf(stderr, "fuseceiling: bad --uring-depth (1..256)\n");
                    return 2;
                }
                C.uring_depth = (unsigned)n;
            } else if (!strcmp(a, "--splice")) {
                if (!strcmp(v, "none")) C.splice = 0;
                else if (!strcmp(v, "default")) C.splice = 1;
                else if (!strcmp(v, "all")) C.splice = 2;
                else {
                    fprintf(stderr, "fuseceiling: --splice must be none, default or all\n");
                    return 2;
                }
            } else if (!strcmp(a, "--preload")) {
                const char *colon = strrchr(v, ':');
                char name[NAME_MAX_LEN + 1];
                if (!colon || colon == v || (size_t)(colon - v) > NAME_MAX_LEN ||
                    parse_size(colon + 1, &n)) {
                    fprintf(stderr, "fuseceiling: bad --preload (NAME:SIZE)\n");
                    return 2;
                }
                snprintf(name, sizeof name, "%.*s", (int)(colon - v), v);
                if (strchr(name, '/') || !strcmp(name, STATS_NAME) || preload(name, (size_t)n)) {
                    fprintf(stderr, "fuseceiling: cannot preload %s\n", name);
                    return 1;
                }
            } else if (!strcmp(a, "--prealloc")) {
                unsigned long count;
                char sz[64];
                if (sscanf(v, "%lu:%63s", &count, sz) != 2 || parse_size(sz, &n) || !n || count > POOL_MAX) {
                    fprintf(stderr, "fuseceiling: bad --prealloc (COUNT:SIZE, COUNT <= %d)\n", POOL_MAX);
                    return 2;
                }
                for (unsigned long k = 0; k < count; k++) {
                    size_t cap = page_up((size_t)n);
                    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                                   -1, 0);
                    if (p == MAP_FAILED) {
                        fprintf(stderr, "fuseceiling: --prealloc: %s\n", strerror(errno));
                        return 1;
                    }
                    pool_give(p, cap);
                }
            } else if (!strcmp(a, "--preload-many")) {
                char prefix[200], sz[64];
                unsigned long count;
                if (sscanf(v, "%199[^:]:%lu:%63s", prefix, &count, sz) != 3 || parse_size(sz, &n) ||
                    count > MAX_FILES || strchr(prefix, '/')) {
                    fprintf(stderr, "fuseceiling: bad --preload-many (PREFIX:COUNT:SIZE)\n");
                    return 2;
                }
                for (unsigned long k = 0; k < count; k++) {
                    char name[256];
                    snprintf(name, sizeof name, "%s%lu", prefix, k);
                    if (preload(name, (size_t)n)) {
                        fprintf(stderr, "fuseceiling: cannot preload %s\n", name);
                        return 1;
                    }
                }
            } else {
                fprintf(stderr, "fuseceiling: unknown option %s\n", a);
                usage(stderr);
                return 2;
            }
            continue;
        }
        if (!strncmp(a, "-o", 2)) {
            const char *o = a[2] ? a + 2 : (i + 1 < argc ? argv[i + 1] : "");
            if (strstr(o, "fsname=")) have_fsname = 1;
            const char *m = strstr(o, "max_read=");
            if (m && (m == o || m[-1] == ',')) C.max_read = (unsigned)strtoul(m + 9, NULL, 10);
        } else if (a[0] != '-' && (i == 1 || strcmp(argv[i - 1], "-o"))) {
            C.mountpoint = a;
        }
        fargv[fargc++] = argv[i];
    }
    if (C.uring && C.splice == 2) {
        fprintf(stderr, "fuseceiling: --splice all needs --transport dev-fuse (ring replies are not spliced)\n");
        return 2;
    }
    if (!C.mountpoint) {
        usage(stderr);
        fprintf(stderr, "fuseceiling: no mount point\n");
        return 2;
    }
    static char mp_abs[PATH_MAX];
    if (realpath(C.mountpoint, mp_abs)) C.mountpoint = mp_abs;
    if (!have_fsname) {
        fargv[fargc++] = "-o";
        fargv[fargc++] = "fsname=fuseceiling,subtype=fuseceiling";
    }
    if (C.max_read) {
        snprintf(mr_opt, sizeof mr_opt, "max_read=%u", C.max_read);
        fargv[fargc++] = "-o";
        fargv[fargc++] = mr_opt;
    }
    int r = run_fuse(fargc, fargv);
    free(fargv);
    return r;
}
