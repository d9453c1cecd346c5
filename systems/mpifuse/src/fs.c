/*
 * mpifuse FUSE side and public API: the FUSE operations (metadata from the
 * source, EROFS for every change, the stats files) hand the data path to
 * the mode's backend (m->be); mpifuse_start/stop set up and tear down an
 * instance (threads, mount, the collective agreement on failure).
 */
#include "mfs.h"
#ifdef HAVE_FUSEURING
#include "../../../tools/fuseuring/fuseuring.h" /* -o io_uring (issue 30) */
static atomic_int uring_taken; /* one io_uring mount per process: the transport's state is global */
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define STATS_PATH "/.mpifuse-stats"
#define RESET_PATH "/.mpifuse-stats-reset"
#define MAX_HANDLES 64
#define WAKE_SIG (SIGRTMAX - 3) /* wakes the FUSE loop at stop (stop_fuse) */

static pthread_mutex_t g_hmu = PTHREAD_MUTEX_INITIALIZER;
static mfs_t *g_handles[MAX_HANDLES];

/* ------------------------------------------------------------------ */
/* FUSE side                                                           */
/* ------------------------------------------------------------------ */

enum { H_PASS = 1, H_EMPTY, H_STATS, H_ENTRY, H_DIR };

struct handle {
	int kind;
	DIR *dir;
	int fd;
	struct fentry *e;
	char *data;
	size_t len;
	struct stat st;
	/* open files: on m->h_list until their RELEASE (or the stop's) */
	char *path;
	struct handle *hprev, *hnext;
};

static void handle_list_add(mfs_t *m, struct handle *h, const char *path)
{
	h->path = strdup(path);
	pthread_mutex_lock(&m->h_mu);
	h->hprev = NULL;
	h->hnext = m->h_list;
	if (m->h_list)
		m->h_list->hprev = h;
	m->h_list = h;
	m->h_open++;
	pthread_mutex_unlock(&m->h_mu);
}

static void handle_list_remove(mfs_t *m, struct handle *h)
{
	pthread_mutex_lock(&m->h_mu);
	if (h->hprev)
		h->hprev->hnext = h->hnext;
	else
		m->h_list = h->hnext;
	if (h->hnext)
		h->hnext->hprev = h->hprev;
	h->hprev = h->hnext = NULL;
	m->h_open--;
	pthread_cond_broadcast(&m->h_cv);
	pthread_mutex_unlock(&m->h_mu);
}

/* what RELEASE does with an open file's handle (after handle_list_remove) */
static void handle_free(mfs_t *m, struct handle *h)
{
	if (h->kind == H_PASS && h->fd >= 0)
		close(h->fd);
	if (h->kind == H_ENTRY)
		mfs_release(m, h->e);
	free(h->path);
	free(h->data);
	free(h);
}

static mfs_t *ctx_mfs(void)
{
	return (mfs_t *)fuse_get_context()->private_data;
}

static const char *rel(const char *path)
{
	if (!path || !path[0] || (path[0] == '/' && !path[1]))
		return ".";
	return path[0] == '/' ? path + 1 : path;
}

static int is_stats(const char *path)
{
	return path && (!strcmp(path, STATS_PATH) || !strcmp(path, RESET_PATH));
}

int mfs_transport_json(mfs_t *m, char *buf, size_t len)
{
#ifdef HAVE_FUSEURING
	if (m->uring_owner) /* the process's transport, also while fuseuring_start runs */
		return fuseuring_json(NULL, buf, len);
#endif
	return snprintf(buf, len, "{\"transport\":\"dev-fuse\",\"requested\":%d,\"ring_reqs\":0,\"dev_rw_reqs\":0}",
			m->o.io_uring);
}

/* a backend's conn_init: ask the kernel for spliced replies where it can */
void mfs_want_splice(struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	mfs_t *m = ctx_mfs();
	conn->max_read = (unsigned)m->o.max_read;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (m->be->conn_init)
		m->be->conn_init(m, conn);
	if (m->o.io_uring) /* ring replies are taken from libfuse's writev: never spliced */
		conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ);
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	cfg->nullpath_ok = 1;
	cfg->use_ino = 0;
	cfg->kernel_cache = m->o.keep_cache;
	cfg->attr_timeout = m->o.attr_timeout;
	cfg->entry_timeout = m->o.attr_timeout;
	cfg->negative_timeout = 0;
	return m;
}

static void stats_stat(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = 0;
	st->st_mtime = st->st_atime = st->st_ctime = time(NULL);
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	mfs_t *m = ctx_mfs();
	if (fi && fi->fh) {
		struct handle *h = (struct handle *)(uintptr_t)fi->fh;
		*st = h->st;
		return 0;
	}
	if (is_stats(path)) {
		stats_stat(st);
		return 0;
	}
	if (fstatat(m->srcfd, rel(path), st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	return 0;
}

static int op_readlink(const char *path, char *buf, size_t size)
{
	mfs_t *m = ctx_mfs();
	if (size == 0)
		return -EINVAL;
	ssize_t n = readlinkat(m->srcfd, rel(path), buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int op_access(const char *path, int mask)
{
	mfs_t *m = ctx_mfs();
	if (mask & W_OK)
		return -EROFS;
	if (is_stats(path))
		return (mask & X_OK) ? -EACCES : 0;
	if (faccessat(m->srcfd, rel(path), mask, 0) != 0)
		return -errno;
	return 0;
}

static int op_opendir(const char *path, struct fuse_file_info *fi)
{
	mfs_t *m = ctx_mfs();
	int fd = openat(m->srcfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct handle *h = calloc(1, sizeof(*h));
	if (!h) {
		closedir(d);
		return -ENOMEM;
	}
	h->kind = H_DIR;
	h->fd = -1;
	h->dir = d;
	if (fstat(dirfd(d), &h->st) != 0)
		memset(&h->st, 0, sizeof(h->st));
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	(void)path;
	(void)off;
	(void)flags;
	DIR *d = ((struct handle *)(uintptr_t)fi->fh)->dir;
	rewinddir(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = de->d_ino;
		st.st_mode = (mode_t)DTTOIF(de->d_type);
		if (filler(buf, de->d_name, &st, 0, 0))
			break;
	}
	return 0;
}

static int op_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	closedir(h->dir);
	free(h);
	return 0;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	mfs_t *m = ctx_mfs();
	if (fstatvfs(m->srcfd, sv) != 0)
		return -errno;
	sv->f_flag |= ST_RDONLY;
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	mfs_t *m = ctx_mfs();
	uint64_t t0 = mfs_now_ns();
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT)))
		return -EROFS;
	struct handle *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->fd = -1;
	int rc = 0;
	if (is_stats(path)) {
		h->kind = H_STATS;
		h->data = malloc(16384);
		int n = mfs_stats_to_json(m, h->data, 16384 - 2);
		if (n < 0)
			n = snprintf(h->data, 16384, "{}");
		h->data[n++] = '\n';
		h->len = (size_t)n;
		stats_stat(&h->st);
		if (!strcmp(path, RESET_PATH))
			mfs_stats_zero(&m->st);
		fi->direct_io = 1;
		fi->keep_cache = 0;
		fi->fh = (uint64_t)(uintptr_t)h;
		handle_list_add(m, h, rel(path));
		return 0;
	}
	SADD(m, open_calls, 1);
	mfs_mark_first_open(m);
	const char *r = rel(path);
	int fd = openat(m->srcfd, r, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (fstat(fd, &h->st) != 0) {
		rc = -errno;
		close(fd);
		goto out;
	}
	if (!m->be->distributed || !S_ISREG(h->st.st_mode)) {
		h->kind = H_PASS;
		h->fd = fd;
	} else if (h->st.st_size == 0) {
		h->kind = H_EMPTY;
		close(fd);
	} else {
		close(fd);
		h->kind = H_ENTRY;
		rc = mfs_acquire(m, r, &h->st, &h->e);
	}
out:
	if (rc) {
		free(h);
	} else {
		fi->fh = (uint64_t)(uintptr_t)h;
		fi->keep_cache = m->o.keep_cache;
		handle_list_add(m, h, r);
	}
	SADD(m, open_ns, mfs_now_ns() - t0);
	return rc;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	mfs_t *m = ctx_mfs();
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	if (!h)
		return 0;
	handle_list_remove(m, h);
	handle_free(m, h);
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	mfs_t *m = ctx_mfs();
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	if (off < 0)
		return -EINVAL;
	if (h->kind == H_STATS) {
		if ((size_t)off >= h->len)
			return 0;
		size_t n = h->len - (size_t)off < size ? h->len - (size_t)off : size;
		memcpy(buf, h->data + off, n);
		return (int)n;
	}
	uint64_t t0 = mfs_now_ns();
	int rc = 0;
	if (h->kind == H_PASS) {
		rc = mfs_pass_read(m, h->fd, buf, size, off);
	} else if (h->kind == H_ENTRY) {
		struct fentry *e = h->e;
		uint64_t o = (uint64_t)off;
		if (o >= e->size) {
			rc = 0;
		} else {
			if (size > e->size - o)
				size = (size_t)(e->size - o);
			rc = m->be->read(m, e, buf, size, o);
		}
	}
	SADD(m, read_ns, mfs_now_ns() - t0);
	SADD(m, read_calls, 1);
	if (rc > 0)
		SADD(m, read_bytes, rc);
	return rc;
}

/* passthrough with splice: hand libfuse the source fd */
static int op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	mfs_t *m = ctx_mfs();
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	/* fd reads: bcast zero_copy (the backend's buffer), osr-refined map_source+splice
	 * (the own part's source file); a range the backend has no fd for is copied below */
	if (h->kind == H_ENTRY && m->fd_reads) {
		struct fentry *e = h->e;
		if (off < 0)
			return -EINVAL;
		uint64_t t0 = mfs_now_ns(), o = (uint64_t)off;
		int rc = 0, fd = -1;
		if (o < e->size) {
			if (size > e->size - o)
				size = (size_t)(e->size - o);
			rc = m->be->read_fd(m, e, size, o, &fd);
		}
		if (rc == -EAGAIN)
			goto copy;
		if (rc < 0)
			return rc;
		struct fuse_bufvec *bv = malloc(sizeof(*bv));
		if (!bv)
			return -ENOMEM;
		*bv = FUSE_BUFVEC_INIT((size_t)rc);
		if (rc > 0) {
			bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
			bv->buf[0].fd = fd;
			bv->buf[0].pos = (off_t)o;
		}
		*bufp = bv;
		SADD(m, read_ns, mfs_now_ns() - t0);
		SADD(m, read_calls, 1);
		if (rc > 0) {
			SADD(m, read_bytes, rc);
			SADD(m, zc_bytes, rc);
		}
		return 0;
	}
copy:
	if (h->kind != H_PASS) { /* the stats files, empty files, ranges without an fd */
		struct fuse_bufvec *bv = malloc(sizeof(*bv));
		char *mem = malloc(size ? size : 1);
		if (!bv || !mem) {
			free(bv);
			free(mem);
			return -ENOMEM;
		}
		int rc = op_read(path, mem, size, off, fi);
		if (rc < 0) {
			free(bv);
			free(mem);
			return rc;
		}
		*bv = FUSE_BUFVEC_INIT((size_t)rc);
		bv->buf[0].mem = mem;
		*bufp = bv;
		return 0;
	}
	return mfs_pass_read_buf(m, h->fd, h->st.st_size, bufp, size, off);
}

static int op_erofs_mknod(const char *p, mode_t mo, dev_t d) { (void)p; (void)mo; (void)d; return -EROFS; }
static int op_erofs_mkdir(const char *p, mode_t mo) { (void)p; (void)mo; return -EROFS; }
static int op_erofs_path(const char *p) { (void)p; return -EROFS; }
static int op_erofs_2path(const char *a, const char *b) { (void)a; (void)b; return -EROFS; }
static int op_erofs_rename(const char *a, const char *b, unsigned int f) { (void)a; (void)b; (void)f; return -EROFS; }
static int op_erofs_chmod(const char *p, mode_t mo, struct fuse_file_info *fi) { (void)p; (void)mo; (void)fi; return -EROFS; }
static int op_erofs_chown(const char *p, uid_t u, gid_t g, struct fuse_file_info *fi) { (void)p; (void)u; (void)g; (void)fi; return -EROFS; }
static int op_erofs_truncate(const char *p, off_t o, struct fuse_file_info *fi) { (void)p; (void)o; (void)fi; return -EROFS; }
static int op_erofs_write(const char *p, const char *b, size_t s, off_t o, struct fuse_file_info *fi)
{ (void)p; (void)b; (void)s; (void)o; (void)fi; return -EROFS; }
static int op_erofs_create(const char *p, mode_t mo, struct fuse_file_info *fi) { (void)p; (void)mo; (void)fi; return -EROFS; }
static int op_erofs_utimens(const char *p, const struct timespec tv[2], struct fuse_file_info *fi) { (void)p; (void)tv; (void)fi; return -EROFS; }
static int op_erofs_setxattr(const char *p, const char *n, const char *v, size_t s, int f)
{ (void)p; (void)n; (void)v; (void)s; (void)f; return -EROFS; }
static int op_erofs_removexattr(const char *p, const char *n) { (void)p; (void)n; return -EROFS; }
static int op_erofs_fallocate(const char *p, int mo, off_t o, off_t l, struct fuse_file_info *fi)
{ (void)p; (void)mo; (void)o; (void)l; (void)fi; return -EROFS; }

static void fill_ops(mfs_t *m, struct fuse_operations *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->init = op_init;
	ops->getattr = op_getattr;
	ops->readlink = op_readlink;
	ops->access = op_access;
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->releasedir = op_releasedir;
	ops->statfs = op_statfs;
	ops->open = op_open;
	ops->read = op_read;
	if ((!m->be->distributed && m->o.splice) || /* passthrough: splice from the source */
	    m->fd_reads)                            /* the backend's buffer / source fd */
		ops->read_buf = op_read_buf;
	ops->release = op_release;
	ops->mknod = op_erofs_mknod;
	ops->mkdir = op_erofs_mkdir;
	ops->unlink = op_erofs_path;
	ops->rmdir = op_erofs_path;
	ops->symlink = op_erofs_2path;
	ops->link = op_erofs_2path;
	ops->rename = op_erofs_rename;
	ops->chmod = op_erofs_chmod;
	ops->chown = op_erofs_chown;
	ops->truncate = op_erofs_truncate;
	ops->write = op_erofs_write;
	ops->create = op_erofs_create;
	ops->utimens = op_erofs_utimens;
	ops->setxattr = op_erofs_setxattr;
	ops->removexattr = op_erofs_removexattr;
	ops->fallocate = op_erofs_fallocate;
}

static void *fuse_thread(void *arg)
{
	mfs_t *m = arg;
	int rc;
	if (m->wake_sig) { /* the stop's wake-up; libfuse's workers inherit the mask */
		sigset_t w;
		sigemptyset(&w);
		sigaddset(&w, WAKE_SIG);
		pthread_sigmask(SIG_UNBLOCK, &w, NULL);
	}
#ifdef HAVE_FUSEURING
	/* -o io_uring: INIT and the per-CPU queues before the loop, which keeps serving /dev/fuse
	 * (FORGET, INTERRUPT); one such mount per process (the transport's state is global) */
	if (m->o.io_uring) {
		if (atomic_exchange(&uring_taken, 1)) {
			fprintf(stderr, "mpifuse: rank %d: io_uring: another mount of this process has it; "
				"serving %s through /dev/fuse reads\n", m->rank, m->mountpoint);
		} else {
			m->uring_owner = 1; /* the stats see the transport while it starts (requests come at once) */
			m->uring = fuseuring_start(fuse_get_session(m->fuse), 1, 0);
			if (!m->uring) {
				m->uring_owner = 0;
				atomic_store(&uring_taken, 0);
			}
			if (m->o.verbose || m->rank <= 1)
				fprintf(stderr, "mpifuse: rank %d: %s\n", m->rank,
					m->uring ? fuseuring_message(m->uring) : "io_uring: out of memory");
		}
	}
#else
	if (m->o.io_uring)
		fprintf(stderr, "mpifuse: rank %d: built without liburing: -o io_uring serves through /dev/fuse\n",
			m->rank);
#endif
	atomic_store(&m->transport_ready, 1);
	if (m->o.threads) {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_max_threads(cfg, (unsigned)m->o.max_threads);
		fuse_loop_cfg_set_idle_threads(cfg, (unsigned)m->o.max_threads);
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		rc = fuse_loop_mt(m->fuse, cfg);
		fuse_loop_cfg_destroy(cfg);
	} else {
		rc = fuse_loop(m->fuse);
	}
	mfs_vlog(m, "FUSE loop ended (%d)", rc);
	atomic_store(&m->cpu_unmount_ns, mfs_process_cpu_ns());
	atomic_store(&m->unmount_ns, mfs_now_ns());
	atomic_store(&m->fuse_ended, 1);
	atomic_store(&m->should_stop, 1);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* public API                                                          */
/* ------------------------------------------------------------------ */

static mfs_t *get_handle(int h)
{
	if (h < 0 || h >= MAX_HANDLES)
		return NULL;
	pthread_mutex_lock(&g_hmu);
	mfs_t *m = g_handles[h];
	pthread_mutex_unlock(&g_hmu);
	return m;
}

static void set_readahead(mfs_t *m)
{
	if (m->o.readahead_kb < 0)
		return;
	long kb = m->o.readahead_kb ? m->o.readahead_kb : (long)(4 * m->o.max_read / 1024);
	struct stat st;
	if (stat(m->mountpoint, &st) != 0)
		return;
	char p[128];
	snprintf(p, sizeof(p), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev), minor(st.st_dev));
	FILE *f = fopen(p, "w");
	if (!f) {
		mfs_vlog(m, "cannot set %s: %s", p, strerror(errno));
		return;
	}
	fprintf(f, "%ld\n", kb);
	if (fclose(f) != 0)
		mfs_vlog(m, "cannot set %s: %s", p, strerror(errno));
}

/* The FUSE loop checks its exit flag only between requests (and, the
 * multithreaded loop's main thread, when its semaphore wait is interrupted).
 * Without a wake-up it ends only when the unmount ends the connection, which
 * a lazy unmount does not while a process still has a file (or directory) of
 * the mount open. The wake-up is a signal to the loop's thread (no handler
 * semantics: it only interrupts the wait with EINTR), never a request to our
 * own mount: a thread of the daemon waiting for its own FUSE answer would
 * keep the process (and the mount) alive forever if the process is killed
 * meanwhile. The signal is used only while its disposition is the default
 * (the application does not use it). */
static void wake_handler(int sig)
{
	(void)sig;
}

static int wake_sig_install(void)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static int state; /* 0 not tried, 1 ours, -1 in use by the application */
	pthread_mutex_lock(&mu);
	if (state == 0) {
		struct sigaction old, sa;
		state = -1;
		if (sigaction(WAKE_SIG, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL) {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = wake_handler;
			sigemptyset(&sa.sa_mask);
			sa.sa_flags = 0; /* no SA_RESTART: the wait returns EINTR */
			if (sigaction(WAKE_SIG, &sa, NULL) == 0)
				state = 1;
		}
	}
	int ok = state == 1;
	pthread_mutex_unlock(&mu);
	return ok;
}

/* Stop: wait up to stop_grace for the RELEASE of the files still open on
 * this mount (the kernel sends it asynchronously after the last close; a
 * program may still hold a file), then end the loop and unmount; handles
 * whose RELEASE never came are released here (each holds a reference on its
 * distributed entry, which the shutdown's teardown would wait for forever).
 * Returns how many were released here. */
static int stop_fuse(mfs_t *m)
{
	if (!m->fuse)
		return 0;
	if (m->fuse_started && !atomic_load(&m->fuse_ended)) {
		pthread_mutex_lock(&m->h_mu);
		uint64_t t0 = mfs_now_ns();
		while (m->h_open > 0 && (double)(mfs_now_ns() - t0) / 1e9 < m->o.stop_grace &&
		       !atomic_load(&m->fuse_ended))
			mfs_cv_wait(&m->h_cv, &m->h_mu, 0.05);
		if (m->h_open > 0) {
			char names[1024] = "";
			size_t l = 0;
			for (struct handle *h = m->h_list; h && l < sizeof(names) - 1; h = h->hnext)
				l += (size_t)snprintf(names + l, sizeof(names) - l, "%s%s", l ? ", " : "",
						      h->path ? h->path : "?");
			fprintf(stderr,
				"mpifuse: rank %d: warning: %d file(s) still open at unmount after the %g s grace, "
				"released by the file system: %s (their readers get ENOTCONN)\n",
				m->rank, m->h_open, m->o.stop_grace, names);
		}
		pthread_mutex_unlock(&m->h_mu);
	}
	fuse_exit(m->fuse);
	if (m->fuse_started && m->wake_sig) { /* repeated: a signal just before the wait is missed */
		uint64_t t0 = mfs_now_ns();
		while (!atomic_load(&m->fuse_ended) && mfs_now_ns() - t0 < 2000000000ull) {
			pthread_kill(m->fuse_thr, WAKE_SIG);
			usleep(10000);
		}
	}
	if (m->mounted) {
		fuse_unmount(m->fuse);
		m->mounted = 0;
	}
	if (m->fuse_started) {
		struct timespec ts;
		mfs_abstime_in(&ts, m->o.timeout);
		int rc = pthread_timedjoin_np(m->fuse_thr, NULL, &ts);
		if (rc == ETIMEDOUT)
			mfs_fatal(m, "the FUSE loop of %s did not end within %.0f s after unmount "
				  "(a process still uses the mount?)",
				  m->mountpoint, m->o.timeout);
		m->fuse_started = 0;
	}
#ifdef HAVE_FUSEURING
	char uj[1024] = "";
	if (m->uring) { /* the queue threads end once the unmount has ended their commands */
		fuseuring_stop(m->uring);
		fuseuring_json(m->uring, uj, sizeof(uj));
	}
#endif
	fuse_destroy(m->fuse);
	m->fuse = NULL;
#ifdef HAVE_FUSEURING
	if (m->uring) {
		if (m->o.verbose)
			fprintf(stderr, "mpifuse: rank %d: %s\n", m->rank, uj);
		m->uring_owner = 0;
		fuseuring_free(m->uring);
		m->uring = NULL;
		atomic_store(&uring_taken, 0);
	}
#endif
	/* no request comes any more: what was not released, never will be */
	int n = 0;
	for (;;) {
		pthread_mutex_lock(&m->h_mu);
		struct handle *h = m->h_list;
		pthread_mutex_unlock(&m->h_mu);
		if (!h)
			break;
		mfs_vlog(m, "releasing %s (no RELEASE came before the unmount)", h->path ? h->path : "?");
		handle_list_remove(m, h);
		handle_free(m, h);
		n++;
	}
	return n;
}

static int agree(mfs_t *m, int rc)
{
	int all = 0;
	MLOCK(m);
	MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, m->ctrl);
	MUNLOCK(m);
	return all;
}

static void shutdown_threads(mfs_t *m)
{
	if (m->mpi_started) {
		struct timespec ts;
		mfs_abstime_in(&ts, m->o.timeout * 3 + 10);
		if (pthread_timedjoin_np(m->mpi_thr, NULL, &ts) == ETIMEDOUT)
			mfs_fatal(m, "the MPI thread did not finish the shutdown protocol");
		m->mpi_started = 0;
	}
	if (m->load_started) {
		pthread_mutex_lock(&m->load_mu);
		m->load_stop = 1;
		pthread_cond_broadcast(&m->load_cv);
		pthread_mutex_unlock(&m->load_mu);
		pthread_join(m->load_thr, NULL);
		m->load_started = 0;
	}
	if (m->wd_started) {
		atomic_store(&m->wd_stop, 1);
		pthread_join(m->wd_thr, NULL);
		m->wd_started = 0;
	}
}

static void destroy(mfs_t *m)
{
	if (m->ctrl != MPI_COMM_NULL)
		MPI_Comm_free(&m->ctrl);
	if (m->coll != MPI_COMM_NULL)
		MPI_Comm_free(&m->coll);
	if (m->srcfd >= 0)
		close(m->srcfd);
	pthread_mutex_destroy(&m->mpi_mu);
	free(m);
}

int mpifuse_start(MPI_Comm comm, const char *mode, const char *source, const char *mountpoint, const char *options)
{
	int inited = 0, fin = 0;
	MPI_Finalized(&fin);
	if (fin)
		return -EINVAL;
	MPI_Initialized(&inited);
	if (!inited) {
		int prov;
		MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &prov);
	}
	mfs_t *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->srcfd = -1;
	m->ctrl = m->coll = MPI_COMM_NULL;
	pthread_mutex_init(&m->mpi_mu, NULL);
	pthread_mutex_init(&m->out_mu, NULL);
	pthread_cond_init(&m->out_cv, NULL);
	pthread_mutex_init(&m->pend_mu, NULL);
	pthread_cond_init(&m->pend_cv, NULL);
	pthread_mutex_init(&m->tab_mu, NULL);
	pthread_cond_init(&m->tab_cv, NULL);
	pthread_mutex_init(&m->load_mu, NULL);
	pthread_cond_init(&m->load_cv, NULL);
	pthread_mutex_init(&m->h_mu, NULL);
	pthread_cond_init(&m->h_cv, NULL);
	mfs_stats_zero(&m->st);
	MPI_Query_thread(&m->thread_level);
	m->serialized = m->thread_level < MPI_THREAD_MULTIPLE;
	/* the duplicates are used only by this library; errors abort */
	MPI_Comm_dup(comm, &m->ctrl);
	MPI_Comm_set_errhandler(m->ctrl, MPI_ERRORS_ARE_FATAL);
	MPI_Comm_dup(comm, &m->coll);
	MPI_Comm_set_errhandler(m->coll, MPI_ERRORS_ARE_FATAL);
	MPI_Comm_rank(m->ctrl, &m->rank);
	MPI_Comm_size(m->ctrl, &m->nranks);

	int rc = 0;
	char err[PATH_MAX + 512] = "";
	mfs_default_opts(&m->o);
	if (!mode || mfs_parse_mode(mode, &m->mode) || !(m->be = mfs_mode_backend(m->mode))) {
		snprintf(err, sizeof(err), "unknown mode '%s' (osr, osr-refined, bcast, passthrough)", mode ? mode : "");
		rc = -EINVAL;
	} else if (mfs_parse_opts(&m->o, options, err, sizeof(err))) {
		rc = -EINVAL;
	} else if (m->be->check_opts && m->be->check_opts(m, mode, err, sizeof(err))) {
		rc = -EINVAL;
	} else if (m->o.zero_copy && !m->be->read_fd) {
		snprintf(err, sizeof(err), "zero_copy is a bcast option (mode %s reads through a copy)", mode);
		rc = -EINVAL;
	} else if (m->o.map_source && m->mode != M_REFINED) {
		snprintf(err, sizeof(err), "map_source is an osr-refined option (mode %s has no own-part window of "
			 "that kind)", mode);
		rc = -EINVAL;
	} else if (m->thread_level < MPI_THREAD_SERIALIZED) {
		snprintf(err, sizeof(err), "MPI thread level %s is insufficient (need SERIALIZED or MULTIPLE)",
			 mfs_level_name(m->thread_level));
		rc = -ENOTSUP;
	} else if (!source || !mountpoint || !realpath(source, m->source)) {
		snprintf(err, sizeof(err), "bad source directory '%s': %s", source ? source : "", strerror(errno));
		rc = -ENOENT;
	} else {
		snprintf(m->mountpoint, sizeof(m->mountpoint), "%s", mountpoint);
		m->srcfd = open(m->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (m->srcfd < 0) {
			rc = -errno;
			snprintf(err, sizeof(err), "cannot open source %s: %s", m->source, strerror(errno));
		} else if (mkdir(mountpoint, 0755) != 0 && errno != EEXIST) {
			rc = -errno;
			snprintf(err, sizeof(err), "cannot create mount point %s: %s", mountpoint, strerror(errno));
		} else {
			char rp[PATH_MAX];
			if (realpath(mountpoint, rp))
				snprintf(m->mountpoint, sizeof(m->mountpoint), "%s", rp);
		}
	}
	if (rc == 0 && m->o.bcast_sync < 0) /* auto: on demand paces with an explicit barrier */
		m->o.bcast_sync = m->o.bcast_on_demand;
	if (rc)
		fprintf(stderr, "mpifuse: rank %d: %s\n", m->rank, err);
	int all = agree(m, rc);
	if (all) {
		destroy(m);
		return all;
	}
	if (m->o.verbose || m->rank == 0)
		fprintf(stderr, "mpifuse: rank %d: MPI thread level %s (%s), FUSE %s\n", m->rank,
			mfs_level_name(m->thread_level),
			m->serialized ? "one global MPI lock" : "no global MPI lock",
			m->o.threads ? "multithreaded" : "single threaded");

	if (mfs_spawn(&m->wd_thr, mfs_wd_thread, m) == 0)
		m->wd_started = 1;
	if (mfs_spawn(&m->load_thr, mfs_load_thread, m) == 0)
		m->load_started = 1;
	if (mfs_spawn(&m->mpi_thr, mfs_mpi_thread, m) == 0)
		m->mpi_started = 1;
	if (!m->wd_started || !m->load_started || !m->mpi_started)
		mfs_fatal(m, "cannot create threads");

	/* FUSE session */
	char optbuf[1024];
	snprintf(optbuf, sizeof(optbuf), "ro,max_read=%zu,fsname=mpifuse:%s,subtype=mpifuse%s", m->o.max_read,
		 mfs_mode_name(m->mode), m->o.allow_other ? ",allow_other" : "");
	char *argv[] = { "mpifuse", "-o", optbuf, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fuse_operations ops;
	/* read_buf asks the backend for an fd: bcast zero_copy; osr-refined map_source+splice */
	m->fd_reads = m->be->read_fd && (m->o.zero_copy || (m->o.map_source && m->o.splice));
	fill_ops(m, &ops);
	m->fuse = fuse_new(&args, &ops, sizeof(ops), m);
	rc = 0;
	if (!m->fuse) {
		fprintf(stderr, "mpifuse: rank %d: fuse_new failed\n", m->rank);
		rc = -EIO;
	} else if (fuse_mount(m->fuse, m->mountpoint) != 0) {
		fprintf(stderr, "mpifuse: rank %d: cannot mount at %s\n", m->rank, m->mountpoint);
		rc = -EIO;
	} else {
		m->mounted = 1;
	}
	fuse_opt_free_args(&args);
	all = agree(m, rc);
	if (all == 0) {
		m->wake_sig = wake_sig_install();
		if (mfs_spawn(&m->fuse_thr, fuse_thread, m) != 0)
			mfs_fatal(m, "cannot create the FUSE thread");
		m->fuse_started = 1;
		/* -o io_uring: the queues are set up by the FUSE thread before its loop; the mount is
		 * handed out once they are (a timed read must not share the CPU with their set-up) */
		for (uint64_t t0 = mfs_now_ns(); m->o.io_uring && !atomic_load(&m->transport_ready) &&
		     mfs_now_ns() - t0 < 10000000000ull;)
			usleep(1000);
		set_readahead(m);
		m->cpu_mount_ns = mfs_process_cpu_ns();
		m->mount_ns = mfs_now_ns();
	}
	/* register */
	pthread_mutex_lock(&g_hmu);
	int h = -1;
	for (int i = 0; i < MAX_HANDLES; i++)
		if (!g_handles[i]) {
			g_handles[i] = m;
			h = i;
			break;
		}
	pthread_mutex_unlock(&g_hmu);
	m->handle = h;
	if (all == 0 && h >= 0)
		return h;
	/* failure somewhere: undo collectively */
	if (h >= 0)
		mpifuse_stop(h);
	return all ? all : -EMFILE;
}

int mpifuse_stats_json(int h, char *buf, size_t len)
{
	mfs_t *m = get_handle(h);
	if (!m)
		return -EBADF;
	return mfs_stats_to_json(m, buf, len);
}

int mpifuse_stats_reset(int h)
{
	mfs_t *m = get_handle(h);
	if (!m)
		return -EBADF;
	mfs_stats_zero(&m->st);
	return 0;
}

int mpifuse_should_stop(int h)
{
	mfs_t *m = get_handle(h);
	if (!m)
		return -EBADF;
	return atomic_load(&m->should_stop) ? 1 : 0;
}

int mpifuse_request_shutdown(int h)
{
	mfs_t *m = get_handle(h);
	if (!m)
		return -EBADF;
	for (int r = 0; r < m->nranks; r++)
		if (r != m->rank)
			mfs_send_msg(m, r, MT_SHUTDOWN, 0, 0, 0, 0, 0, NULL);
	atomic_store(&m->should_stop, 1);
	return 0;
}

const char *mpifuse_mountpoint(int h)
{
	mfs_t *m = get_handle(h);
	return m ? m->mountpoint : NULL;
}

int mpifuse_stop(int h)
{
	mfs_t *m = get_handle(h);
	if (!m)
		return -EBADF;
	/* 1. local: no more FUSE requests (and so no more MPI_Get / opens) */
	stop_fuse(m);
	/* 2. protocol: every rank reports, rank 0 answers FINAL, then every
	 *    MPI thread frees the remaining windows in the same order */
	m->stopping_since = mfs_now_ns();
	atomic_store(&m->stopping, 1);
	mfs_send_msg(m, 0, MT_STOP_READY, 0, 0, 0, 0, 0, NULL);
	shutdown_threads(m);
	pthread_mutex_lock(&g_hmu);
	g_handles[h] = NULL;
	pthread_mutex_unlock(&g_hmu);
	destroy(m);
	return 0;
}
