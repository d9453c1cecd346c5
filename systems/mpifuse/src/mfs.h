/* Internal declarations of mpifuse (not installed). */
#ifndef MFS_INTERNAL_H
#define MFS_INTERNAL_H

#define FUSE_USE_VERSION 312
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fuse.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <limits.h>

#include "mpifuse.h"

enum mfs_mode { M_OSR = 0, M_REFINED = 1, M_BCAST = 2, M_PASS = 3 };

struct mfs_opts {
	size_t max_read;        /* FUSE max_read / max request size (bytes)      */
	int threads;            /* multithreaded FUSE loop                      */
	int max_threads;        /* FUSE worker threads                          */
	int keep_cache;         /* keep kernel page cache across opens          */
	int splice;             /* passthrough: splice from the source fd       */
	double timeout;         /* seconds without progress before aborting     */
	double linger;          /* seconds an unused file stays distributed     */
	uint64_t idle_cache;    /* bytes (file sizes) of unused files kept      */
	uint64_t mem_cap;       /* larger buffers are file backed in spool dir  */
	char spool[PATH_MAX];   /* directory for file backed buffers            */
	uint64_t chunk;         /* osr-refined fetch unit (0 = whole part)      */
	uint64_t cache;         /* osr-refined fetched-chunk cache per file     */
	uint64_t block;         /* bcast block size                             */
	int bcast_rr;           /* bcast: round-robin roots by block            */
	int bcast_depth;        /* bcast: outstanding MPI_Ibcast per stream;
	                         * on demand also the look-ahead (1 = lockstep) */
	int bcast_on_demand;    /* bcast: post block b only once a local reader
	                         * requested a byte in block >= b-(depth-1)     */
	int bcast_sync;         /* bcast on demand: MPI_Ibarrier before each block
	                         * (-1 auto = on when on demand)               */
	double attr_timeout;    /* kernel attribute/entry cache timeout         */
	int allow_other;
	long readahead_kb;      /* -1: leave alone, 0: auto (4 x max_read)      */
	unsigned poll_us;       /* progress thread sleep while windows live     */
	unsigned idle_poll_us;  /* progress thread sleep otherwise              */
	uint64_t align;         /* part boundaries are multiples of this        */
	int meta_buffer;        /* osr: the per-byte metadata buffer (paper's
	                         * first version); 0 = owner from the split,
	                         * no caching (the paper's Figure 5 variant)    */
	int verbose;
};

struct mfs_stats {
	_Atomic uint64_t bytes_read_source, source_read_calls, source_read_ns;
	_Atomic uint64_t open_calls, open_ns;
	_Atomic uint64_t read_calls, read_bytes, read_ns, read_wait_ns;
	_Atomic uint64_t get_calls, get_ns, get_bytes;
	_Atomic uint64_t meta_ns;
	_Atomic uint64_t bcast_calls, bcast_bytes, bcast_ns;
	_Atomic uint64_t bcast_sync_calls, bcast_sync_ns, bcast_demand_wait_ns;
	_Atomic uint64_t bcast_demand_bytes; /* sum over files of the furthest byte asked for */
	_Atomic uint64_t cache_hits, cache_misses, cache_evictions;
	_Atomic uint64_t files_created, files_freed;
	_Atomic uint64_t reset_ns;
};

/* A buffer that lives in memory or, above mem_cap, in an unlinked file. */
struct mbuf {
	char *p;
	size_t len;
	int kind; /* 0 none, 1 anonymous mmap, 2 file backed mmap */
};

struct cslot {
	int64_t g;      /* global chunk id held, -1 none */
	int state;      /* 0 empty, 1 fetching, 2 ready   */
	int pins;
	uint64_t lru;
	char *p;
};

/* One distributed file (one "window" / stream), identical id on all ranks. */
struct fentry {
	struct fentry *next;
	uint64_t id;
	char *path;            /* relative to the source directory */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t part;         /* bytes per rank (last ones may hold less) */
	uint64_t my_off, my_len;
	pthread_mutex_t mu;    /* data/cache state; may be held across MPI_Get   */
	pthread_cond_t cv;
	pthread_mutex_t rmu;   /* ready/loaded/loading; never held across MPI    */
	pthread_cond_t rcv;
	int local_opens;
	/* osr, osr-refined */
	MPI_Win win;
	int have_win;
	char *base;            /* window memory                                  */
	struct mbuf wbuf;      /* when the window memory is file backed          */
	struct mbuf metabuf;   /* osr: int per byte                              */
	int *meta;
	unsigned char *ready;  /* per rank: 0 loading, 1 ok, 2 error             */
	int loaded;            /* own part: 0 loading, 1 ok, 2 error             */
	int loading;           /* loader job queued or running                   */
	atomic_int cancel;
	struct fentry *lnext;  /* loader queue link                              */
	/* osr-refined chunk cache */
	uint64_t chunk, cpp;   /* chunk size, chunks per part                    */
	uint64_t nchunks;
	int32_t *cmap;         /* global chunk id -> slot                        */
	struct cslot *slots;
	int nslots;
	uint64_t lru_clock;
	/* bcast */
	struct mbuf bbuf;
	MPI_Comm bcomm;
	pthread_t stream;
	int stream_started, stream_done;
	uint64_t avail;        /* bytes [0, avail) have arrived                  */
	/* bcast on demand (all under mu; dcv wakes the stream thread)           */
	pthread_cond_t dcv;
	uint64_t demand;       /* end of the furthest byte any local reader asked for */
	int holders;           /* local handles open + opens in flight (pend matched) */
	int released;          /* freed by the coordinator / teardown: never gate     */
	void *m;               /* owning instance                                */
};

struct centry { /* coordinator (rank 0) bookkeeping */
	struct centry *next;
	uint64_t id;
	char *path;
	uint64_t size;
	int64_t mtime_ns;
	long refs;
	uint64_t idle_since;
};

struct outmsg {
	struct outmsg *next;
	int dest;
	int len;
	MPI_Request req;
	char data[];
};

struct pend {
	struct pend *next;
	uint64_t req;
	uint64_t id;
	int status;
	int done;
	/* the open in flight (bcast on demand: a CREATE of this key counts it
	 * as a holder at once, so the stream never starts ungated) */
	const char *path;
	uint64_t size;
	int64_t mtime_ns;
	uint64_t held_id;      /* entry that already counted this open, 0 none */
};

#define WD_SLOTS 256
struct wdslot {
	atomic_int used;
	uint64_t start_ns;
	double timeout;
	char what[240];
};

typedef struct mfs {
	int handle;
	enum mfs_mode mode;
	struct mfs_opts o;
	char source[PATH_MAX];
	char mountpoint[PATH_MAX];
	int srcfd;
	MPI_Comm ctrl, coll;
	int rank, nranks;
	int thread_level;
	int serialized;
	pthread_mutex_t mpi_mu;

	struct fuse *fuse;
	pthread_t fuse_thr;
	int fuse_started;
	atomic_int fuse_ended;
	int mounted;

	/* MPI thread */
	pthread_t mpi_thr;
	int mpi_started;
	atomic_int final_done;
	atomic_int should_stop;
	atomic_int stopping;
	uint64_t stopping_since;
	pthread_mutex_t out_mu;
	pthread_cond_t out_cv;
	uint64_t last_msg_ns;
	struct outmsg *out_head, *out_tail;
	struct outmsg *sending;

	/* pending acquires */
	pthread_mutex_t pend_mu;
	pthread_cond_t pend_cv;
	struct pend *pends;
	atomic_uint_fast64_t next_req;

	/* local file table (all ranks) */
	pthread_mutex_t tab_mu;
	struct fentry *entries;
	struct fentry *zombies;   /* bcast entries freed while streaming */
	atomic_int live;

	/* coordinator */
	struct centry *centries;
	uint64_t next_id;
	int stop_ready;

	/* loader */
	pthread_t load_thr;
	int load_started;
	pthread_mutex_t load_mu;
	pthread_cond_t load_cv;
	struct fentry *lq_head, *lq_tail;
	int load_stop;

	/* watchdog */
	pthread_t wd_thr;
	int wd_started;
	atomic_int wd_stop;
	struct wdslot wd[WD_SLOTS];

	struct mfs_stats st;
} mfs_t;

/* util.c */
uint64_t mfs_now_ns(void);
int mfs_parse_size(const char *s, uint64_t *out);
int mfs_parse_opts(struct mfs_opts *o, const char *opts, char *err, size_t errlen);
void mfs_default_opts(struct mfs_opts *o);
int mfs_parse_mode(const char *s, enum mfs_mode *m);
const char *mfs_mode_name(enum mfs_mode m);
int mfs_stats_to_json(mfs_t *m, char *buf, size_t len);
void mfs_stats_zero(struct mfs_stats *s);

#define SADD(m, field, v) atomic_fetch_add_explicit(&(m)->st.field, (uint64_t)(v), memory_order_relaxed)

#endif
