/*
 * The one-sided window shared by the osr backends (osr, osr-refined): each
 * rank's part of a file is read from the source by the loader thread into
 * an MPI window (MPI_Win_allocate, or MPI_Win_create over a spool file above
 * mem_cap), every rank announces READY per part, and readers fetch other
 * ranks' parts with MPI_Get + MPI_Win_flush (passive target, lock_all).
 *
 * The backends' per-entry state starts with a struct win_part; how large the
 * window is and where the own part goes in it is theirs (osr: the whole file,
 * at its offset; osr-refined: the own part only).
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

static void win_init(mfs_t *m, struct win_part *w, uint64_t load_at)
{
	w->load_at = load_at;
	w->src_fd = -1;
	w->ready = calloc((size_t)m->nranks, 1);
	w->hot_sent = calloc((size_t)m->nranks, sizeof(*w->hot_sent));
	if (!w->ready || !w->hot_sent)
		mfs_fatal(m, "out of memory");
}

/* the collective that makes a rank's part an MPI window of len bytes (under
 * the watchdog and the MPI lock): MPI_Win_allocate (allocate: w->base is
 * set by MPI) or MPI_Win_create over base; then fatal errors, lock_all */
static void win_expose(mfs_t *m, struct fentry *e, uint64_t len, void *base, int allocate)
{
	struct win_part *w = WIN(e);
	int wd = mfs_wd_begin(m, "window creation for %s (id %llu)", e->path, (unsigned long long)e->id);
	MPI_Info info;
	MLOCK(m);
	MPI_Info_create(&info);
	MPI_Info_set(info, "accumulate_ordering", "none");
	if (allocate)
		MPI_Win_allocate((MPI_Aint)len, 1, info, m->coll, &w->base, &w->win);
	else
		MPI_Win_create(base, (MPI_Aint)len, 1, info, m->coll, &w->win);
	MPI_Info_free(&info);
	MPI_Win_set_errhandler(w->win, MPI_ERRORS_ARE_FATAL);
	MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
	MUNLOCK(m);
	mfs_wd_end(m, wd);
	w->have_win = 1;
}

void mfs_win_create(mfs_t *m, struct fentry *e, uint64_t len, uint64_t load_at)
{
	struct win_part *w = WIN(e);
	win_init(m, w, load_at);
	int allocate = !(m->o.mem_cap && len > m->o.mem_cap);
	if (!allocate) {
		int rc = mfs_mbuf_alloc(m, &w->wbuf, len);
		if (rc)
			mfs_fatal(m, "cannot allocate a file backed window of %llu bytes in %s: %s",
				  (unsigned long long)len, m->o.spool, strerror(-rc));
		w->base = w->wbuf.p;
	}
	win_expose(m, e, len, allocate ? NULL : w->base, allocate);
}

/* map_source (osr-refined, ours): the window of this rank's own part is a
 * private, read-write mapping of the source file itself (MPI_Win_create on
 * every rank, so the collective matches whatever each rank got): nothing is
 * copied at load, the part lives in the page cache, and reads of it fault
 * in (or splice) what they need. Private + writable so that an MPI library
 * that registers window memory for writing gets copy-on-write pages instead
 * of a failure; nothing writes it. If the mapping fails (a source that
 * cannot be mapped), the window is ordinary memory loaded as usual. */
void mfs_win_create_map(mfs_t *m, struct fentry *e)
{
	struct win_part *w = WIN(e);
	win_init(m, w, 0);
	uint64_t len = e->my_len;
	if (len > 0) {
		int fd = openat(m->srcfd, e->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
			uint64_t moff = e->my_off / pg * pg, delta = e->my_off - moff;
			void *p = mmap(NULL, len + delta, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)moff);
			if (p != MAP_FAILED) {
				w->mapped = 1;
				w->src_fd = fd;
				w->map = p;
				w->map_len = len + delta;
				w->base = (char *)p + delta;
			} else {
				fprintf(stderr, "mpifuse: rank %d: map_source: cannot map %s (%s), loading a copy\n",
					m->rank, e->path, strerror(errno));
				close(fd);
			}
		}
		if (!w->mapped) {
			int rc = mfs_mbuf_alloc(m, &w->wbuf, len);
			if (rc)
				mfs_fatal(m, "cannot allocate a window of %llu bytes: %s", (unsigned long long)len,
					  strerror(-rc));
			w->base = w->wbuf.p;
		}
	}
	win_expose(m, e, len, len ? w->base : NULL, 0);
}

/* queue the load of this rank's part (called by the backend's create once
 * the window exists); the loader holds a reference while the job runs */
void mfs_win_load(mfs_t *m, struct fentry *e)
{
	struct win_part *w = WIN(e);
	w->loading = 1;
	mfs_entry_get(e);
	pthread_mutex_lock(&m->load_mu);
	w->lnext = NULL;
	if (m->lq_tail)
		WIN(m->lq_tail)->lnext = e;
	else
		m->lq_head = e;
	m->lq_tail = e;
	pthread_cond_signal(&m->load_cv);
	pthread_mutex_unlock(&m->load_mu);
}

/* MPI thread, coordinator order: stop the loader, then the collective free */
void mfs_win_destroy(mfs_t *m, struct fentry *e)
{
	struct win_part *w = WIN(e);
	atomic_store(&w->cancel, 1);
	pthread_mutex_lock(&e->rmu);
	uint64_t t0 = mfs_now_ns();
	while (w->loading) {
		mfs_cv_wait(&e->rcv, &e->rmu, 1.0);
		if ((double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout waiting for the loader of %s to stop", e->path);
	}
	pthread_mutex_unlock(&e->rmu);
	if (w->have_win) {
		int wd = mfs_wd_begin(m, "MPI_Win_free for %s (id %llu)", e->path, (unsigned long long)e->id);
		MLOCK(m);
		MPI_Win_unlock_all(w->win);
		MPI_Win_free(&w->win);
		MUNLOCK(m);
		mfs_wd_end(m, wd);
		w->have_win = 0;
	}
}

void mfs_win_free_mem(struct fentry *e)
{
	struct win_part *w = WIN(e);
	if (w->mapped) {
		munmap(w->map, w->map_len);
		close(w->src_fd);
		w->mapped = 0;
	}
	mfs_mbuf_free(&w->wbuf);
	free(w->ready);
	free(w->hot_sent);
}

/* map_source: bring the mapped part into memory (page cache and page
 * tables) without copying it, in steps that a cancel can interrupt */
static int populate_part(mfs_t *m, struct win_part *w, uint64_t len)
{
	const uint64_t step = 8ull << 20;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	for (uint64_t o = 0; o < w->map_len; o += step) {
		if (atomic_load(&w->cancel))
			return -ECANCELED;
		uint64_t n = w->map_len - o < step ? w->map_len - o : step;
		uint64_t t0 = mfs_now_ns();
		if (madvise(w->map + o, n, MADV_POPULATE_READ) != 0) {
			if (errno != EINVAL)
				return -errno;
			for (uint64_t i = 0; i < n; i += pg) /* kernel < 5.14: touch every page */
				(void)*(volatile char *)(w->map + o + i);
		}
		SADD(m, source_read_ns, mfs_now_ns() - t0);
		SADD(m, source_read_calls, 1);
	}
	SADD(m, bytes_read_source, len);
	return 0;
}

static int load_part(mfs_t *m, struct fentry *e)
{
	struct win_part *w = WIN(e);
	int rc = 0;
	if (w->mapped) {
		rc = populate_part(m, w, e->my_len);
		if (rc && rc != -ECANCELED)
			fprintf(stderr, "mpifuse: rank %d: reading the mapped part of %s from the source failed: %s\n",
				m->rank, e->path, strerror(-rc));
	} else if (e->my_len > 0) {
		int fd = openat(m->srcfd, e->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
		} else {
			rc = mfs_pread_full(m, fd, w->base + w->load_at, e->my_len, e->my_off, &w->cancel);
			close(fd);
		}
		if (rc && rc != -ECANCELED)
			fprintf(stderr, "mpifuse: rank %d: reading part [%llu,+%llu) of %s from the source failed: %s\n",
				m->rank, (unsigned long long)e->my_off, (unsigned long long)e->my_len, e->path,
				strerror(-rc));
	}
	if (rc == 0 && m->be->loaded)
		m->be->loaded(m, e);
	if (rc == 0 && w->have_win) {
		MLOCK(m);
		MPI_Win_sync(w->win);
		MUNLOCK(m);
	}
	return rc;
}

void *mfs_load_thread(void *arg)
{
	mfs_t *m = arg;
	pthread_mutex_lock(&m->load_mu);
	for (;;) {
		while (!m->lq_head && !m->load_stop)
			pthread_cond_wait(&m->load_cv, &m->load_mu);
		if (!m->lq_head && m->load_stop)
			break;
		struct fentry *e = m->lq_head;
		struct win_part *w = WIN(e);
		m->lq_head = w->lnext;
		if (!m->lq_head)
			m->lq_tail = NULL;
		pthread_mutex_unlock(&m->load_mu);

		int rc = load_part(m, e);
		int st = rc == 0 ? 1 : 2;
		pthread_mutex_lock(&e->rmu);
		w->loaded = st;
		w->ready[m->rank] = (unsigned char)st;
		w->loading = 0;
		pthread_cond_broadcast(&e->rcv);
		pthread_mutex_unlock(&e->rmu);
		if (rc != -ECANCELED && e->my_len > 0)
			for (int r = 0; r < m->nranks; r++)
				if (r != m->rank)
					mfs_send_msg(m, r, MT_READY, e->id, 0, 0, 0, st, NULL);
		mfs_entry_put(m, e);
		pthread_mutex_lock(&m->load_mu);
	}
	pthread_mutex_unlock(&m->load_mu);
	return NULL;
}

/* MT_READY: rank h->src has loaded its part (or failed to) */
void mfs_win_on_message(mfs_t *m, struct fentry *e, const struct msg_hdr *h)
{
	(void)m;
	struct win_part *w = WIN(e);
	if (h->type != MT_READY || !w->ready)
		return;
	pthread_mutex_lock(&e->rmu);
	w->ready[h->src] = (unsigned char)h->status;
	pthread_cond_broadcast(&e->rcv);
	pthread_mutex_unlock(&e->rmu);
}

/* the paper's open returns after this rank's part was read */
int mfs_win_open(mfs_t *m, struct fentry *e, uint64_t held_id)
{
	(void)held_id;
	struct win_part *w = WIN(e);
	int rc = 0;
	pthread_mutex_lock(&e->rmu);
	uint64_t t0 = mfs_now_ns();
	/* map_source: the own part is the source's page cache, reads fault in
	 * (or splice) what they need; the loader only warms it for the peers */
	while (w->loaded == 0 && !w->mapped) {
		mfs_cv_wait(&e->rcv, &e->rmu, 0.5);
		if (w->loaded == 0 && (double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
			mfs_fatal(m, "timeout after %.0f s waiting for this rank's part of %s to load", m->o.timeout,
				  e->path);
	}
	if (w->loaded == 2)
		rc = -EIO;
	pthread_mutex_unlock(&e->rmu);
	if (rc == 0) /* reads will follow: wake the owners' progress */
		for (int r = 0; r < m->nranks; r++) {
			uint64_t o, l;
			mfs_owner_range(e, r, &o, &l);
			if (r != m->rank && l > 0)
				mfs_win_hot(m, e, r);
		}
	return rc;
}

int mfs_win_wait_ready(mfs_t *m, struct fentry *e, int r)
{
	struct win_part *w = WIN(e);
	pthread_mutex_lock(&e->rmu);
	int st = w->ready[r];
	if (st == 0) {
		uint64_t t0 = mfs_now_ns();
		while ((st = w->ready[r]) == 0) {
			mfs_cv_wait(&e->rcv, &e->rmu, 0.5);
			if (w->ready[r] == 0 && (double)(mfs_now_ns() - t0) / 1e9 > m->o.timeout)
				mfs_fatal(m, "timeout after %.0f s waiting for rank %d to load its part of %s",
					  m->o.timeout, r, e->path);
		}
		SADD(m, read_wait_ns, mfs_now_ns() - t0);
	}
	pthread_mutex_unlock(&e->rmu);
	return st == 1 ? 0 : -EIO;
}

/* Over a transport without RDMA (UCX over TCP) a remote MPI_Get progresses
 * only while the target's MPI thread polls, which it does slowly when it
 * sees no traffic of its own. So a reader tells the target (MT_HOT, at most
 * every HOT_RESEND_NS per target) that gets are coming: the target polls
 * fast for the next HOT_NS (proto.c). */
#define HOT_RESEND_NS 100000000ull
void mfs_win_hot(mfs_t *m, struct fentry *e, int target)
{
	struct win_part *w = WIN(e);
	uint64_t now = mfs_now_ns(), last = atomic_load(&w->hot_sent[target]);
	if (now - last < HOT_RESEND_NS)
		return;
	if (atomic_compare_exchange_strong(&w->hot_sent[target], &last, now))
		mfs_send_msg(m, target, MT_HOT, e->id, 0, 0, 0, 0, NULL);
}

/* MPI_Get + MPI_Win_flush of [disp, disp+len) of target's window into dst */
void mfs_win_get(mfs_t *m, struct fentry *e, char *dst, uint64_t len, int target, uint64_t disp)
{
	struct win_part *w = WIN(e);
	mfs_win_hot(m, e, target);
	while (len > 0) {
		uint64_t n = len > (1ull << 30) ? (1ull << 30) : len;
		int wd = mfs_wd_begin(m, "MPI_Get of %llu bytes of %s from rank %d", (unsigned long long)n, e->path,
				      target);
		uint64_t t0 = mfs_now_ns();
		MLOCK(m);
		MPI_Get(dst, (int)n, MPI_BYTE, target, (MPI_Aint)disp, (int)n, MPI_BYTE, w->win);
		MPI_Win_flush(target, w->win);
		MUNLOCK(m);
		SADD(m, get_ns, mfs_now_ns() - t0);
		mfs_wd_end(m, wd);
		SADD(m, get_calls, 1);
		SADD(m, get_bytes, n);
		dst += n;
		disp += n;
		len -= n;
	}
}
