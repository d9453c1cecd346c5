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
	double stop_grace;      /* stop: seconds to wait for open files' RELEASE */
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
	int zero_copy;          /* bcast: read_buf hands libfuse the buffer's fd
	                         * (memfd) instead of copying (ours)            */
	int meta_buffer;        /* osr: the per-byte metadata buffer (paper's
	                         * first version); 0 = owner from the split,
	                         * no caching (the paper's Figure 5 variant)    */
	int map_source;         /* osr-refined (ours): the own part's window is a
	                         * private mapping of the source file (no copy
	                         * at load, open does not wait for the load);
	                         * with splice, own-part reads are handed to
	                         * libfuse as the source fd                    */
	int io_uring;           /* FUSE over io_uring (ours, issue 30; tools/
	                         * fuseuring): requests come through per-CPU
	                         * io_uring queues, not /dev/fuse reads; falls
	                         * back to /dev/fuse and says why            */
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
	_Atomic uint64_t stream_cpu_ns; /* CPU time of finished bcast stream threads */
	_Atomic uint64_t zc_bytes;      /* bytes handed to libfuse by fd (bcast zero_copy,
	                                 * osr-refined map_source+splice) */
	_Atomic uint64_t reset_ns;
};

/* A buffer that lives in memory or, above mem_cap, in an unlinked file. */
struct mbuf {
	char *p;
	size_t len;
	int kind; /* 0 none, 1 anonymous mmap, 2 file backed mmap, 3 memfd mmap */
	int fd;   /* with_fd: the file behind the mapping (-1 none) */
};

/* ------------------------------------------------------------------ */
/* protocol layer (proto.c): one distributed file, identical id on all */
/* ranks; the backends keep their own per-entry state behind `be`.     */
/* ------------------------------------------------------------------ */

struct fentry {
	struct fentry *next;   /* file table link                                */
	uint64_t id;
	char *path;            /* relative to the source directory */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t part;         /* the split: bytes per rank (last ones may hold less) */
	uint64_t my_off, my_len;
	atomic_int refs;       /* file table + open handles + lookups in progress
	                        * + backend threads (bcast stream); the memory is
	                        * freed with the last reference (mfs_entry_put) */
	pthread_mutex_t mu;    /* backend data state; may be held across MPI_Get */
	pthread_cond_t cv;
	pthread_mutex_t rmu;   /* local_opens, backend ready state; never held across MPI */
	pthread_cond_t rcv;
	int local_opens;
	void *be;              /* backend-private per-entry state               */
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

enum { MT_ACQ = 1, MT_ACQ_REPLY, MT_CREATE, MT_READY, MT_REL, MT_FREE, MT_STOP_READY, MT_FINAL, MT_SHUTDOWN,
       MT_HOT };

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

typedef struct mfs mfs_t;

/* ------------------------------------------------------------------ */
/* backends: one per mode, behind this table (be_*.c)                  */
/* ------------------------------------------------------------------ */

struct mfs_backend {
	const char *name;
	int distributed;  /* 0: no distributed copies, every open reads the source */
	/* mpifuse_start: reject options this backend does not have (0 ok) */
	int (*check_opts)(mfs_t *m, const char *mode, char *err, size_t errlen);
	/* the backend's configuration as JSON members ("k":v,) for the stats */
	void (*describe)(mfs_t *m, char *buf, size_t len);
	void (*conn_init)(mfs_t *m, struct fuse_conn_info *conn); /* may call mfs_want_splice */
	/* MPI thread, in the coordinator's order on every rank: set up (may be
	 * collective) / tear down the collective part; free_priv with the last
	 * reference */
	void (*create)(mfs_t *m, struct fentry *e);
	void (*destroy)(mfs_t *m, struct fentry *e);
	void (*free_priv)(mfs_t *m, struct fentry *e);
	/* a control message about this entry (MT_READY) */
	void (*on_message)(mfs_t *m, struct fentry *e, const struct msg_hdr *h);
	/* FUSE side: after the coordinator answered the open (held_id: see
	 * struct pend); the last call of a handle; a read within [0, size) */
	int (*open)(mfs_t *m, struct fentry *e, uint64_t held_id);
	void (*release)(mfs_t *m, struct fentry *e);
	int (*read)(mfs_t *m, struct fentry *e, char *buf, size_t size, uint64_t off);
	/* fd reads (bcast zero_copy, osr-refined map_source+splice): like read,
	 * but instead of copying say where the bytes lie (*fd at offset off),
	 * valid while the entry is referenced */
	int (*read_fd)(mfs_t *m, struct fentry *e, size_t size, uint64_t off, int *fd);
	/* (read_fd returns -EAGAIN where the range has no fd: read copies it) */
	/* osr family: this rank's own part has been read into the window */
	void (*loaded)(mfs_t *m, struct fentry *e);
};

extern const struct mfs_backend mfs_backend_osr, mfs_backend_refined, mfs_backend_bcast, mfs_backend_pass;

struct mfs {
	int handle;
	enum mfs_mode mode;
	const struct mfs_backend *be;
	struct mfs_opts o;
	char source[PATH_MAX];
	char mountpoint[PATH_MAX];
	int srcfd;
	MPI_Comm ctrl, coll;
	int rank, nranks;
	int thread_level;
	int serialized;
	pthread_mutex_t mpi_mu;

	int fd_reads;           /* read_buf asks the backend's read_fd first */
	struct fuse *fuse;
	pthread_t fuse_thr;
	int fuse_started;
	atomic_int fuse_ended;
	/* open file handles (fs.c): stop waits stop_grace for their RELEASE,
	 * then releases what the kernel never will */
	int wake_sig;           /* the FUSE loop can be woken by a signal */
	struct fuseuring *uring; /* -o io_uring: the transport (NULL: /dev/fuse) */
	int uring_owner;        /* this mount holds the process's io_uring transport */
	atomic_int transport_ready; /* the FUSE thread has its transport up (start waits) */
	pthread_mutex_t h_mu;
	pthread_cond_t h_cv;
	struct handle *h_list;
	int h_open;
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
	_Atomic uint64_t hot_until_ns; /* a peer reads our window: poll fast */
	struct outmsg *out_head, *out_tail;
	struct outmsg *sending;

	/* pending acquires */
	pthread_mutex_t pend_mu;
	pthread_cond_t pend_cv;
	struct pend *pends;
	atomic_uint_fast64_t next_req;

	/* local file table (all ranks) */
	pthread_mutex_t tab_mu;
	pthread_cond_t tab_cv;    /* signalled when an entry's memory is freed */
	struct fentry *entries;
	atomic_int live;          /* entries in the table */
	int nalloc;               /* entries not yet freed (tab_mu) */

	/* coordinator */
	struct centry *centries;
	uint64_t next_id;
	int stop_ready;

	/* loader (osr family) */
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

	/* CPU time of this process (getrusage: all threads, the application's
	 * too in library mode) at mount, at the first open of a file and when
	 * the FUSE loop ended (unmount); 0 = not yet. Never reset. */
	uint64_t mount_ns, cpu_mount_ns;
	_Atomic uint64_t first_open_ns, cpu_first_open_ns;
	_Atomic uint64_t unmount_ns, cpu_unmount_ns;
};

/* proto.c: helpers */
void mfs_fatal(mfs_t *m, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void mfs_vlog(mfs_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mfs_want_splice(struct fuse_conn_info *conn); /* fs.c: SPLICE_WRITE|MOVE where capable */
/* fs.c: the transport's JSON object (tools/fuseuring's, or {"transport":"dev-fuse",...}) */
int mfs_transport_json(mfs_t *m, char *buf, size_t len);
int mfs_wd_begin(mfs_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mfs_wd_end(mfs_t *m, int i);
void *mfs_wd_thread(void *arg);
int mfs_spawn(pthread_t *t, void *(*fn)(void *), void *arg);
void mfs_abstime_in(struct timespec *ts, double sec);
int mfs_cv_wait(pthread_cond_t *cv, pthread_mutex_t *mu, double sec);
int mfs_mbuf_alloc(mfs_t *m, struct mbuf *b, size_t len);
int mfs_mbuf_alloc_fd(mfs_t *m, struct mbuf *b, size_t len);
void mfs_mbuf_free(struct mbuf *b);
int mfs_pread_full(mfs_t *m, int fd, char *dst, uint64_t len, uint64_t off, atomic_int *cancel);
int mfs_mpi_test(mfs_t *m, MPI_Request *r);
void mfs_owner_range(struct fentry *e, int r, uint64_t *off, uint64_t *len);
/* proto.c: messages, file table, coordinator, MPI thread */
void mfs_send_msg(mfs_t *m, int dest, int type, uint64_t id, uint64_t req, uint64_t size, int64_t mtime,
		  int status, const char *path);
struct fentry *mfs_tab_get(mfs_t *m, uint64_t id);     /* with a reference, or NULL */
void mfs_entry_get(struct fentry *e);
void mfs_entry_put(mfs_t *m, struct fentry *e);
int mfs_pend_claim(mfs_t *m, const char *path, uint64_t id);
int mfs_acquire(mfs_t *m, const char *path, struct stat *st, struct fentry **out);
void mfs_release(mfs_t *m, struct fentry *e);
void *mfs_mpi_thread(void *arg);
uint64_t mfs_process_cpu_ns(void);
uint64_t mfs_thread_cpu_ns(pthread_t t);
void mfs_mark_first_open(mfs_t *m);

/* window.c: the MPI window and loader shared by osr and osr-refined. The
 * backends' per-entry state starts with a struct win_part. */
struct win_part {
	MPI_Win win;
	int have_win;
	char *base;            /* window memory                                  */
	struct mbuf wbuf;      /* when the window memory is file backed          */
	uint64_t load_at;      /* where the own part goes in the window          */
	unsigned char *ready;  /* per rank: 0 loading, 1 ok, 2 error (rmu)       */
	int loaded;            /* own part: 0 loading, 1 ok, 2 error (rmu)       */
	int loading;           /* loader job queued or running (rmu)             */
	atomic_int cancel;
	struct fentry *lnext;  /* loader queue link                              */
	_Atomic uint64_t *hot_sent; /* per rank: when MT_HOT was last sent to it  */
	/* map_source (osr-refined): the window is a private mapping of the
	 * source file; base = map + (my_off - page-aligned my_off) */
	int mapped;
	int src_fd;            /* the mapped source file (-1 none)               */
	char *map;
	size_t map_len;
};
#define WIN(e) ((struct win_part *)(e)->be)
void mfs_win_create(mfs_t *m, struct fentry *e, uint64_t len, uint64_t load_at);
void mfs_win_create_map(mfs_t *m, struct fentry *e);
void mfs_win_load(mfs_t *m, struct fentry *e);
void mfs_win_destroy(mfs_t *m, struct fentry *e);
void mfs_win_free_mem(struct fentry *e);
void mfs_win_on_message(mfs_t *m, struct fentry *e, const struct msg_hdr *h);
int mfs_win_open(mfs_t *m, struct fentry *e, uint64_t held_id);
int mfs_win_wait_ready(mfs_t *m, struct fentry *e, int r);
void mfs_win_get(mfs_t *m, struct fentry *e, char *dst, uint64_t len, int target, uint64_t disp);
void mfs_win_hot(mfs_t *m, struct fentry *e, int target);
void *mfs_load_thread(void *arg);
int mfs_check_no_meta(mfs_t *m, const char *mode, char *err, size_t errlen);

/* be_pass.c: reading the source directly (passthrough, and non-regular
 * files in every mode) */
int mfs_pass_read(mfs_t *m, int fd, char *buf, size_t size, off_t off);
int mfs_pass_read_buf(mfs_t *m, int fd, off_t fsize, struct fuse_bufvec **bufp, size_t size, off_t off);

#define MLOCK(m) do { if ((m)->serialized) pthread_mutex_lock(&(m)->mpi_mu); } while (0)
#define MUNLOCK(m) do { if ((m)->serialized) pthread_mutex_unlock(&(m)->mpi_mu); } while (0)

/* util.c */
uint64_t mfs_now_ns(void);
int mfs_parse_size(const char *s, uint64_t *out);
int mfs_parse_opts(struct mfs_opts *o, const char *opts, char *err, size_t errlen);
void mfs_default_opts(struct mfs_opts *o);
int mfs_parse_mode(const char *s, enum mfs_mode *m);
const char *mfs_mode_name(enum mfs_mode m);
const struct mfs_backend *mfs_mode_backend(enum mfs_mode m);
const char *mfs_level_name(int l);
int mfs_stats_to_json(mfs_t *m, char *buf, size_t len);
void mfs_stats_zero(struct mfs_stats *s);

#define SADD(m, field, v) atomic_fetch_add_explicit(&(m)->st.field, (uint64_t)(v), memory_order_relaxed)

#endif
