/*
 * mpifuse protocol layer: what every mode shares.
 *
 *   - failure handling, protocol log, watchdog, thread and buffer helpers;
 *   - control messages (an outbox the MPI thread posts with MPI_Isend);
 *   - the local file table with reference-counted entries (the table, every
 *     open handle, a lookup in progress and a backend thread each hold one;
 *     the memory goes with the last reference, the collective part of a
 *     backend is torn down by the MPI thread in the coordinator's order);
 *   - the coordinator (rank 0): one id per path+size+mtime, reference
 *     counts over all ranks, linger / idle cache, CREATE/FREE in one order;
 *   - the MPI thread: polls the control communicator (also the
 *     passive-target progress thread of the osr windows), executes every
 *     CREATE/FREE in the order announced, sends queued messages;
 *   - open/release of a distributed file (acquire from the coordinator).
 *
 * What a mode does with a file (windows, loader, chunk cache, broadcast
 * stream) is its backend's (be_*.c behind struct mfs_backend, window.c).
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define TAG_CTRL 4711
#define MAX_MSG (PATH_MAX + 256)
#define HOT_NS 500000000ull /* fast polling after a peer announced reads */

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

void mfs_fatal(mfs_t *m, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void mfs_fatal(mfs_t *m, const char *fmt, ...)
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

void mfs_vlog(mfs_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mfs_vlog(mfs_t *m, const char *fmt, ...)
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
int mfs_wd_begin(mfs_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mfs_wd_begin(mfs_t *m, const char *fmt, ...)
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

void mfs_wd_end(mfs_t *m, int i)
{
	if (i >= 0)
		atomic_store(&m->wd[i].used, 0);
}

void *mfs_wd_thread(void *arg)
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
int mfs_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
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

void mfs_abstime_in(struct timespec *ts, double sec)
{
	clock_gettime(CLOCK_REALTIME, ts);
	uint64_t ns = (uint64_t)ts->tv_nsec + (uint64_t)(sec * 1e9);
	ts->tv_sec += (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* wait on cv; returns 0, or ETIMEDOUT after `sec` */
int mfs_cv_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double sec)
{
	struct timespec ts;
	mfs_abstime_in(&ts, sec);
	return pthread_cond_timedwait(cv, mu, &ts);
}

/* ------------------------------------------------------------------ */
/* buffers                                                             */
/* ------------------------------------------------------------------ */

static int mbuf_alloc(mfs_t *m, struct mbuf *b, size_t len, int with_fd)
{
	memset(b, 0, sizeof(*b));
	b->fd = -1;
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
		if (p == MAP_FAILED || !with_fd)
			close(fd);
		if (p == MAP_FAILED)
			return -e;
		b->p = p;
		b->kind = 2;
		b->fd = with_fd ? fd : -1;
		return 0;
	}
	if (with_fd) { /* memory with a file descriptor (for splice) */
		int fd = memfd_create("mpifuse-buffer", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)len) != 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
		if (p == MAP_FAILED) {
			int e = errno;
			close(fd);
			return -e;
		}
		b->p = p;
		b->kind = 3;
		b->fd = fd;
		return 0;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	b->p = p;
	b->kind = 1;
	return 0;
}

int mfs_mbuf_alloc(mfs_t *m, struct mbuf *b, size_t len)
{
	return mbuf_alloc(m, b, len, 0);
}

/* the same, and keep a file descriptor of the memory (b->fd) */
int mfs_mbuf_alloc_fd(mfs_t *m, struct mbuf *b, size_t len)
{
	return mbuf_alloc(m, b, len, 1);
}

void mfs_mbuf_free(struct mbuf *b)
{
	if (b->p && b->len)
		munmap(b->p, b->len);
	if (b->fd >= 0 && b->kind)
		close(b->fd);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------ */
/* messages                                                            */
/* ------------------------------------------------------------------ */

void mfs_send_msg(mfs_t *m, int dest, int type, uint64_t id, uint64_t req, uint64_t size,
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

/* with a reference (mfs_entry_put), or NULL */
struct fentry *mfs_tab_get(mfs_t *m, uint64_t id)
{
	pthread_mutex_lock(&m->tab_mu);
	struct fentry *e = m->entries;
	while (e && e->id != id)
		e = e->next;
	if (e)
		atomic_fetch_add(&e->refs, 1);
	pthread_mutex_unlock(&m->tab_mu);
	return e;
}

void mfs_entry_get(struct fentry *e)
{
	atomic_fetch_add(&e->refs, 1);
}

/* drop a reference; the last one frees the entry (backend state first) */
void mfs_entry_put(mfs_t *m, struct fentry *e)
{
	if (atomic_fetch_sub(&e->refs, 1) != 1)
		return;
	if (m->be->free_priv)
		m->be->free_priv(m, e);
	free(e->be);
	free(e->path);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->rmu);
	pthread_cond_destroy(&e->rcv);
	free(e);
	SADD(m, files_freed, 1);
	pthread_mutex_lock(&m->tab_mu);
	m->nalloc--;
	pthread_cond_broadcast(&m->tab_cv);
	pthread_mutex_unlock(&m->tab_mu);
}

/* the table's reference is the entry's first */
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

/* the split: every rank owns part bytes (rounded up to align) */
static uint64_t part_size(mfs_t *m, uint64_t size)
{
	uint64_t n = (uint64_t)m->nranks;
	uint64_t p = (size + n - 1) / n;
	uint64_t a = m->o.align ? m->o.align : 1;
	p = (p + a - 1) / a * a;
	return p ? p : 1;
}

void mfs_owner_range(struct fentry *e, int r, uint64_t *off, uint64_t *len)
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


int mfs_pread_full(mfs_t *m, int fd, char *dst, uint64_t len, uint64_t off, atomic_int *cancel)
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

int mfs_mpi_test(mfs_t *m, MPI_Request *r)
{
	int flag = 0;
	MLOCK(m);
	MPI_Test(r, &flag, MPI_STATUS_IGNORE);
	MUNLOCK(m);
	return flag;
}

/* ------------------------------------------------------------------ */
/* create / free (executed by the MPI thread in coordinator order)     */
/* ------------------------------------------------------------------ */

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
	mfs_owner_range(e, m->rank, &e->my_off, &e->my_len);
	atomic_init(&e->refs, 1); /* the file table's */
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_mutex_init(&e->rmu, NULL);
	pthread_cond_init(&e->rcv, NULL);
	pthread_mutex_lock(&m->tab_mu);
	m->nalloc++;
	pthread_mutex_unlock(&m->tab_mu);
	mfs_vlog(m, "create id %llu %s size %llu", (unsigned long long)id, path, (unsigned long long)size);
	m->be->create(m, e);
	tab_insert(m, e);
	SADD(m, files_created, 1);
}

static void do_free(mfs_t *m, uint64_t id)
{
	struct fentry *e = mfs_tab_get(m, id);
	if (!e)
		return;
	mfs_vlog(m, "free id %llu %s (%p, live %d)", (unsigned long long)id, e->path, (void *)e,
		 atomic_load(&m->live));
	tab_remove(m, e);
	if (e->local_opens)
		fprintf(stderr, "mpifuse: rank %d: warning: freeing %s with %d local opens\n", m->rank, e->path,
			e->local_opens);
	m->be->destroy(m, e);
	mfs_entry_put(m, e); /* the lookup's */
	mfs_entry_put(m, e); /* the table's */
}

/* The opens of PATH in flight on this rank (their acquire has not returned
 * yet) are marked as counted on entry ID; returns how many (bcast on demand:
 * they hold the new stream from its start). */
int mfs_pend_claim(mfs_t *m, const char *path, uint64_t id)
{
	int n = 0;
	pthread_mutex_lock(&m->pend_mu);
	for (struct pend *p = m->pends; p; p = p->next) {
		/* by path: the key is the coordinator's, not this rank's own stat */
		if (!p->done && !p->held_id && p->path && !strcmp(p->path, path)) {
			p->held_id = id;
			n++;
		}
	}
	pthread_mutex_unlock(&m->pend_mu);
	return n;
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
		mfs_send_msg(m, r, MT_FREE, c->id, 0, 0, 0, 0, NULL);
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
			mfs_send_msg(m, r, MT_CREATE, c->id, 0, c->size, c->mtime_ns, 0, path);
		flush_outbox(m);
		do_create(m, c->id, path, c->size, c->mtime_ns);
	}
	c->refs++;
	mfs_vlog(m, "coordinator: rank %d acquires %s (id %llu, refs %ld)", h->src, path, (unsigned long long)c->id,
	     c->refs);
	if (h->src == m->rank)
		complete_pend(m, h->req, c->id, 0);
	else
		mfs_send_msg(m, h->src, MT_ACQ_REPLY, c->id, h->req, 0, 0, 0, NULL);
}

static void coord_release(mfs_t *m, uint64_t id)
{
	for (struct centry *c = m->centries; c; c = c->next) {
		if (c->id == id) {
			mfs_vlog(m, "coordinator: release of id %llu (refs %ld)", (unsigned long long)id, c->refs - 1);
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
	case MT_READY: { /* about one entry: its backend's */
		struct fentry *e = mfs_tab_get(m, h->id);
		if (e && m->be->on_message && h->src >= 0 && h->src < m->nranks)
			m->be->on_message(m, e, h);
		if (e)
			mfs_entry_put(m, e);
		break;
	}
	case MT_HOT: /* a peer reads from our window: progress it promptly */
		atomic_store(&m->hot_until_ns, mfs_now_ns() + HOT_NS);
		break;
	case MT_REL:
		coord_release(m, h->id);
		break;
	case MT_FREE:
		do_free(m, h->id);
		break;
	case MT_STOP_READY:
		if (++m->stop_ready == m->nranks) {
			for (int r = 1; r < m->nranks; r++)
				mfs_send_msg(m, r, MT_FINAL, 0, 0, 0, 0, 0, NULL);
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
	/* entries still referenced (a broadcast stream runs to its end on
	 * every rank) are freed by their last holder */
	pthread_mutex_lock(&m->tab_mu);
	uint64_t t0 = mfs_now_ns();
	while (m->nalloc > 0) {
		mfs_cv_wait(&m->tab_cv, &m->tab_mu, 1.0);
		if (m->nalloc > 0 && (double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout * 4)
			mfs_fatal(m, "timeout waiting for %d distributed file(s) to be released (a broadcast still "
				  "running?)", m->nalloc);
	}
	pthread_mutex_unlock(&m->tab_mu);
	while (m->centries) {
		struct centry *c = m->centries;
		m->centries = c->next;
		free(c->path);
		free(c);
	}
}

void *mfs_mpi_thread(void *arg)
{
	mfs_t *m = arg;
	char *rbuf = malloc(MAX_MSG);
	unsigned us = m->o.poll_us; /* current sleep between polls when idle */
	while (!atomic_load(&m->final_done)) {
		int did = flush_outbox(m);
		while (poll_one(m, rbuf))
			did = 1;
		if (m->rank == 0 && !atomic_load(&m->final_done))
			coord_housekeeping(m);
		if (atomic_load(&m->stopping) && !atomic_load(&m->final_done) &&
		    (double)(mfs_now_ns() - m->stopping_since) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout after %.0f s waiting for all ranks to stop%s", m->o.timeout,
				  m->rank == 0 ? "" : " (no FINAL from rank 0)");
		if (did) {
			us = m->o.poll_us;
		} else {
			/* Fast polling (poll_us) while messages flow, while a peer
			 * announced MPI_Gets from our window (MT_HOT: passive-target
			 * progress over TCP) and while stopping; otherwise the sleep
			 * doubles up to idle_poll_us. A message queued locally wakes
			 * this thread at once. */
			uint64_t now = mfs_now_ns();
			if (m->nranks > 1 && (atomic_load(&m->stopping) || now - m->last_msg_ns < 200000000ull ||
					      now < atomic_load(&m->hot_until_ns)))
				us = m->o.poll_us;
			else if (us < m->o.idle_poll_us)
				us = us * 2 < m->o.idle_poll_us ? us * 2 : m->o.idle_poll_us;
			pthread_mutex_lock(&m->out_mu);
			if (!m->out_head && !m->sending)
				mfs_cv_wait(&m->out_cv, &m->out_mu, us / 1e6);
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


int mfs_acquire(mfs_t *m, const char *path, struct stat *st, struct fentry **out)
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
	mfs_send_msg(m, 0, MT_ACQ, 0, p.req, (uint64_t)st->st_size, mt, 0, path);
	pthread_mutex_lock(&m->pend_mu);
	uint64_t t0 = mfs_now_ns();
	while (!p.done) {
		mfs_cv_wait(&m->pend_cv, &m->pend_mu, 0.5);
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
	struct fentry *e = mfs_tab_get(m, p.id); /* the handle's reference */
	if (!e) {
		fprintf(stderr, "mpifuse: rank %d: internal error: entry %llu for %s missing\n", m->rank,
			(unsigned long long)p.id, path);
		mfs_send_msg(m, 0, MT_REL, p.id, 0, 0, 0, 0, NULL);
		return -EIO;
	}
	pthread_mutex_lock(&e->rmu);
	e->local_opens++;
	pthread_mutex_unlock(&e->rmu);
	int rc = m->be->open ? m->be->open(m, e, p.held_id) : 0;
	if (rc) {
		pthread_mutex_lock(&e->rmu);
		e->local_opens--;
		pthread_mutex_unlock(&e->rmu);
		mfs_send_msg(m, 0, MT_REL, e->id, 0, 0, 0, 0, NULL);
		mfs_entry_put(m, e);
		return rc;
	}
	*out = e;
	return 0;
}

/* the last call of an open handle of a distributed file */
void mfs_release(mfs_t *m, struct fentry *e)
{
	uint64_t id = e->id;
	pthread_mutex_lock(&e->rmu);
	e->local_opens--;
	pthread_mutex_unlock(&e->rmu);
	if (m->be->release)
		m->be->release(m, e);
	mfs_send_msg(m, 0, MT_REL, id, 0, 0, 0, 0, NULL);
	mfs_entry_put(m, e);
}
