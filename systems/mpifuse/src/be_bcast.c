/*
 * Backend "bcast": the paper's broadcast designs. Every opened file is
 * broadcast in blocks (option block) into a buffer of the file's size on
 * every rank by one stream thread per file (MPI_Ibcast on a duplicated
 * communicator, up to bcast_depth outstanding); root rank 0 reads the
 * source (bcast_root=rr: round-robin by block). A read() waits until the
 * range has arrived and copies it.
 *
 * The variants differ only in how the stream is paced (gate_open):
 *   streaming (bcast_on_demand=off)  blocks are posted as fast as they go;
 *   on demand (bcast_on_demand=on)   block b is posted once a local reader
 *                                    asked for block b-(depth-1), i.e. at the
 *                                    pace of the slowest reader (the paper's
 *                                    Naive design, one MPI_Bcast per read());
 *                                    bcast_sync=barrier adds an MPI_Ibarrier
 *                                    before each block.
 * "Bcast to /dev/shm" (copy to a local file system first) is a benchmark
 * variant on top of the streaming backend, not a mode.
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bcast_entry {
	struct mbuf bbuf;      /* the whole file                                 */
	MPI_Comm bcomm;
	pthread_t stream;
	int stream_done;
	uint64_t avail;        /* bytes [0, avail) have arrived (e->mu)          */
	/* on demand (all under e->mu; dcv wakes the stream thread)              */
	pthread_cond_t dcv;
	uint64_t demand;       /* end of the furthest byte any local reader asked for */
	int holders;           /* local handles open + opens in flight (pend matched) */
	int released;          /* freed by the coordinator / teardown: never gate     */
};

static struct bcast_entry *BC(struct fentry *e)
{
	return (struct bcast_entry *)e->be;
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
	if (!m->o.bcast_on_demand || BC(e)->released || BC(e)->holders <= 0)
		return 1;
	if (BC(e)->demand == 0)
		return 0;
	uint64_t maxblk = (BC(e)->demand - 1) / m->o.block;
	return b <= maxblk + (uint64_t)(m->o.bcast_depth - 1);
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
		int rc = mfs_pread_full(m, s->fd, BC(e)->bbuf.p + off, len, off, NULL);
		if (rc)
			mfs_fatal(m, "bcast root cannot read block %llu of %s: %s", (unsigned long long)b, e->path,
				  strerror(-rc));
		rd = mfs_now_ns() - t0;
	}
	MLOCK(m);
	MPI_Ibcast(BC(e)->bbuf.p + off, (int)len, MPI_BYTE, root, BC(e)->bcomm, &s->reqs[b % s->W]);
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
				MPI_Ibarrier(BC(e)->bcomm, &s->bar);
				MUNLOCK(m);
				s->bar_on = 1;
				s->bar_t0 = mfs_now_ns();
				SADD(m, bcast_sync_calls, 1);
			}
			go = mfs_mpi_test(m, &s->bar);
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
		if (mfs_mpi_test(m, &s->reqs[s->head % s->W])) {
			s->head++;
			uint64_t av = s->head * s->B;
			pthread_mutex_lock(&e->mu);
			BC(e)->avail = av > e->size ? e->size : av;
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
		/* Only MPI can tell when the broadcast or barrier completes, and
		 * MPI_Wait would spin as well. Back off in proportion to how long
		 * nothing has moved: yield for the first 50 us, then sleep 1/64 of
		 * the time waited so far (20 us to 1 ms), so a wait is prolonged by
		 * at most ~1.6 % while an idle stream costs ~1000 tests/s. */
		uint64_t waited = now - (s->bar_on && s->bar_t0 > s->progress ? s->bar_t0 : s->progress);
		s->spins++;
		if (waited < 50000)
			sched_yield();
		else
			usleep(waited / 64 / 1000 < 20 ? 20 : waited / 64 / 1000 > 1000 ? 1000 : (useconds_t)(waited / 64 / 1000));
		return s->bar_on && s->head >= s->b ? ST_SYNC : ST_MPI;
	}
	/* gated: nothing outstanding and no local reader has asked for block b
	 * yet. No abort here: a reader may legitimately keep the file open
	 * without reading; a peer rank that waits for this one times out in its
	 * own broadcast or barrier wait (loudly). Closing the last local handle,
	 * a new request or the coordinator freeing the file opens the gate. */
	pthread_mutex_lock(&e->mu);
	while (!gate_open(m, e, s->b))
		mfs_cv_wait(&BC(e)->dcv, &e->mu, 0.5);
	pthread_mutex_unlock(&e->mu);
	s->progress = mfs_now_ns();
	return ST_DEMAND;
}

static void *stream_thread(void *arg)
{
	struct fentry *e = arg;
	mfs_t *m = e->m;
	pthread_detach(pthread_self());
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
	MPI_Comm_free(&BC(e)->bcomm);
	MUNLOCK(m);
	pthread_mutex_lock(&e->mu);
	BC(e)->avail = e->size;
	BC(e)->stream_done = 1;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	SADD(m, stream_cpu_ns, mfs_thread_cpu_ns(pthread_self()));
	mfs_vlog(m, "stream of %s (id %llu) done", e->path, (unsigned long long)e->id);
	mfs_entry_put(m, e); /* the stream's reference */
	return NULL;
}


static int bcast_check(mfs_t *m, const char *mode, char *err, size_t errlen)
{
	if (mfs_check_no_meta(m, mode, err, errlen))
		return -1;
	if (m->o.bcast_sync > 0 && !m->o.bcast_on_demand) {
		snprintf(err, errlen, "bcast_sync=barrier needs bcast_on_demand=1");
		return -1;
	}
	return 0;
}

static void bcast_describe(mfs_t *m, char *buf, size_t len)
{
	snprintf(buf, len, "\"bcast_block\":%llu,\"bcast_depth\":%d,\"bcast_on_demand\":%s,\"bcast_sync\":\"%s\","
		 "\"zero_copy\":%s,",
		 (unsigned long long)m->o.block, m->o.bcast_depth, m->o.bcast_on_demand ? "true" : "false",
		 m->o.bcast_on_demand && m->o.bcast_sync > 0 ? "barrier" : "none", m->o.zero_copy ? "true" : "false");
}

static void bcast_conn_init(mfs_t *m, struct fuse_conn_info *conn)
{
	if (m->o.zero_copy)
		mfs_want_splice(conn);
}

static void bcast_create(mfs_t *m, struct fentry *e)
{
	struct bcast_entry *b = calloc(1, sizeof(*b));
	if (!b)
		mfs_fatal(m, "out of memory");
	e->be = b;
	pthread_cond_init(&b->dcv, NULL);
	int rc = m->o.zero_copy ? mfs_mbuf_alloc_fd(m, &b->bbuf, e->size) : mfs_mbuf_alloc(m, &b->bbuf, e->size);
	if (rc)
		mfs_fatal(m, "cannot allocate the %llu byte broadcast buffer of %s: %s",
			  (unsigned long long)e->size, e->path, strerror(-rc));
	int wd = mfs_wd_begin(m, "MPI_Comm_dup for the broadcast of %s", e->path);
	MLOCK(m);
	MPI_Comm_dup(m->coll, &b->bcomm);
	MPI_Comm_set_errhandler(b->bcomm, MPI_ERRORS_ARE_FATAL);
	MUNLOCK(m);
	mfs_wd_end(m, wd);
	/* opens of this file in flight on this rank hold it from the start,
	 * so that an on-demand stream never begins ungated (bcast_open knows
	 * by held_id that its open was counted here) */
	b->holders = mfs_pend_claim(m, e->path, e->id);
	mfs_entry_get(e); /* the stream's reference: it runs to the end on every rank */
	if (mfs_spawn(&b->stream, stream_thread, e) != 0)
		mfs_fatal(m, "cannot create a stream thread");
}

/* the coordinator freed the file: nobody holds it any more (on demand: stop
 * gating); the stream runs to its end and drops its reference */
static void bcast_destroy(mfs_t *m, struct fentry *e)
{
	(void)m;
	struct bcast_entry *b = BC(e);
	pthread_mutex_lock(&e->mu);
	b->released = 1;
	pthread_cond_broadcast(&b->dcv);
	pthread_mutex_unlock(&e->mu);
}

static void bcast_free_priv(mfs_t *m, struct fentry *e)
{
	(void)m;
	mfs_mbuf_free(&BC(e)->bbuf);
	pthread_cond_destroy(&BC(e)->dcv);
}

static int bcast_open(mfs_t *m, struct fentry *e, uint64_t held_id)
{
	/* a hold counted at CREATE (held_id) is this open's; a hold counted
	 * on another entry of the same key belongs to an entry that has been
	 * freed since (released: it no longer gates) */
	pthread_mutex_lock(&e->mu);
	if (held_id != e->id)
		BC(e)->holders++;
	pthread_cond_broadcast(&BC(e)->dcv);
	pthread_mutex_unlock(&e->mu);
	if (held_id && held_id != e->id) {
		/* counted on an older copy of the same path (the file changed on
		 * the source while this open was in flight): that hold is not ours */
		struct fentry *o = mfs_tab_get(m, held_id);
		if (o) {
			pthread_mutex_lock(&o->mu);
			if (BC(o)->holders > 0)
				BC(o)->holders--;
			pthread_cond_broadcast(&BC(o)->dcv);
			pthread_mutex_unlock(&o->mu);
			mfs_entry_put(m, o);
		}
	}
	return 0;
}

/* the last local handle: stop gating */
static void bcast_release(mfs_t *m, struct fentry *e)
{
	(void)m;
	pthread_mutex_lock(&e->mu);
	BC(e)->holders--;
	pthread_cond_broadcast(&BC(e)->dcv);
	pthread_mutex_unlock(&e->mu);
}

/* wait until [off, off+size) has arrived (and let the demand move on) */
static void bcast_wait(mfs_t *m, struct fentry *e, size_t size, uint64_t off)
{
	struct bcast_entry *b = BC(e);
	uint64_t need = off + size;
	pthread_mutex_lock(&e->mu);
	if (need > b->demand) { /* on demand: this request lets the stream move on */
		SADD(m, bcast_demand_bytes, need - b->demand);
		b->demand = need;
		if (m->o.bcast_on_demand)
			pthread_cond_broadcast(&b->dcv);
	}
	if (b->avail < need) {
		uint64_t t0 = mfs_now_ns(), tp = t0, last = b->avail;
		while (b->avail < need) {
			mfs_cv_wait(&e->cv, &e->mu, 0.5);
			uint64_t now = mfs_now_ns();
			if (b->avail != last) {
				last = b->avail;
				tp = now;
			} else if ((double)(now - tp) / 1e9 > m->o.timeout) {
				mfs_fatal(m, "timeout after %.0f s without progress waiting for bytes [%llu,%llu) of %s "
					  "to arrive by broadcast (have %llu)%s",
					  m->o.timeout, (unsigned long long)off, (unsigned long long)need, e->path,
					  (unsigned long long)b->avail,
					  m->o.bcast_on_demand ? " (on-demand broadcast: every rank that holds the file "
								 "open must ask for these bytes too)" : "");
			}
		}
		SADD(m, read_wait_ns, mfs_now_ns() - t0);
	}
	pthread_mutex_unlock(&e->mu);
}

static int bcast_read(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off)
{
	bcast_wait(m, e, size, off);
	memcpy(buf, BC(e)->bbuf.p + off, size);
	return (int)size;
}

/* zero_copy (ours): the bytes stay in the buffer; libfuse splices them from
 * its file descriptor (or reads them, without splice). The buffer lives
 * until the entry's last reference, which the open handle holds. */
static int bcast_read_fd(mfs_t *m, struct fentry *e, size_t size, uint64_t off, int *fd)
{
	bcast_wait(m, e, size, off);
	*fd = BC(e)->bbuf.fd;
	return (int)size;
}

const struct mfs_backend mfs_backend_bcast = {
	.name = "bcast",
	.distributed = 1,
	.check_opts = bcast_check,
	.describe = bcast_describe,
	.create = bcast_create,
	.destroy = bcast_destroy,
	.free_priv = bcast_free_priv,
	.open = bcast_open,
	.release = bcast_release,
	.read = bcast_read,
	.read_fd = bcast_read_fd,
	.conn_init = bcast_conn_init,
};
