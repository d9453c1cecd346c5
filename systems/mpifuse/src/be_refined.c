/*
 * Backend "osr-refined" (ours, beyond the paper): One-Sided Reading with the
 * owner computed from the split instead of a per-byte metadata buffer, a
 * window of only the rank's own part, and remote parts fetched in whole
 * chunks (option chunk, 0 = whole part) into a per-file LRU chunk cache
 * (option cache, 0 = unlimited). Concurrent reads of one file run in
 * parallel: only the cache bookkeeping is under the entry's mutex, a chunk
 * being fetched is waited for, a pinned chunk is never evicted.
 * Window and loader are osr's (window.c).
 *
 * map_source (ours, off by default): the own part's window is a private
 * mapping of the source file instead of a copy (window.c), so open does not
 * wait for a load and nothing is copied into the window; with splice, reads
 * that lie in the own part are handed to libfuse as the source file's fd
 * (read_buf, FUSE_BUF_IS_FD: spliced into the reply) instead of a memcpy.
 */
#include "mfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cslot {
	int64_t g;      /* global chunk id held, -1 none */
	int state;      /* 0 empty, 1 fetching, 2 ready   */
	int pins;
	uint64_t lru;
	char *p;
};

struct refined_entry {
	struct win_part w;     /* first: the shared window state (own part only) */
	uint64_t chunk, cpp;   /* chunk size, chunks per part                    */
	uint64_t nchunks;
	int32_t *cmap;         /* global chunk id -> slot                        */
	struct cslot *slots;
	int nslots;
	uint64_t lru_clock;
};

static struct refined_entry *REF(struct fentry *e)
{
	return (struct refined_entry *)e->be;
}

static int refined_check(mfs_t *m, const char *mode, char *err, size_t errlen)
{
	if (m->o.zero_copy) {
		snprintf(err, errlen, "zero_copy is a bcast option (mode %s reads through a copy; "
			 "map_source,splice hands out its own part by fd)", mode);
		return -1;
	}
	return mfs_check_no_meta(m, mode, err, errlen);
}

static void refined_describe(mfs_t *m, char *buf, size_t len)
{
	snprintf(buf, len, "\"chunk\":%llu,\"map_source\":%s,\"splice\":%s,", (unsigned long long)m->o.chunk,
		 m->o.map_source ? "true" : "false", m->o.splice ? "true" : "false");
}

static void refined_conn_init(mfs_t *m, struct fuse_conn_info *conn)
{
	if (m->fd_reads)
		mfs_want_splice(conn);
}

static void refined_create(mfs_t *m, struct fentry *e)
{
	struct refined_entry *f = calloc(1, sizeof(*f));
	if (!f)
		mfs_fatal(m, "out of memory");
	e->be = f;
	if (m->o.map_source)
		mfs_win_create_map(m, e);
	else
		mfs_win_create(m, e, e->my_len, 0);
	f->chunk = m->o.chunk ? m->o.chunk : e->part;
	if (f->chunk > e->part)
		f->chunk = e->part;
	f->cpp = (e->part + f->chunk - 1) / f->chunk;
	f->nchunks = f->cpp * (uint64_t)m->nranks;
	f->cmap = malloc(f->nchunks * sizeof(int32_t));
	for (uint64_t i = 0; i < f->nchunks; i++)
		f->cmap[i] = -1;
	uint64_t remote = f->nchunks - f->cpp;
	uint64_t ns = m->o.cache ? m->o.cache / f->chunk : remote;
	if (ns < 2)
		ns = 2;
	if (ns > remote)
		ns = remote;
	if (ns > (1u << 30))
		ns = 1u << 30;
	f->nslots = (int)ns;
	f->slots = calloc(ns ? ns : 1, sizeof(struct cslot));
	for (uint64_t i = 0; i < ns; i++)
		f->slots[i].g = -1;
	mfs_win_load(m, e);
}

static void refined_free_priv(mfs_t *m, struct fentry *e)
{
	(void)m;
	struct refined_entry *f = REF(e);
	mfs_win_free_mem(e);
	if (f->slots) {
		for (int i = 0; i < f->nslots; i++)
			free(f->slots[i].p);
		free(f->slots);
	}
	free(f->cmap);
}

/* pin the cached copy of chunk j of owner's part, fetching it if needed */
static struct cslot *chunk_pin(mfs_t *m, struct fentry *e, int owner, uint64_t j, uint64_t cstart, uint64_t clen,
			       uint64_t owner_off)
{
	struct refined_entry *f = REF(e);
	uint64_t g = (uint64_t)owner * f->cpp + j;
	pthread_mutex_lock(&e->mu);
	uint64_t t0 = mfs_now_ns();
	for (;;) {
		int s = f->cmap[g];
		if (s >= 0) {
			struct cslot *sl = &f->slots[s];
			if (sl->state == 2) {
				sl->pins++;
				sl->lru = ++f->lru_clock;
				pthread_mutex_unlock(&e->mu);
				SADD(m, cache_hits, 1);
				return sl;
			}
		} else {
			/* pick an empty slot, else the least recently used unpinned one */
			struct cslot *v = NULL;
			for (int i = 0; i < f->nslots; i++) {
				struct cslot *c = &f->slots[i];
				if (c->state == 0) {
					v = c;
					break;
				}
				if (c->state == 2 && c->pins == 0 && (!v || c->lru < v->lru))
					v = c;
			}
			if (v) {
				if (v->state == 2) {
					f->cmap[v->g] = -1;
					SADD(m, cache_evictions, 1);
				}
				v->g = (int64_t)g;
				v->state = 1;
				v->pins = 1;
				f->cmap[g] = (int32_t)(v - f->slots);
				if (!v->p)
					v->p = malloc(f->chunk);
				pthread_mutex_unlock(&e->mu);
				int rc = v->p ? mfs_win_wait_ready(m, e, owner) : -ENOMEM;
				if (rc == 0)
					mfs_win_get(m, e, v->p, clen, owner, cstart - owner_off);
				pthread_mutex_lock(&e->mu);
				if (rc) {
					v->state = 0;
					v->pins = 0;
					v->g = -1;
					f->cmap[g] = -1;
					pthread_cond_broadcast(&e->cv);
					pthread_mutex_unlock(&e->mu);
					return NULL;
				}
				v->state = 2;
				v->lru = ++f->lru_clock;
				pthread_cond_broadcast(&e->cv);
				pthread_mutex_unlock(&e->mu);
				SADD(m, cache_misses, 1);
				return v;
			}
		}
		/* being fetched by another thread, or every slot pinned */
		mfs_cv_wait(&e->cv, &e->mu, 0.5);
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
	struct refined_entry *f = REF(e);
	uint64_t pos = off, end = off + size;
	while (pos < end) {
		int owner = (int)(pos / e->part);
		uint64_t ooff, olen;
		mfs_owner_range(e, owner, &ooff, &olen);
		uint64_t oend = ooff + olen;
		if (owner == m->rank) {
			uint64_t n = (end < oend ? end : oend) - pos;
			memcpy(buf + (pos - off), f->w.base + (pos - ooff), n);
			pos += n;
			continue;
		}
		uint64_t j = (pos - ooff) / f->chunk;
		uint64_t cstart = ooff + j * f->chunk;
		uint64_t cend = cstart + f->chunk < oend ? cstart + f->chunk : oend;
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

/* map_source + splice: a range inside the own part is handed out as the
 * mapped source file's fd (positions are file offsets); anything else is
 * copied by refined_read */
static int refined_read_fd(mfs_t *m, struct fentry *e, size_t size, uint64_t off, int *fd)
{
	struct win_part *w = WIN(e);
	if (!w->mapped || off < e->my_off || off + size > e->my_off + e->my_len)
		return -EAGAIN;
	(void)m;
	*fd = w->src_fd;
	return (int)size;
}

const struct mfs_backend mfs_backend_refined = {
	.name = "osr-refined",
	.distributed = 1,
	.check_opts = refined_check,
	.describe = refined_describe,
	.conn_init = refined_conn_init,
	.create = refined_create,
	.destroy = mfs_win_destroy,
	.free_priv = refined_free_priv,
	.on_message = mfs_win_on_message,
	.open = mfs_win_open,
	.read = refined_read,
	.read_fd = refined_read_fd,
};
