/*
 * mpifuse core: the MPI side (progress/announcement thread, coordinator,
 * windows, loader, broadcast streams, watchdog) and the FUSE operations.
 *
 * Threads per instance (per rank):
 *   - FUSE loop (+ libfuse worker threads when threads=on)
 *   - MPI thread: polls the control communicator with MPI_Iprobe + usleep
 *     (this is also the passive-target progress thread), executes every
 *     collective (window creation/free, communicator dup) in the order
 *     announced by the coordinator (rank 0), sends queued messages.
 *   - loader: reads this rank's part of a file from the source into its
 *     window (osr, osr-refined), off the MPI thread.
 *   - one stream thread per broadcast file (bcast).
 *   - watchdog: aborts the job when a blocking MPI call exceeds timeout.
 */
#include "mfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

const char *mfs_level_name(int l);

#define STATS_PATH "/.mpifuse-stats"
#define RESET_PATH "/.mpifuse-stats-reset"
#define TAG_CTRL 4711
#define MAX_MSG (PATH_MAX + 256)
#define MAX_HANDLES 64

enum { MT_ACQ = 1, MT_ACQ_REPLY, MT_CREATE, MT_READY, MT_REL, MT_FREE, MT_STOP_READY, MT_FINAL, MT_SHUTDOWN };

struct msg_hdr {
	int32_t type;
	int32_t src;
	int32_t status;
	int32_t pathlen;
	uint64_t id;
	uint64_t req;
	uint64_t size;
	int64_t mtime_ns;
};

static pthread_mutex_t g_hmu = PTHREAD_MUTEX_INITIALIZER;
static mfs_t *g_handles[MAX_HANDLES];

#define MLOCK(m) do { if ((m)->serialized) pthread_mutex_lock(&(m)->mpi_mu); } while (0)
#define MUNLOCK(m) do { if ((m)->serialized) pthread_mutex_unlock(&(m)->mpi_mu); } while (0)

/* ------------------------------------------------------------------ */
/* failure handling                                                    */
/* ------------------------------------------------------------------ */

static void *abort_backstop(void *arg)
{
	(void)arg;
	sleep(20);
	fprintf(stderr, "mpifuse: MPI_Abort did not terminate the process, _exit(70)\n");
	_exit(70);
	return NULL;
}

static void mfs_fatal(mfs_t *m, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void mfs_fatal(mfs_t *m, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "mpifuse: rank %d: FATAL: %s; aborting the MPI job\n", m ? m->rank : -1, msg);
	fflush(stderr);
	if (m && m->mounted)
		umount2(m->mountpoint, MNT_DETACH); /* do not leave a dead mount behind */
	pthread_t t;
	if (pthread_create(&t, NULL, abort_backstop, NULL) == 0)
		pthread_detach(t);
	MPI_Abort(m && m->ctrl != MPI_COMM_NULL ? m->ctrl : MPI_COMM_WORLD, 70);
	_exit(70);
}

static void vlog(mfs_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vlog(mfs_t *m, const char *fmt, ...)
{
	if (!m->o.verbose)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "mpifuse: rank %d: %s\n", m->rank, msg);
}

/* watchdog: a blocking MPI call registers itself; if it takes longer than
 * timeout the job is aborted with a message naming what it waited for. */
static int wd_begin(mfs_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wd_begin(mfs_t *m, const char *fmt, ...)
{
	for (int i = 0; i < WD_SLOTS; i++) {
		int expect = 0;
		if (atomic_compare_exchange_strong(&m->wd[i].used, &expect, 2)) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(m->wd[i].what, sizeof(m->wd[i].what), fmt, ap);
			va_end(ap);
			m->wd[i].start_ns = mfs_now_ns();
			m->wd[i].timeout = m->o.timeout;
			atomic_store(&m->wd[i].used, 1);
			return i;
		}
	}
	return -1;
}

static void wd_end(mfs_t *m, int i)
{
	if (i >= 0)
		atomic_store(&m->wd[i].used, 0);
}

static void *wd_thread(void *arg)
{
	mfs_t *m = arg;
	while (!atomic_load(&m->wd_stop)) {
		usleep(250000);
		uint64_t now = mfs_now_ns();
		for (int i = 0; i < WD_SLOTS; i++) {
			if (atomic_load(&m->wd[i].used) != 1)
				continue;
			uint64_t st = m->wd[i].start_ns;
			if (now > st && (double)(now - st) / 1e9 > m->wd[i].timeout)
				mfs_fatal(m, "timeout after %.0f s in %s (a peer rank is probably gone)",
					  m->wd[i].timeout, m->wd[i].what);
		}
	}
	return NULL;
}

/* create a thread with all asynchronous signals blocked, so that signals
 * go to the application's own threads */
static int spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void abstime_in(struct timespec *ts, double sec)
{
	clock_gettime(CLOCK_REALTIME, ts);
	uint64_t ns = (uint64_t)ts->tv_nsec + (uint64_t)(sec * 1e9);
	ts->tv_sec += (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* wait on cv; returns 0, or ETIMEDOUT after `sec` */
static int cv_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double sec)
{
	struct timespec ts;
	abstime_in(&ts, sec);
	return pthread_cond_timedwait(cv, mu, &ts);
}

/* ------------------------------------------------------------------ */
/* buffers                                                             */
/* ------------------------------------------------------------------ */

static int mbuf_alloc(mfs_t *m, struct mbuf *b, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->len = len;
	if (len == 0)
		return 0;
	if (m->o.mem_cap && len > m->o.mem_cap) {
		char tmpl[PATH_MAX + 64];
		snprintf(tmpl, sizeof(tmpl), "%s/mpifuse-spool-XXXXXX", m->o.spool);
		int fd = mkstemp(tmpl);
		if (fd < 0)
			return -errno;
		unlink(tmpl);
		if (ftruncate(fd, (off_t)len) != 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		int e = errno;
		close(fd);
		if (p == MAP_FAILED)
			return -e;
		b->p = p;
		b->kind = 2;
		return 0;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	b->p = p;
	b->kind = 1;
	return 0;
}

static void mbuf_free(struct mbuf *b)
{
	if (b->p && b->len)
		munmap(b->p, b->len);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------ */
/* messages                                                            */
/* ------------------------------------------------------------------ */

static void send_msg(mfs_t *m, int dest, int type, uint64_t id, uint64_t req, uint64_t size,
		     int64_t mtime, int status, const char *path)
{
	size_t pl = path ? strlen(path) + 1 : 0;
	struct outmsg *o = calloc(1, sizeof(*o) + sizeof(struct msg_hdr) + pl);
	if (!o)
		mfs_fatal(m, "out of memory");
	struct msg_hdr *h = (struct msg_hdr *)o->data;
	h->type = type;
	h->src = m->rank;
	h->status = status;
	h->pathlen = (int32_t)pl;
	h->id = id;
	h->req = req;
	h->size = size;
	h->mtime_ns = mtime;
	if (pl)
		memcpy(o->data + sizeof(*h), path, pl);
	o->dest = dest;
	o->len = (int)(sizeof(*h) + pl);
	pthread_mutex_lock(&m->out_mu);
	if (m->out_tail)
		m->out_tail->next = o;
	else
		m->out_head = o;
	m->out_tail = o;
	pthread_cond_signal(&m->out_cv);
	pthread_mutex_unlock(&m->out_mu);
}

/* MPI thread only: post queued messages, complete finished sends */
static int flush_outbox(mfs_t *m)
{
	int did = 0;
	pthread_mutex_lock(&m->out_mu);
	struct outmsg *list = m->out_head;
	m->out_head = m->out_tail = NULL;
	pthread_mutex_unlock(&m->out_mu);
	while (list) {
		struct outmsg *o = list;
		list = o->next;
		MLOCK(m);
		MPI_Isend(o->data, o->len, MPI_BYTE, o->dest, TAG_CTRL, m->ctrl, &o->req);
		MUNLOCK(m);
		o->next = m->sending;
		m->sending = o;
		did = 1;
	}
	struct outmsg **pp = &m->sending;
	while (*pp) {
		int flag = 0;
		MLOCK(m);
		MPI_Test(&(*pp)->req, &flag, MPI_STATUS_IGNORE);
		MUNLOCK(m);
		if (flag) {
			struct outmsg *d = *pp;
			*pp = d->next;
			free(d);
		} else {
			pp = &(*pp)->next;
		}
	}
	return did;
}

/* ------------------------------------------------------------------ */
/* file table                                                          */
/* ------------------------------------------------------------------ */

static struct fentry *tab_find(mfs_t *m, uint64_t id)
{
	pthread_mutex_lock(&m->tab_mu);
	struct fentry *e = m->entries;
	while (e && e->id != id)
		e = e->next;
	pthread_mutex_unlock(&m->tab_mu);
	return e;
}

static void tab_insert(mfs_t *m, struct fentry *e)
{
	pthread_mutex_lock(&m->tab_mu);
	struct fentry **pp = &m->entries;
	while (*pp)
		pp = &(*pp)->next;
	e->next = NULL;
	*pp = e;
	pthread_mutex_unlock(&m->tab_mu);
	atomic_fetch_add(&m->live, 1);
}

static void tab_remove(mfs_t *m, struct fentry *e)
{
	pthread_mutex_lock(&m->tab_mu);
	for (struct fentry **pp = &m->entries; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&m->tab_mu);
	atomic_fetch_sub(&m->live, 1);
}

static uint64_t part_size(mfs_t *m, uint64_t size)
{
	uint64_t n = (uint64_t)m->nranks;
	uint64_t p = (size + n - 1) / n;
	uint64_t a = m->o.align ? m->o.align : 1;
	p = (p + a - 1) / a * a;
	return p ? p : 1;
}

static void owner_range(struct fentry *e, int r, uint64_t *off, uint64_t *len)
{
	uint64_t o = (uint64_t)r * e->part;
	if (o > e->size)
		o = e->size;
	uint64_t end = o + e->part;
	if (end > e->size)
		end = e->size;
	*off = o;
	*len = end - o;
}

/* ------------------------------------------------------------------ */
/* loader: reads this rank's part into its window                      */
/* ------------------------------------------------------------------ */

static int pread_full(mfs_t *m, int fd, char *dst, uint64_t len, uint64_t off, atomic_int *cancel)
{
	const uint64_t piece = 8ull << 20;
	while (len > 0) {
		if (cancel && atomic_load(cancel))
			return -ECANCELED;
		size_t n = len > piece ? piece : len;
		uint64_t t0 = mfs_now_ns();
		ssize_t r = pread(fd, dst, n, (off_t)off);
		SADD(m, source_read_ns, mfs_now_ns() - t0);
		SADD(m, source_read_calls, 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO; /* file shrank */
		SADD(m, bytes_read_source, r);
		dst += r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

static int load_part(mfs_t *m, struct fentry *e)
{
	int rc = 0;
	if (e->my_len > 0) {
		int fd = openat(m->srcfd, e->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
		} else {
			char *dst = m->mode == M_OSR ? e->base + e->my_off : e->base;
			rc = pread_full(m, fd, dst, e->my_len, e->my_off, &e->cancel);
			close(fd);
		}
		if (rc && rc != -ECANCELED)
			fprintf(stderr, "mpifuse: rank %d: reading part [%llu,+%llu) of %s from the source failed: %s\n",
				m->rank, (unsigned long long)e->my_off, (unsigned long long)e->my_len, e->path,
				strerror(-rc));
	}
	if (rc == 0 && m->mode == M_OSR && e->meta) {
		/* Figure 1: meta_buffer = calculate_distribution(size, world_size) */
		uint64_t t0 = mfs_now_ns();
		for (int r = 0; r < m->nranks; r++) {
			uint64_t o, l;
			owner_range(e, r, &o, &l);
			for (uint64_t i = o; i < o + l; i++)
				e->meta[i] = r;
		}
		SADD(m, meta_ns, mfs_now_ns() - t0);
	}
	if (rc == 0 && e->have_win) {
		MLOCK(m);
		MPI_Win_sync(e->win);
		MUNLOCK(m);
	}
	return rc;
}

static void *load_thread(void *arg)
{
	mfs_t *m = arg;
	pthread_mutex_lock(&m->load_mu);
	for (;;) {
		while (!m->lq_head && !m->load_stop)
			pthread_cond_wait(&m->load_cv, &m->load_mu);
		if (!m->lq_head && m->load_stop)
			break;
		struct fentry *e = m->lq_head;
		m->lq_head = e->lnext;
		if (!m->lq_head)
			m->lq_tail = NULL;
		pthread_mutex_unlock(&m->load_mu);

		int rc = load_part(m, e);
		int st = rc == 0 ? 1 : 2;
		pthread_mutex_lock(&e->rmu);
		e->loaded = st;
		e->ready[m->rank] = (unsigned char)st;
		e->loading = 0;
		pthread_cond_broadcast(&e->rcv);
		pthread_mutex_unlock(&e->rmu);
		if (rc != -ECANCELED && e->my_len > 0)
			for (int r = 0; r < m->nranks; r++)
				if (r != m->rank)
					send_msg(m, r, MT_READY, e->id, 0, 0, 0, st, NULL);
		pthread_mutex_lock(&m->load_mu);
	}
	pthread_mutex_unlock(&m->load_mu);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* broadcast stream                                                    */
/* ------------------------------------------------------------------ */

/*
 * Two ways to pace the stream (see README, "bcast"):
 *
 *  - streaming (default): blocks are posted in order up to bcast_depth ahead,
 *    regardless of what the local readers ask for;
 *  - on demand (bcast_on_demand=1): this rank posts block b only once a local
 *    reader has asked for a byte in block b-(depth-1) or beyond (depth 1 =
 *    lockstep), so the stream moves at the pace of the slowest reader, as the
 *    paper's Naive design with one MPI_Bcast per read(). The order of the
 *    broadcasts stays fixed and they are still posted by this thread, never
 *    inside read(). A rank that never opened the file, or whose last local
 *    handle was closed, does not gate (it posts freely), so it cannot stall
 *    the others. With bcast_sync=barrier every block is preceded by an
 *    MPI_Ibarrier, which makes "every rank's reader reached block b" explicit
 *    instead of relying on the transport's rendezvous protocol.
 */

/* may this rank start block b now? (e->mu held) */
static int gate_open(mfs_t *m, struct fentry *e, uint64_t b)
{
	if (!m->o.bcast_on_demand || e->released || e->holders <= 0)
		return 1;
	if (e->demand == 0)
		return 0;
	uint64_t maxblk = (e->demand - 1) / m->o.block;
	return b <= maxblk + (uint64_t)(m->o.bcast_depth - 1);
}

static int mpi_test(mfs_t *m, MPI_Request *r)
{
	int flag = 0;
	MLOCK(m);
	MPI_Test(r, &flag, MPI_STATUS_IGNORE);
	MUNLOCK(m);
	return flag;
}

struct stream {
	struct fentry *e;
	mfs_t *m;
	uint64_t B, nb, W;
	int od, sync;
	uint64_t tmo;
	MPI_Request *reqs;
	MPI_Request bar;
	int bar_on;
	uint64_t bar_t0;
	int fd;
	uint64_t b;        /* next block to start */
	uint64_t head;     /* oldest block not yet complete */
	uint64_t progress; /* last post or completion of a broadcast */
	int spins;
};

static int block_root(struct stream *s, uint64_t b)
{
	return s->m->o.bcast_rr ? (int)(b % (uint64_t)s->m->nranks) : 0;
}

/* the root reads block b from the source; everybody posts its MPI_Ibcast.
 * Returns the nanoseconds spent reading the source. */
static uint64_t post_block(struct stream *s)
{
	mfs_t *m = s->m;
	struct fentry *e = s->e;
	uint64_t b = s->b, off = b * s->B, rd = 0;
	uint64_t len = e->size - off < s->B ? e->size - off : s->B;
	int root = block_root(s, b);
	if (root == m->rank) {
		uint64_t t0 = mfs_now_ns();
		if (s->fd < 0) {
			s->fd = openat(m->srcfd, e->path, O_RDONLY | O_CLOEXEC);
			if (s->fd < 0)
				mfs_fatal(m, "bcast root cannot open %s in the source: %s", e->path, strerror(errno));
		}
		int rc = pread_full(m, s->fd, e->bbuf.p + off, len, off, NULL);
		if (rc)
			mfs_fatal(m, "bcast root cannot read block %llu of %s: %s", (unsigned long long)b, e->path,
				  strerror(-rc));
		rd = mfs_now_ns() - t0;
	}
	MLOCK(m);
	MPI_Ibcast(e->bbuf.p + off, (int)len, MPI_BYTE, root, e->bcomm, &s->reqs[b % s->W]);
	MUNLOCK(m);
	SADD(m, bcast_calls, 1);
	SADD(m, bcast_bytes, len);
	s->b++;
	return rd;
}

enum { ST_DONE = 0, ST_MPI, ST_SYNC, ST_DEMAND };

/* One step of the stream; says what the time it took was spent on and
 * returns the source-read time (not broadcast time) in *rd. */
static int stream_step(struct stream *s, uint64_t *rd)
{
	mfs_t *m = s->m;
	struct fentry *e = s->e;
	*rd = 0;
	if (s->head >= s->nb)
		return ST_DONE;
	/* 1. start block b: gate (on demand), barrier (lockstep sync), broadcast */
	if (s->b < s->nb && s->b - s->head < s->W) {
		int go = s->bar_on; /* a posted barrier must complete, gate or not */
		if (!go) {
			pthread_mutex_lock(&e->mu);
			go = gate_open(m, e, s->b);
			pthread_mutex_unlock(&e->mu);
		}
		if (go && s->sync) {
			if (!s->bar_on) {
				MLOCK(m);
				MPI_Ibarrier(e->bcomm, &s->bar);
				MUNLOCK(m);
				s->bar_on = 1;
				s->bar_t0 = mfs_now_ns();
				SADD(m, bcast_sync_calls, 1);
			}
			go = mpi_test(m, &s->bar);
			if (go)
				s->bar_on = 0;
			else if (s->head >= s->b)
				goto wait; /* only the barrier is outstanding */
		}
		if (go) {
			*rd = post_block(s);
			s->progress = mfs_now_ns();
			s->spins = 0;
			return s->sync ? ST_SYNC : ST_MPI;
		}
	}
	/* 2. complete the oldest outstanding broadcast */
	if (s->head < s->b) {
		if (mpi_test(m, &s->reqs[s->head % s->W])) {
			s->head++;
			uint64_t av = s->head * s->B;
			pthread_mutex_lock(&e->mu);
			e->avail = av > e->size ? e->size : av;
			pthread_cond_broadcast(&e->cv);
			pthread_mutex_unlock(&e->mu);
			s->progress = mfs_now_ns();
			s->spins = 0;
			return ST_MPI;
		}
	}
wait:
	/* 3. nothing moved */
	if (s->head < s->b || s->bar_on) {
		uint64_t now = mfs_now_ns();
		if (s->bar_on && now - s->bar_t0 > s->tmo)
			mfs_fatal(m, "timeout after %.0f s in the lockstep barrier before block %llu of %s (on-demand "
				  "broadcast: another rank's reader has not asked for this block, or a peer rank is gone)",
				  m->o.timeout, (unsigned long long)s->b, e->path);
		if (s->head < s->b && now - s->progress > s->tmo)
			mfs_fatal(m, "timeout after %.0f s waiting for MPI_Ibcast of block %llu of %s (root rank %d)%s",
				  m->o.timeout, (unsigned long long)s->head, e->path, block_root(s, s->head),
				  s->od ? " (on-demand broadcast: a peer rank's reader has not asked for this block, "
					  "or a peer rank is gone)" : "");
		if (++s->spins < 64)
			sched_yield();
		else
			usleep(20);
		return s->bar_on && s->head >= s->b ? ST_SYNC : ST_MPI;
	}
	/* gated: nothing outstanding and no local reader has asked for block b
	 * yet. No abort here: a reader may legitimately keep the file open
	 * without reading; a peer rank that waits for this one times out in its
	 * own broadcast or barrier wait (loudly). Closing the last local handle,
	 * a new request or the coordinator freeing the file opens the gate. */
	pthread_mutex_lock(&e->mu);
	while (!gate_open(m, e, s->b))
		cv_wait(&e->dcv, &e->mu, 0.5);
	pthread_mutex_unlock(&e->mu);
	s->progress = mfs_now_ns();
	return ST_DEMAND;
}

static void *stream_thread(void *arg)
{
	struct fentry *e = arg;
	mfs_t *m = e->m;
	struct stream s;
	memset(&s, 0, sizeof(s));
	s.e = e;
	s.m = m;
	s.B = m->o.block;
	s.nb = (e->size + s.B - 1) / s.B;
	s.W = (uint64_t)m->o.bcast_depth;
	s.od = m->o.bcast_on_demand;
	s.sync = s.od && m->o.bcast_sync > 0;
	s.tmo = (uint64_t)(m->o.timeout * 1e9);
	s.reqs = calloc(s.W, sizeof(MPI_Request));
	if (!s.reqs)
		mfs_fatal(m, "out of memory");
	s.bar = MPI_REQUEST_NULL;
	s.fd = -1;
	s.progress = mfs_now_ns();
	for (;;) {
		uint64_t t0 = mfs_now_ns(), rd = 0;
		int st = stream_step(&s, &rd);
		if (st == ST_DONE)
			break;
		uint64_t dt = mfs_now_ns() - t0;
		dt = dt > rd ? dt - rd : 0;
		if (st == ST_DEMAND) {
			SADD(m, bcast_demand_wait_ns, dt);
		} else {
			SADD(m, bcast_ns, dt);
			if (st == ST_SYNC)
				SADD(m, bcast_sync_ns, dt);
		}
	}
	if (s.fd >= 0)
		close(s.fd);
	free(s.reqs);
	MLOCK(m);
	MPI_Comm_free(&e->bcomm);
	MUNLOCK(m);
	pthread_mutex_lock(&e->mu);
	e->avail = e->size;
	e->stream_done = 1;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	vlog(m, "stream of %s (id %llu) done", e->path, (unsigned long long)e->id);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* create / free (executed by the MPI thread in coordinator order)     */
/* ------------------------------------------------------------------ */

static void make_window(mfs_t *m, struct fentry *e, uint64_t len)
{
	int wd = wd_begin(m, "window creation for %s (id %llu)", e->path, (unsigned long long)e->id);
	MPI_Info info;
	MLOCK(m);
	MPI_Info_create(&info);
	MPI_Info_set(info, "accumulate_ordering", "none");
	if (m->o.mem_cap && len > m->o.mem_cap) {
		int rc = mbuf_alloc(m, &e->wbuf, len);
		if (rc)
			mfs_fatal(m, "cannot allocate a file backed window of %llu bytes in %s: %s",
				  (unsigned long long)len, m->o.spool, strerror(-rc));
		e->base = e->wbuf.p;
		MPI_Win_create(e->base, (MPI_Aint)len, 1, info, m->coll, &e->win);
	} else {
		MPI_Win_allocate((MPI_Aint)len, 1, info, m->coll, &e->base, &e->win);
	}
	MPI_Info_free(&info);
	MPI_Win_set_errhandler(e->win, MPI_ERRORS_ARE_FATAL);
	MPI_Win_lock_all(MPI_MODE_NOCHECK, e->win);
	MUNLOCK(m);
	wd_end(m, wd);
	e->have_win = 1;
}

static void do_create(mfs_t *m, uint64_t id, const char *path, uint64_t size, int64_t mtime)
{
	struct fentry *e = calloc(1, sizeof(*e));
	if (!e)
		mfs_fatal(m, "out of memory");
	e->m = m;
	e->id = id;
	e->path = strdup(path);
	e->size = size;
	e->mtime_ns = mtime;
	e->part = part_size(m, size);
	owner_range(e, m->rank, &e->my_off, &e->my_len);
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_mutex_init(&e->rmu, NULL);
	pthread_cond_init(&e->rcv, NULL);
	pthread_cond_init(&e->dcv, NULL);
	vlog(m, "create id %llu %s size %llu", (unsigned long long)id, path, (unsigned long long)size);

	if (m->mode == M_OSR || m->mode == M_REFINED) {
		e->ready = calloc((size_t)m->nranks, 1);
		if (m->mode == M_OSR) {
			/* Figure 1: file_buffer = MPI_Win_allocate(file size),
			 * meta_buffer = int[file size] */
			make_window(m, e, size);
			if (m->o.meta_buffer) { /* not with meta_buffer=off (Figure 5) */
				int rc = mbuf_alloc(m, &e->metabuf, size * sizeof(int));
				if (rc)
					mfs_fatal(m, "cannot allocate the %llu byte metadata buffer of %s: %s",
						  (unsigned long long)(size * sizeof(int)), path, strerror(-rc));
				e->meta = (int *)e->metabuf.p;
			}
		} else {
			make_window(m, e, e->my_len);
			e->chunk = m->o.chunk ? m->o.chunk : e->part;
			if (e->chunk > e->part)
				e->chunk = e->part;
			e->cpp = (e->part + e->chunk - 1) / e->chunk;
			e->nchunks = e->cpp * (uint64_t)m->nranks;
			e->cmap = malloc(e->nchunks * sizeof(int32_t));
			for (uint64_t i = 0; i < e->nchunks; i++)
				e->cmap[i] = -1;
			uint64_t remote = e->nchunks - e->cpp;
			uint64_t ns = m->o.cache ? m->o.cache / e->chunk : remote;
			if (ns < 2)
				ns = 2;
			if (ns > remote)
				ns = remote;
			if (ns > (1u << 30))
				ns = 1u << 30;
			e->nslots = (int)ns;
			e->slots = calloc(ns ? ns : 1, sizeof(struct cslot));
			for (uint64_t i = 0; i < ns; i++)
				e->slots[i].g = -1;
		}
		e->loading = 1;
		tab_insert(m, e);
		pthread_mutex_lock(&m->load_mu);
		e->lnext = NULL;
		if (m->lq_tail)
			m->lq_tail->lnext = e;
		else
			m->lq_head = e;
		m->lq_tail = e;
		pthread_cond_signal(&m->load_cv);
		pthread_mutex_unlock(&m->load_mu);
	} else if (m->mode == M_BCAST) {
		int rc = mbuf_alloc(m, &e->bbuf, size);
		if (rc)
			mfs_fatal(m, "cannot allocate the %llu byte broadcast buffer of %s: %s",
				  (unsigned long long)size, path, strerror(-rc));
		int wd = wd_begin(m, "MPI_Comm_dup for the broadcast of %s", path);
		MLOCK(m);
		MPI_Comm_dup(m->coll, &e->bcomm);
		MPI_Comm_set_errhandler(e->bcomm, MPI_ERRORS_ARE_FATAL);
		MUNLOCK(m);
		wd_end(m, wd);
		/* opens of this file in flight on this rank hold it from the start,
		 * so that an on-demand stream never begins ungated (acquire() knows
		 * by held_id that its open was counted here) */
		pthread_mutex_lock(&m->pend_mu);
		for (struct pend *p = m->pends; p; p = p->next) {
			/* by path: the key is the coordinator's, not this rank's own stat */
			if (!p->done && !p->held_id && p->path && !strcmp(p->path, path)) {
				p->held_id = id;
				e->holders++;
			}
		}
		pthread_mutex_unlock(&m->pend_mu);
		tab_insert(m, e);
		if (spawn(&e->stream, stream_thread, e) != 0)
			mfs_fatal(m, "cannot create a stream thread");
		e->stream_started = 1;
	}
	SADD(m, files_created, 1);
}

static void entry_release_memory(mfs_t *m, struct fentry *e)
{
	if (e->have_win) {
		int wd = wd_begin(m, "MPI_Win_free for %s (id %llu)", e->path, (unsigned long long)e->id);
		MLOCK(m);
		MPI_Win_unlock_all(e->win);
		MPI_Win_free(&e->win);
		MUNLOCK(m);
		wd_end(m, wd);
		e->have_win = 0;
	}
	mbuf_free(&e->wbuf);
	mbuf_free(&e->metabuf);
	mbuf_free(&e->bbuf);
	if (e->slots) {
		for (int i = 0; i < e->nslots; i++)
			free(e->slots[i].p);
		free(e->slots);
	}
	free(e->cmap);
	free(e->ready);
	free(e->path);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->rmu);
	pthread_cond_destroy(&e->rcv);
	pthread_cond_destroy(&e->dcv);
	free(e);
	SADD(m, files_freed, 1);
}

static void do_free(mfs_t *m, uint64_t id)
{
	struct fentry *e = tab_find(m, id);
	if (!e)
		return;
	vlog(m, "free id %llu %s (%p, live %d)", (unsigned long long)id, e->path, (void *)e, atomic_load(&m->live));
	tab_remove(m, e);
	if (e->local_opens)
		fprintf(stderr, "mpifuse: rank %d: warning: freeing %s with %d local opens\n", m->rank, e->path,
			e->local_opens);
	if (m->mode == M_BCAST) {
		/* nobody holds it any more (on demand: stop gating, run to the end) */
		pthread_mutex_lock(&e->mu);
		e->released = 1;
		pthread_cond_broadcast(&e->dcv);
		int done = e->stream_done;
		pthread_mutex_unlock(&e->mu);
		if (!done) { /* the stream must run to its end on every rank */
			e->next = m->zombies;
			m->zombies = e;
			return;
		}
		pthread_join(e->stream, NULL);
		entry_release_memory(m, e);
		return;
	}
	/* osr modes: stop the loader before the collective MPI_Win_free */
	atomic_store(&e->cancel, 1);
	pthread_mutex_lock(&e->rmu);
	uint64_t t0 = mfs_now_ns();
	while (e->loading) {
		cv_wait(&e->rcv, &e->rmu, 1.0);
		if ((double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout waiting for the loader of %s to stop", e->path);
	}
	pthread_mutex_unlock(&e->rmu);
	entry_release_memory(m, e);
}

static void reap_zombies(mfs_t *m, int wait)
{
	struct fentry **pp = &m->zombies;
	while (*pp) {
		struct fentry *e = *pp;
		pthread_mutex_lock(&e->mu);
		uint64_t t0 = mfs_now_ns();
		while (wait && !e->stream_done) {
			cv_wait(&e->cv, &e->mu, 1.0);
			if ((double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout * 4)
				mfs_fatal(m, "timeout waiting for the broadcast of %s to finish", e->path);
		}
		int done = e->stream_done;
		pthread_mutex_unlock(&e->mu);
		if (done) {
			*pp = e->next;
			pthread_join(e->stream, NULL);
			entry_release_memory(m, e);
		} else {
			pp = &e->next;
		}
	}
}

/* ------------------------------------------------------------------ */
/* coordinator (rank 0 of the file system communicator)                */
/* ------------------------------------------------------------------ */

static void complete_pend(mfs_t *m, uint64_t req, uint64_t id, int status)
{
	pthread_mutex_lock(&m->pend_mu);
	for (struct pend *p = m->pends; p; p = p->next) {
		if (p->req == req) {
			p->id = id;
			p->status = status;
			p->done = 1;
		}
	}
	pthread_cond_broadcast(&m->pend_cv);
	pthread_mutex_unlock(&m->pend_mu);
}

static void coord_free(mfs_t *m, struct centry *c)
{
	for (struct centry **pp = &m->centries; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	for (int r = 1; r < m->nranks; r++)
		send_msg(m, r, MT_FREE, c->id, 0, 0, 0, 0, NULL);
	flush_outbox(m);
	do_free(m, c->id);
	free(c->path);
	free(c);
}

/* The key of a distributed file is path + size + mtime as the coordinator
 * sees them: every rank's open of the same path joins the same copy, even
 * where ranks' own fstat disagree (attribute caches of a network file system,
 * clocks). The opener's own size/mtime are used only if the coordinator cannot
 * stat the file. A file changed on the source gets a new copy. */
static void coord_key(mfs_t *m, const struct msg_hdr *h, const char *path, uint64_t *size, int64_t *mtime)
{
	struct stat st;
	*size = h->size;
	*mtime = h->mtime_ns;
	if (fstatat(m->srcfd, path, &st, 0) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		*size = (uint64_t)st.st_size;
		*mtime = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	}
}

static void coord_acquire(mfs_t *m, struct msg_hdr *h, const char *path)
{
	uint64_t size;
	int64_t mtime;
	coord_key(m, h, path, &size, &mtime);
	struct centry *c = m->centries;
	while (c && !(c->size == size && c->mtime_ns == mtime && !strcmp(c->path, path)))
		c = c->next;
	if (!c) {
		c = calloc(1, sizeof(*c));
		c->id = ++m->next_id;
		c->path = strdup(path);
		c->size = size;
		c->mtime_ns = mtime;
		c->next = m->centries;
		m->centries = c;
		for (int r = 1; r < m->nranks; r++)
			send_msg(m, r, MT_CREATE, c->id, 0, c->size, c->mtime_ns, 0, path);
		flush_outbox(m);
		do_create(m, c->id, path, c->size, c->mtime_ns);
	}
	c->refs++;
	vlog(m, "coordinator: rank %d acquires %s (id %llu, refs %ld)", h->src, path, (unsigned long long)c->id,
	     c->refs);
	if (h->src == m->rank)
		complete_pend(m, h->req, c->id, 0);
	else
		send_msg(m, h->src, MT_ACQ_REPLY, c->id, h->req, 0, 0, 0, NULL);
}

static void coord_release(mfs_t *m, uint64_t id)
{
	for (struct centry *c = m->centries; c; c = c->next) {
		if (c->id == id) {
			vlog(m, "coordinator: release of id %llu (refs %ld)", (unsigned long long)id, c->refs - 1);
			if (--c->refs == 0)
				c->idle_since = mfs_now_ns();
			if (c->refs < 0)
				c->refs = 0;
			return;
		}
	}
}

static void coord_housekeeping(mfs_t *m)
{
	uint64_t now = mfs_now_ns();
	uint64_t idle_bytes = 0;
	struct centry *c = m->centries, *next;
	for (; c; c = next) {
		next = c->next;
		if (c->refs > 0)
			continue;
		if ((double)(now - c->idle_since) / 1e9 >= m->o.linger)
			coord_free(m, c);
		else
			idle_bytes += c->size;
	}
	while (idle_bytes > m->o.idle_cache) {
		struct centry *old = NULL;
		for (c = m->centries; c; c = c->next)
			if (c->refs == 0 && (!old || c->idle_since < old->idle_since))
				old = c;
		if (!old)
			break;
		idle_bytes -= old->size;
		coord_free(m, old);
	}
}

/* ------------------------------------------------------------------ */
/* MPI thread                                                          */
/* ------------------------------------------------------------------ */

static void handle_msg(mfs_t *m, struct msg_hdr *h, const char *path)
{
	switch (h->type) {
	case MT_ACQ:
		coord_acquire(m, h, path);
		break;
	case MT_ACQ_REPLY:
		complete_pend(m, h->req, h->id, h->status);
		break;
	case MT_CREATE:
		do_create(m, h->id, path, h->size, h->mtime_ns);
		break;
	case MT_READY: {
		struct fentry *e = tab_find(m, h->id);
		if (e && e->ready && h->src >= 0 && h->src < m->nranks) {
			pthread_mutex_lock(&e->rmu);
			e->ready[h->src] = (unsigned char)h->status;
			pthread_cond_broadcast(&e->rcv);
			pthread_mutex_unlock(&e->rmu);
		}
		break;
	}
	case MT_REL:
		coord_release(m, h->id);
		break;
	case MT_FREE:
		do_free(m, h->id);
		break;
	case MT_STOP_READY:
		if (++m->stop_ready == m->nranks) {
			for (int r = 1; r < m->nranks; r++)
				send_msg(m, r, MT_FINAL, 0, 0, 0, 0, 0, NULL);
			flush_outbox(m);
			atomic_store(&m->final_done, 1);
		}
		break;
	case MT_FINAL:
		atomic_store(&m->final_done, 1);
		break;
	case MT_SHUTDOWN:
		atomic_store(&m->should_stop, 1);
		break;
	default:
		fprintf(stderr, "mpifuse: rank %d: unknown message type %d from %d\n", m->rank, h->type, h->src);
	}
}

static int poll_one(mfs_t *m, char *rbuf)
{
	int flag = 0, count = 0;
	MPI_Status st;
	MLOCK(m);
	MPI_Iprobe(MPI_ANY_SOURCE, TAG_CTRL, m->ctrl, &flag, &st);
	if (flag) {
		MPI_Get_count(&st, MPI_BYTE, &count);
		if (count > MAX_MSG)
			mfs_fatal(m, "control message too large (%d)", count);
		MPI_Recv(rbuf, count, MPI_BYTE, st.MPI_SOURCE, TAG_CTRL, m->ctrl, MPI_STATUS_IGNORE);
	}
	MUNLOCK(m);
	if (!flag)
		return 0;
	struct msg_hdr *h = (struct msg_hdr *)rbuf;
	const char *path = h->pathlen > 0 ? rbuf + sizeof(*h) : "";
	if (h->pathlen > 0)
		rbuf[count - 1] = 0;
	m->last_msg_ns = mfs_now_ns();
	handle_msg(m, h, path);
	return 1;
}

static void teardown(mfs_t *m)
{
	/* Every rank processed the same CREATE/FREE sequence before FINAL, so
	 * the remaining entries (and their order) are the same everywhere. */
	for (;;) {
		pthread_mutex_lock(&m->tab_mu);
		struct fentry *e = m->entries;
		uint64_t id = e ? e->id : 0;
		pthread_mutex_unlock(&m->tab_mu);
		if (!e)
			break;
		do_free(m, id);
	}
	reap_zombies(m, 1);
	while (m->centries) {
		struct centry *c = m->centries;
		m->centries = c->next;
		free(c->path);
		free(c);
	}
}

static void *mpi_thread(void *arg)
{
	mfs_t *m = arg;
	char *rbuf = malloc(MAX_MSG);
	while (!atomic_load(&m->final_done)) {
		int did = flush_outbox(m);
		while (poll_one(m, rbuf))
			did = 1;
		if (m->rank == 0 && !atomic_load(&m->final_done))
			coord_housekeeping(m);
		if (m->zombies)
			reap_zombies(m, 0);
		if (atomic_load(&m->stopping) && !atomic_load(&m->final_done) &&
		    (double)(mfs_now_ns() - m->stopping_since) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout after %.0f s waiting for all ranks to stop%s", m->o.timeout,
				  m->rank == 0 ? "" : " (no FINAL from rank 0)");
		if (!did) {
			/* Fast polling (passive-target progress for remote MPI_Get over
			 * TCP) while windows exist or messages flow; slow otherwise. A
			 * message queued locally wakes this thread at once. */
			unsigned us = m->o.idle_poll_us;
			if (m->nranks > 1 && (atomic_load(&m->live) > 0 || atomic_load(&m->stopping) ||
					      mfs_now_ns() - m->last_msg_ns < 200000000ull))
				us = m->o.poll_us;
			pthread_mutex_lock(&m->out_mu);
			if (!m->out_head && !m->sending)
				cv_wait(&m->out_cv, &m->out_mu, us / 1e6);
			pthread_mutex_unlock(&m->out_mu);
			if (m->sending)
				usleep(m->o.poll_us);
		}
	}
	teardown(m);
	/* send what is left (READY of cancelled loads etc.), then quiesce */
	uint64_t t0 = mfs_now_ns();
	while (flush_outbox(m) || m->sending) {
		while (poll_one(m, rbuf))
			;
		if ((double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout flushing control messages at shutdown");
		usleep(m->o.poll_us);
	}
	MPI_Request br;
	MLOCK(m);
	MPI_Ibarrier(m->ctrl, &br);
	MUNLOCK(m);
	for (;;) {
		int flag = 0;
		MLOCK(m);
		MPI_Test(&br, &flag, MPI_STATUS_IGNORE);
		MUNLOCK(m);
		if (flag)
			break;
		while (poll_one(m, rbuf)) /* late READY messages: ignored */
			;
		if ((double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout in the final barrier of the file system");
		usleep(m->o.poll_us);
	}
	free(rbuf);
	return NULL;
}

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
};

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

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	mfs_t *m = ctx_mfs();
	conn->max_read = (unsigned)m->o.max_read;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (m->mode == M_PASS && m->o.splice) {
		if (conn->capable & FUSE_CAP_SPLICE_WRITE)
			conn->want |= FUSE_CAP_SPLICE_WRITE;
		if (conn->capable & FUSE_CAP_SPLICE_MOVE)
			conn->want |= FUSE_CAP_SPLICE_MOVE;
	}
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

static int acquire(mfs_t *m, const char *path, struct stat *st, struct fentry **out)
{
	struct pend p;
	memset(&p, 0, sizeof(p));
	p.req = atomic_fetch_add(&m->next_req, 1) + 1;
	int64_t mt = (int64_t)st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec;
	/* test hook: a rank-dependent skew of this rank's own mtime, as ranks whose
	 * network-file-system clients see different mtimes (tests only) */
	const char *skew = getenv("MPIFUSE_TEST_MTIME_SKEW_NS");
	if (skew && *skew)
		mt += (int64_t)m->rank * strtoll(skew, NULL, 10);
	p.path = path;
	p.size = (uint64_t)st->st_size;
	p.mtime_ns = mt;
	pthread_mutex_lock(&m->pend_mu);
	p.next = m->pends;
	m->pends = &p;
	pthread_mutex_unlock(&m->pend_mu);
	send_msg(m, 0, MT_ACQ, 0, p.req, (uint64_t)st->st_size, mt, 0, path);
	pthread_mutex_lock(&m->pend_mu);
	uint64_t t0 = mfs_now_ns();
	while (!p.done) {
		cv_wait(&m->pend_cv, &m->pend_mu, 0.5);
		if (!p.done && (double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout after %.0f s waiting for the coordinator (rank 0) to answer the open of %s",
				  m->o.timeout, path);
	}
	for (struct pend **pp = &m->pends; *pp; pp = &(*pp)->next)
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	pthread_mutex_unlock(&m->pend_mu);
	if (p.status)
		return p.status;
	struct fentry *e = tab_find(m, p.id);
	if (!e) {
		fprintf(stderr, "mpifuse: rank %d: internal error: entry %llu for %s missing\n", m->rank,
			(unsigned long long)p.id, path);
		send_msg(m, 0, MT_REL, p.id, 0, 0, 0, 0, NULL);
		return -EIO;
	}
	if (m->mode == M_BCAST) {
		/* a hold counted at CREATE (held_id) is this open's; a hold counted
		 * on another entry of the same key belongs to an entry that has been
		 * freed since (released: it no longer gates) */
		pthread_mutex_lock(&e->mu);
		if (p.held_id != e->id)
			e->holders++;
		pthread_cond_broadcast(&e->dcv);
		pthread_mutex_unlock(&e->mu);
		if (p.held_id && p.held_id != e->id) {
			/* counted on an older copy of the same path (the file changed on
			 * the source while this open was in flight): that hold is not ours */
			struct fentry *o = tab_find(m, p.held_id);
			if (o) {
				pthread_mutex_lock(&o->mu);
				if (o->holders > 0)
					o->holders--;
				pthread_cond_broadcast(&o->dcv);
				pthread_mutex_unlock(&o->mu);
			}
		}
	}
	pthread_mutex_lock(&e->rmu);
	e->local_opens++;
	int rc = 0;
	if (m->mode == M_OSR || m->mode == M_REFINED) {
		/* the paper's open returns after this rank's part was read */
		t0 = mfs_now_ns();
		while (e->loaded == 0) {
			cv_wait(&e->rcv, &e->rmu, 0.5);
			if (e->loaded == 0 && (double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
				mfs_fatal(m, "timeout after %.0f s waiting for this rank's part of %s to load",
					  m->o.timeout, path);
		}
		if (e->loaded != 1)
			rc = -EIO;
	}
	if (rc)
		e->local_opens--;
	pthread_mutex_unlock(&e->rmu);
	if (rc) {
		send_msg(m, 0, MT_REL, e->id, 0, 0, 0, 0, NULL);
		return rc;
	}
	*out = e;
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
		return 0;
	}
	SADD(m, open_calls, 1);
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
	if (m->mode == M_PASS || !S_ISREG(h->st.st_mode)) {
		h->kind = H_PASS;
		h->fd = fd;
	} else if (h->st.st_size == 0) {
		h->kind = H_EMPTY;
		close(fd);
	} else {
		close(fd);
		h->kind = H_ENTRY;
		rc = acquire(m, r, &h->st, &h->e);
	}
out:
	if (rc) {
		free(h);
	} else {
		fi->fh = (uint64_t)(uintptr_t)h;
		fi->keep_cache = m->o.keep_cache;
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
	if (h->kind == H_PASS && h->fd >= 0)
		close(h->fd);
	if (h->kind == H_ENTRY) {
		struct fentry *e = h->e;
		uint64_t id = e->id;
		pthread_mutex_lock(&e->rmu);
		e->local_opens--;
		pthread_mutex_unlock(&e->rmu);
		if (m->mode == M_BCAST) { /* the last local handle: stop gating */
			pthread_mutex_lock(&e->mu);
			e->holders--;
			pthread_cond_broadcast(&e->dcv);
			pthread_mutex_unlock(&e->mu);
		}
		send_msg(m, 0, MT_REL, id, 0, 0, 0, 0, NULL);
	}
	free(h->data);
	free(h);
	return 0;
}

static int wait_ready(mfs_t *m, struct fentry *e, int r)
{
	pthread_mutex_lock(&e->rmu);
	int st = e->ready[r];
	if (st == 0) {
		uint64_t t0 = mfs_now_ns();
		while ((st = e->ready[r]) == 0) {
			cv_wait(&e->rcv, &e->rmu, 0.5);
			if (e->ready[r] == 0 && (double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
				mfs_fatal(m, "timeout after %.0f s waiting for rank %d to load its part of %s",
					  m->o.timeout, r, e->path);
		}
		SADD(m, read_wait_ns, mfs_now_ns() - t0);
	}
	pthread_mutex_unlock(&e->rmu);
	return st == 1 ? 0 : -EIO;
}

static void do_get(mfs_t *m, struct fentry *e, char *dst, uint64_t len, int target, uint64_t disp)
{
	while (len > 0) {
		uint64_t n = len > (1ull << 30) ? (1ull << 30) : len;
		int wd = wd_begin(m, "MPI_Get of %llu bytes of %s from rank %d", (unsigned long long)n, e->path,
				  target);
		uint64_t t0 = mfs_now_ns();
		MLOCK(m);
		MPI_Get(dst, (int)n, MPI_BYTE, target, (MPI_Aint)disp, (int)n, MPI_BYTE, e->win);
		MPI_Win_flush(target, e->win);
		MUNLOCK(m);
		SADD(m, get_ns, mfs_now_ns() - t0);
		wd_end(m, wd);
		SADD(m, get_calls, 1);
		SADD(m, get_bytes, n);
		dst += n;
		disp += n;
		len -= n;
	}
}

/* The paper's Figure 5 variant: OSR without the metadata buffer. The owner
 * of each byte is inferred from the split made at open ("the same algorithm
 * to split the file and populate the metadata buffer"); with no buffer there
 * is no record of what was fetched, so every read fetches its remote bytes
 * again. Everything else is osr_read's: the same full-size window, the same
 * MPI_Get per owner run into it at the same offset, the same per-file mutex. */
static int osr_read_nometa(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off)
{
	const int me = m->rank;
	uint64_t end = off + size;
	pthread_mutex_lock(&e->mu);
	uint64_t i = off;
	while (i < end) {
		int r = (int)(i / e->part);
		uint64_t j = (uint64_t)(r + 1) * e->part;
		if (j > end)
			j = end;
		if (r != me) {
			if (wait_ready(m, e, r)) {
				pthread_mutex_unlock(&e->mu);
				return -EIO;
			}
			do_get(m, e, e->base + i, j - i, r, i);
		}
		i = j;
	}
	memcpy(buf, e->base + off, size);
	pthread_mutex_unlock(&e->mu);
	return (int)size;
}

/* The paper's read (Figure 2), including the per-byte metadata buffer. */
static int osr_read(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off)
{
	const int me = m->rank;
	int *meta = e->meta;
	uint64_t end = off + size;
	if (!meta)
		return osr_read_nometa(m, e, buf, size, off);
	pthread_mutex_lock(&e->mu);
	uint64_t tm = mfs_now_ns(), meta_ns = 0;
	int local = 1; /* in_buffer(offset, size) */
	for (uint64_t i = off; i < end; i++)
		if (meta[i] != me) {
			local = 0;
			break;
		}
	meta_ns += mfs_now_ns() - tm;
	if (!local) {
		uint64_t i = off;
		while (i < end) {
			/* get_targets / calculate_target_range over the meta buffer */
			tm = mfs_now_ns();
			int r = meta[i];
			uint64_t j = i + 1;
			while (j < end && meta[j] == r)
				j++;
			meta_ns += mfs_now_ns() - tm;
			if (r != me) {
				if (wait_ready(m, e, r)) {
					pthread_mutex_unlock(&e->mu);
					return -EIO;
				}
				/* data = MPI_Get(t_offset, t_size, target); file_buffer[..] = data */
				do_get(m, e, e->base + i, j - i, r, i);
			}
			i = j;
		}
		tm = mfs_now_ns();
		for (uint64_t k = off; k < end; k++) /* meta_buffer[offset:offset+size] = my_rank */
			meta[k] = me;
		meta_ns += mfs_now_ns() - tm;
	}
	memcpy(buf, e->base + off, size);
	pthread_mutex_unlock(&e->mu);
	SADD(m, meta_ns, meta_ns);
	return (int)size;
}

/* osr-refined: location computed from the split, chunks cached locally */
static struct cslot *chunk_pin(mfs_t *m, struct fentry *e, int owner, uint64_t j, uint64_t cstart, uint64_t clen,
			       uint64_t owner_off)
{
	uint64_t g = (uint64_t)owner * e->cpp + j;
	pthread_mutex_lock(&e->mu);
	uint64_t t0 = mfs_now_ns();
	for (;;) {
		int s = e->cmap[g];
		if (s >= 0) {
			struct cslot *sl = &e->slots[s];
			if (sl->state == 2) {
				sl->pins++;
				sl->lru = ++e->lru_clock;
				pthread_mutex_unlock(&e->mu);
				SADD(m, cache_hits, 1);
				return sl;
			}
		} else {
			/* pick an empty slot, else the least recently used unpinned one */
			struct cslot *v = NULL;
			for (int i = 0; i < e->nslots; i++) {
				struct cslot *c = &e->slots[i];
				if (c->state == 0) {
					v = c;
					break;
				}
				if (c->state == 2 && c->pins == 0 && (!v || c->lru < v->lru))
					v = c;
			}
			if (v) {
				if (v->state == 2) {
					e->cmap[v->g] = -1;
					SADD(m, cache_evictions, 1);
				}
				v->g = (int64_t)g;
				v->state = 1;
				v->pins = 1;
				e->cmap[g] = (int32_t)(v - e->slots);
				if (!v->p)
					v->p = malloc(e->chunk);
				pthread_mutex_unlock(&e->mu);
				int rc = v->p ? wait_ready(m, e, owner) : -ENOMEM;
				if (rc == 0)
					do_get(m, e, v->p, clen, owner, cstart - owner_off);
				pthread_mutex_lock(&e->mu);
				if (rc) {
					v->state = 0;
					v->pins = 0;
					v->g = -1;
					e->cmap[g] = -1;
					pthread_cond_broadcast(&e->cv);
					pthread_mutex_unlock(&e->mu);
					return NULL;
				}
				v->state = 2;
				v->lru = ++e->lru_clock;
				pthread_cond_broadcast(&e->cv);
				pthread_mutex_unlock(&e->mu);
				SADD(m, cache_misses, 1);
				return v;
			}
		}
		/* being fetched by another thread, or every slot pinned */
		cv_wait(&e->cv, &e->mu, 0.5);
		if ((double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout after %.0f s waiting for chunk %llu of %s", m->o.timeout,
				  (unsigned long long)g, e->path);
	}
}

static void chunk_unpin(struct fentry *e, struct cslot *s)
{
	pthread_mutex_lock(&e->mu);
	s->pins--;
	if (s->pins == 0)
		pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static int refined_read(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off)
{
	uint64_t pos = off, end = off + size;
	while (pos < end) {
		int owner = (int)(pos / e->part);
		uint64_t ooff, olen;
		owner_range(e, owner, &ooff, &olen);
		uint64_t oend = ooff + olen;
		if (owner == m->rank) {
			uint64_t n = (end < oend ? end : oend) - pos;
			memcpy(buf + (pos - off), e->base + (pos - ooff), n);
			pos += n;
			continue;
		}
		uint64_t j = (pos - ooff) / e->chunk;
		uint64_t cstart = ooff + j * e->chunk;
		uint64_t cend = cstart + e->chunk < oend ? cstart + e->chunk : oend;
		struct cslot *s = chunk_pin(m, e, owner, j, cstart, cend - cstart, ooff);
		if (!s)
			return -EIO;
		uint64_t n = (end < cend ? end : cend) - pos;
		memcpy(buf + (pos - off), s->p + (pos - cstart), n);
		chunk_unpin(e, s);
		pos += n;
	}
	return (int)size;
}

static int bcast_read(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off)
{
	uint64_t need = off + size;
	pthread_mutex_lock(&e->mu);
	if (need > e->demand) { /* on demand: this request lets the stream move on */
		SADD(m, bcast_demand_bytes, need - e->demand);
		e->demand = need;
		if (m->o.bcast_on_demand)
			pthread_cond_broadcast(&e->dcv);
	}
	if (e->avail < need) {
		uint64_t t0 = mfs_now_ns(), tp = t0, last = e->avail;
		while (e->avail < need) {
			cv_wait(&e->cv, &e->mu, 0.5);
			uint64_t now = mfs_now_ns();
			if (e->avail != last) {
				last = e->avail;
				tp = now;
			} else if ((double)(now - tp) / 1e9 > m->o.timeout) {
				mfs_fatal(m, "timeout after %.0f s without progress waiting for bytes [%llu,%llu) of %s "
					  "to arrive by broadcast (have %llu)%s",
					  m->o.timeout, (unsigned long long)off, (unsigned long long)need, e->path,
					  (unsigned long long)e->avail,
					  m->o.bcast_on_demand ? " (on-demand broadcast: every rank that holds the file "
								 "open must ask for these bytes too)" : "");
			}
		}
		SADD(m, read_wait_ns, mfs_now_ns() - t0);
	}
	pthread_mutex_unlock(&e->mu);
	memcpy(buf, e->bbuf.p + off, size);
	return (int)size;
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
		rc = (int)pread(h->fd, buf, size, off);
		if (rc < 0)
			rc = -errno;
		else
			SADD(m, bytes_read_source, rc);
		SADD(m, source_read_ns, mfs_now_ns() - t0);
		SADD(m, source_read_calls, 1);
	} else if (h->kind == H_ENTRY) {
		struct fentry *e = h->e;
		uint64_t o = (uint64_t)off;
		if (o >= e->size) {
			rc = 0;
		} else {
			if (size > e->size - o)
				size = (size_t)(e->size - o);
			if (m->mode == M_OSR)
				rc = osr_read(m, e, buf, size, o);
			else if (m->mode == M_REFINED)
				rc = refined_read(m, e, buf, size, o);
			else
				rc = bcast_read(m, e, buf, size, o);
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
	if (h->kind != H_PASS) { /* the stats files */
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
	uint64_t t0 = mfs_now_ns();
	struct fuse_bufvec *bv = malloc(sizeof(*bv));
	if (!bv)
		return -ENOMEM;
	*bv = FUSE_BUFVEC_INIT(size);
	bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv->buf[0].fd = h->fd;
	bv->buf[0].pos = off;
	*bufp = bv;
	uint64_t n = 0;
	if (off < h->st.st_size)
		n = (uint64_t)(h->st.st_size - off) < size ? (uint64_t)(h->st.st_size - off) : size;
	SADD(m, bytes_read_source, n);
	SADD(m, source_read_calls, 1);
	SADD(m, read_ns, mfs_now_ns() - t0);
	SADD(m, read_calls, 1);
	SADD(m, read_bytes, n);
	return 0;
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
	if (m->mode == M_PASS && m->o.splice)
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
	vlog(m, "FUSE loop ended (%d)", rc);
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
		vlog(m, "cannot set %s: %s", p, strerror(errno));
		return;
	}
	fprintf(f, "%ld\n", kb);
	if (fclose(f) != 0)
		vlog(m, "cannot set %s: %s", p, strerror(errno));
}

static int stop_fuse(mfs_t *m)
{
	if (!m->fuse)
		return 0;
	fuse_exit(m->fuse);
	if (m->mounted) {
		fuse_unmount(m->fuse);
		m->mounted = 0;
	}
	if (m->fuse_started) {
		struct timespec ts;
		abstime_in(&ts, m->o.timeout);
		int rc = pthread_timedjoin_np(m->fuse_thr, NULL, &ts);
		if (rc == ETIMEDOUT)
			mfs_fatal(m, "the FUSE loop of %s did not end within %.0f s after unmount "
				  "(a process still uses the mount?)",
				  m->mountpoint, m->o.timeout);
		m->fuse_started = 0;
	}
	fuse_destroy(m->fuse);
	m->fuse = NULL;
	return 0;
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
		abstime_in(&ts, m->o.timeout * 3 + 10);
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
	pthread_mutex_init(&m->load_mu, NULL);
	pthread_cond_init(&m->load_cv, NULL);
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
	if (!mode || mfs_parse_mode(mode, &m->mode)) {
		snprintf(err, sizeof(err), "unknown mode '%s' (osr, osr-refined, bcast, passthrough)", mode ? mode : "");
		rc = -EINVAL;
	} else if (mfs_parse_opts(&m->o, options, err, sizeof(err))) {
		rc = -EINVAL;
	} else if (m->mode != M_OSR && !m->o.meta_buffer) {
		snprintf(err, sizeof(err), "meta_buffer=off is an osr option (mode %s has no metadata buffer)", mode);
		rc = -EINVAL;
	} else if (m->mode == M_BCAST && m->o.bcast_sync > 0 && !m->o.bcast_on_demand) {
		snprintf(err, sizeof(err), "bcast_sync=barrier needs bcast_on_demand=1");
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

	if (spawn(&m->wd_thr, wd_thread, m) == 0)
		m->wd_started = 1;
	if (spawn(&m->load_thr, load_thread, m) == 0)
		m->load_started = 1;
	if (spawn(&m->mpi_thr, mpi_thread, m) == 0)
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
		if (spawn(&m->fuse_thr, fuse_thread, m) != 0)
			mfs_fatal(m, "cannot create the FUSE thread");
		m->fuse_started = 1;
		set_readahead(m);
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
			send_msg(m, r, MT_SHUTDOWN, 0, 0, 0, 0, 0, NULL);
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
	send_msg(m, 0, MT_STOP_READY, 0, 0, 0, 0, 0, NULL);
	shutdown_threads(m);
	pthread_mutex_lock(&g_hmu);
	g_handles[h] = NULL;
	pthread_mutex_unlock(&g_hmu);
	destroy(m);
	return 0;
}
