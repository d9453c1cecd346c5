/*
 * Backend "osr": One-Sided Reading, the paper's first version (Figures 1
 * and 2), literally. On every rank a window of the *full file size* (the
 * paper's file_buffer); each rank reads its own part of the split into it
 * at the part's offset. A read() fetches every byte it lacks with MPI_Get
 * into the same offset of its own window and copies from there; reads of
 * one file are serialised per rank by the entry's mutex.
 *
 * One option, meta_buffer, is the whole difference to the paper's Figure 5
 * variant (OSR without the metadata buffer):
 *   meta_buffer=on   an int per byte records who holds the byte here
 *                    (initialised from the split once the own part is
 *                    loaded); a read scans it (in_buffer), fetches the runs
 *                    owned elsewhere and marks them as its own: a byte is
 *                    fetched at most once per rank;
 *   meta_buffer=off  no buffer: the owner of a byte is computed from the
 *                    split, nothing records what was fetched, so every read
 *                    fetches its remote bytes again.
 * Window, gets, mutex, threads and request size are the same in both.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct osr_entry {
	struct win_part w;     /* first: the shared window state */
	struct mbuf metabuf;   /* meta_buffer=on: int per byte    */
	int *meta;             /* NULL with meta_buffer=off       */
};

static struct osr_entry *OSR(struct fentry *e)
{
	return (struct osr_entry *)e->be;
}

static void osr_describe(mfs_t *m, char *buf, size_t len)
{
	snprintf(buf, len, "\"meta_buffer\":%s,", m->o.meta_buffer ? "true" : "false");
}

static void osr_create(mfs_t *m, struct fentry *e)
{
	struct osr_entry *o = calloc(1, sizeof(*o));
	if (!o)
		mfs_fatal(m, "out of memory");
	e->be = o;
	/* Figure 1: file_buffer = MPI_Win_allocate(file size) */
	mfs_win_create(m, e, e->size, e->my_off);
	if (m->o.meta_buffer) { /* meta_buffer = int[file size] */
		int rc = mfs_mbuf_alloc(m, &o->metabuf, e->size * sizeof(int));
		if (rc)
			mfs_fatal(m, "cannot allocate the %llu byte metadata buffer of %s: %s",
				  (unsigned long long)(e->size * sizeof(int)), e->path, strerror(-rc));
		o->meta = (int *)o->metabuf.p;
	}
	mfs_win_load(m, e);
}

/* loader: the own part is in the window */
static void osr_loaded(mfs_t *m, struct fentry *e)
{
	int *meta = OSR(e)->meta;
	if (!meta)
		return;
	/* Figure 1: meta_buffer = calculate_distribution(size, world_size) */
	uint64_t t0 = mfs_now_ns();
	for (int r = 0; r < m->nranks; r++) {
		uint64_t o, l;
		mfs_owner_range(e, r, &o, &l);
		for (uint64_t i = o; i < o + l; i++)
			meta[i] = r;
	}
	SADD(m, meta_ns, mfs_now_ns() - t0);
}

static void osr_free_priv(mfs_t *m, struct fentry *e)
{
	(void)m;
	mfs_win_free_mem(e);
	mfs_mbuf_free(&OSR(e)->metabuf);
}

/* The paper's read (Figure 2). With the metadata buffer: in_buffer(offset,
 * size), get_targets / calculate_target_range over the buffer, MPI_Get of
 * every run owned elsewhere into file_buffer, then meta_buffer[offset:
 * offset+size] = my_rank. Without it: the runs come from the split ("the
 * same algorithm to split the file and populate the metadata buffer") and
 * every run owned elsewhere is fetched. */
static int osr_read(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off)
{
	struct osr_entry *o = OSR(e);
	const int me = m->rank;
	int *meta = o->meta;
	uint64_t end = off + size;
	pthread_mutex_lock(&e->mu);
	uint64_t tm = 0, meta_ns = 0;
	int local = 0;
	if (meta) { /* in_buffer(offset, size) */
		tm = mfs_now_ns();
		local = 1;
		for (uint64_t i = off; i < end; i++)
			if (meta[i] != me) {
				local = 0;
				break;
			}
		meta_ns += mfs_now_ns() - tm;
	}
	if (!local) {
		uint64_t i = off;
		while (i < end) {
			int r;
			uint64_t j;
			if (meta) { /* the run of one owner, from the buffer */
				tm = mfs_now_ns();
				r = meta[i];
				j = i + 1;
				while (j < end && meta[j] == r)
					j++;
				meta_ns += mfs_now_ns() - tm;
			} else {    /* the run of one owner, from the split */
				r = (int)(i / e->part);
				j = (uint64_t)(r + 1) * e->part;
				if (j > end)
					j = end;
			}
			if (r != me) {
				if (mfs_win_wait_ready(m, e, r)) {
					pthread_mutex_unlock(&e->mu);
					return -EIO;
				}
				/* data = MPI_Get(t_offset, t_size, target); file_buffer[..] = data */
				mfs_win_get(m, e, o->w.base + i, j - i, r, i);
			}
			i = j;
		}
		if (meta) { /* meta_buffer[offset:offset+size] = my_rank */
			tm = mfs_now_ns();
			for (uint64_t k = off; k < end; k++)
				meta[k] = me;
			meta_ns += mfs_now_ns() - tm;
		}
	}
	memcpy(buf, o->w.base + off, size);
	pthread_mutex_unlock(&e->mu);
	if (meta)
		SADD(m, meta_ns, meta_ns);
	return (int)size;
}

const struct mfs_backend mfs_backend_osr = {
	.name = "osr",
	.distributed = 1,
	.describe = osr_describe,
	.create = osr_create,
	.destroy = mfs_win_destroy,
	.free_priv = osr_free_priv,
	.on_message = mfs_win_on_message,
	.open = mfs_win_open,
	.read = osr_read,
	.loaded = osr_loaded,
};
