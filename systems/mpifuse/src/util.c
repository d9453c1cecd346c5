/* Option parsing, statistics JSON and small helpers. */
#include "mfs.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

uint64_t mfs_process_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

uint64_t mfs_thread_cpu_ns(pthread_t t)
{
	clockid_t c;
	struct timespec ts;
	if (pthread_getcpuclockid(t, &c) != 0 || clock_gettime(c, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the first open of a file (not the stats files) on this rank */
void mfs_mark_first_open(mfs_t *m)
{
	if (atomic_load(&m->first_open_ns))
		return;
	uint64_t cpu = mfs_process_cpu_ns(), now = mfs_now_ns(), zero = 0;
	if (atomic_compare_exchange_strong(&m->first_open_ns, &zero, now))
		atomic_store(&m->cpu_first_open_ns, cpu);
}

uint64_t mfs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "1048576", "1M", "1MiB", "4k", "2G" (binary multiples) */
int mfs_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	uint64_t mul = 1;
	switch (tolower((unsigned char)*end)) {
	case 0: break;
	case 'k': mul = 1ull << 10; end++; break;
	case 'm': mul = 1ull << 20; end++; break;
	case 'g': mul = 1ull << 30; end++; break;
	case 't': mul = 1ull << 40; end++; break;
	default: return -1;
	}
	if (mul > 1) {
		if (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0)
			end += strlen(end);
	}
	if (*end)
		return -1;
	*out = (uint64_t)v * mul;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "yes") || !strcasecmp(v, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") || !strcasecmp(v, "false")) {
		*out = 0;
		return 0;
	}
	return -1;
}

static int parse_double(const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || d < 0)
		return -1;
	*out = d;
	return 0;
}

/* The options that take a plain value: a size (binary suffixes) of at least min, a boolean, or a
 * non-negative number, stored at off (width bytes) in struct mfs_opts, and its default as the
 * option would give it (none: zero, or set by mfs_default_opts).  The width comes from the
 * field's type, and a field of a type its kind cannot store does not compile. */
enum opt_kind { OPT_SIZE, OPT_BOOL, OPT_DBL };
struct opt_desc {
	const char *name;
	enum opt_kind kind;
	size_t off, width;
	uint64_t min;
	const char *dflt;
};
/* a row: OPT(kind, name, field, min, default); the field's offset and width (its type checked) */
#define OPT(kind, name, f, min, dflt) \
	{ name, OPT_##kind, offsetof(struct mfs_opts, f), OPT_WIDTH_##kind(f), min, dflt }
#define OPT_TYPE(f, ...) _Generic(((struct mfs_opts *)0)->f, __VA_ARGS__)
#define OPT_WIDTH_SIZE(f) OPT_TYPE(f, int: sizeof(int), unsigned: sizeof(unsigned), \
	unsigned long: sizeof(unsigned long), unsigned long long: sizeof(unsigned long long))
#define OPT_WIDTH_BOOL(f) OPT_TYPE(f, int: sizeof(int))
#define OPT_WIDTH_DBL(f) OPT_TYPE(f, double: sizeof(double))
static const struct opt_desc OPTS[] = {
	OPT(SIZE, "max_read", max_read, 4096, "1m"),
	OPT(BOOL, "threads", threads, 0, "1"),
	OPT(SIZE, "max_threads", max_threads, 1, "8"),
	OPT(BOOL, "keep_cache", keep_cache, 0, "0"),
	OPT(BOOL, "kernel_cache", keep_cache, 0, NULL), /* keep_cache's other name */
	OPT(BOOL, "splice", splice, 0, "0"),
	OPT(DBL, "timeout", timeout, 0, "60"),
	OPT(DBL, "linger", linger, 0, "5"),
	OPT(DBL, "stop_grace", stop_grace, 0, NULL), /* default -1: auto */
	OPT(SIZE, "idle_cache", idle_cache, 0, "4g"),
	OPT(SIZE, "mem_cap", mem_cap, 0, "0"),
	OPT(SIZE, "chunk", chunk, 0, "4m"),
	OPT(SIZE, "cache", cache, 0, "0"),
	OPT(SIZE, "block", block, 1, "4m"),
	OPT(SIZE, "bcast_depth", bcast_depth, 1, "4"),
	OPT(BOOL, "bcast_on_demand", bcast_on_demand, 0, "0"),
	OPT(DBL, "attr_timeout", attr_timeout, 0, "1"),
	OPT(BOOL, "allow_other", allow_other, 0, "0"),
	OPT(SIZE, "poll_us", poll_us, 1, "200"),
	OPT(SIZE, "idle_poll_us", idle_poll_us, 1, "2000"),
	OPT(SIZE, "align", align, 1, "4096"),
	OPT(BOOL, "verbose", verbose, 0, "0"),
	OPT(BOOL, "meta_buffer", meta_buffer, 0, "1"),
	OPT(BOOL, "zero_copy", zero_copy, 0, "0"),
	OPT(BOOL, "map_source", map_source, 0, "0"),
	OPT(BOOL, "io_uring", io_uring, 0, "0"),
};
#undef OPT
#undef OPT_TYPE
#undef OPT_WIDTH_SIZE
#undef OPT_WIDTH_BOOL
#undef OPT_WIDTH_DBL
_Static_assert(sizeof(int) == sizeof(uint32_t) && sizeof(unsigned long long) == sizeof(uint64_t),
	       "a size option's field is 4 or 8 bytes wide");

/* Set one plain option from its value: 0, or -1 when the value is bad (nothing set). */
static int set_opt(struct mfs_opts *o, const struct opt_desc *d, const char *val)
{
	char *field = (char *)o + d->off;
	uint64_t u = 0;
	double x = 0;
	int b = 0;
	switch (d->kind) {
	case OPT_SIZE:
		/* u + 1 < min + 1: no "always false" comparison for min 0; refuses 2^64-1 */
		if (mfs_parse_size(val, &u) || u + 1 < d->min + 1)
			return -1;
		if (d->width == sizeof(uint32_t)) {
			uint32_t v = (uint32_t)u;
			memcpy(field, &v, sizeof(v));
		} else {
			memcpy(field, &u, sizeof(u));
		}
		return 0;
	case OPT_BOOL:
		if (parse_bool(val, &b))
			return -1;
		memcpy(field, &b, sizeof(b));
		return 0;
	case OPT_DBL:
		if (parse_double(val, &x))
			return -1;
		memcpy(field, &x, sizeof(x));
		return 0;
	}
	return -1;
}

void mfs_default_opts(struct mfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < sizeof(OPTS) / sizeof(OPTS[0]); i++)
		if (OPTS[i].dflt && set_opt(o, &OPTS[i], OPTS[i].dflt))
			abort(); /* a default that its own option refuses */
	o->stop_grace = -1; /* auto: min(5 s, timeout/2) */
	const char *t = getenv("TMPDIR");
	snprintf(o->spool, sizeof(o->spool), "%s", t && *t ? t : "/tmp");
	o->bcast_sync = -1; /* auto: barrier when on demand, resolved in mpifuse_start */
	/* zero: bcast_rr (bcast_root=0), readahead_kb (auto: 4 x max_read) */
}

int mfs_parse_opts(struct mfs_opts *o, const char *opts, char *err, size_t errlen)
{
	if (!opts || !*opts)
		return 0;
	char *dup = strdup(opts), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (!*tok)
			continue;
		char *val = strchr(tok, '=');
		if (val)
			*val++ = 0;
		else
			val = "1";
		uint64_t u = 0;
		int bad = 0;
		const struct opt_desc *d = NULL;
		for (size_t i = 0; i < sizeof(OPTS) / sizeof(OPTS[0]) && !d; i++)
			if (!strcmp(tok, OPTS[i].name))
				d = &OPTS[i];
		if (d) {
			bad = set_opt(o, d, val) != 0;
		} else if (!strcmp(tok, "readahead_kb")) {
			if (!strcmp(val, "-1") || !strcasecmp(val, "off"))
				o->readahead_kb = -1;
			else if (mfs_parse_size(val, &u))
				bad = 1;
			else
				o->readahead_kb = (long)u;
		} else if (!strcmp(tok, "bcast_root")) {
			if (!strcmp(val, "0"))
				o->bcast_rr = 0;
			else if (!strcmp(val, "rr"))
				o->bcast_rr = 1;
			else
				bad = 1;
		} else if (!strcmp(tok, "bcast_sync")) {
			if (!strcmp(val, "barrier"))
				o->bcast_sync = 1;
			else if (!strcmp(val, "none"))
				o->bcast_sync = 0;
			else if (!strcmp(val, "auto"))
				o->bcast_sync = -1;
			else
				bad = 1;
		} else if (!strcmp(tok, "spool")) {
			snprintf(o->spool, sizeof(o->spool), "%s", val);
		} else {
			snprintf(err, errlen, "unknown option '%s'", tok);
			rc = -1;
			break;
		}
		if (bad) {
			snprintf(err, errlen, "bad value '%s' for option '%s'", val, tok);
			rc = -1;
			break;
		}
	}
	free(dup);
	if (rc == 0 && o->max_read > (1 << 20)) {
		snprintf(err, errlen, "max_read must be <= 1048576 (kernel limit of 256 pages)");
		rc = -1;
	}
	if (rc == 0 && o->block > (1ull << 30)) {
		snprintf(err, errlen, "block must be <= 1 GiB");
		rc = -1;
	}
	if (rc == 0 && o->bcast_depth > 1024) {
		snprintf(err, errlen, "bcast_depth must be <= 1024");
		rc = -1;
	}
	if (rc == 0 && o->timeout < 1.0) {
		snprintf(err, errlen, "timeout must be >= 1 s");
		rc = -1;
	}
	if (rc == 0 && o->stop_grace == -1)
		o->stop_grace = o->timeout / 2 < 5.0 ? o->timeout / 2 : 5.0;
	if (rc == 0 && !(o->stop_grace >= 0 && o->stop_grace <= o->timeout / 2)) {
		snprintf(err, errlen, "stop_grace must be between 0 and timeout/2 (%g s)", o->timeout / 2);
		rc = -1;
	}
	return rc;
}

int mfs_parse_mode(const char *s, enum mfs_mode *m)
{
	if (!s)
		return -1;
	if (!strcmp(s, "osr"))
		*m = M_OSR;
	else if (!strcmp(s, "osr-refined") || !strcmp(s, "osr_refined") || !strcmp(s, "refined"))
		*m = M_REFINED;
	else if (!strcmp(s, "bcast") || !strcmp(s, "naive"))
		*m = M_BCAST;
	else if (!strcmp(s, "passthrough") || !strcmp(s, "pass"))
		*m = M_PASS;
	else
		return -1;
	return 0;
}

const struct mfs_backend *mfs_mode_backend(enum mfs_mode m)
{
	switch (m) {
	case M_OSR: return &mfs_backend_osr;
	case M_REFINED: return &mfs_backend_refined;
	case M_BCAST: return &mfs_backend_bcast;
	case M_PASS: return &mfs_backend_pass;
	}
	return NULL;
}

/* meta_buffer is an option of the osr backend only */
int mfs_check_no_meta(mfs_t *m, const char *mode, char *err, size_t errlen)
{
	if (m->o.meta_buffer)
		return 0;
	snprintf(err, errlen, "meta_buffer=off is an osr option (mode %s has no metadata buffer)", mode);
	return -1;
}

const char *mfs_mode_name(enum mfs_mode m)
{
	switch (m) {
	case M_OSR: return "osr";
	case M_REFINED: return "osr-refined";
	case M_BCAST: return "bcast";
	case M_PASS: return "passthrough";
	}
	return "?";
}

void mfs_stats_zero(struct mfs_stats *s)
{
	_Atomic uint64_t *f = (_Atomic uint64_t *)s;
	size_t n = sizeof(*s) / sizeof(*f);
	for (size_t i = 0; i < n; i++)
		atomic_store(&f[i], 0);
	atomic_store(&s->reset_ns, mfs_now_ns());
}

struct jb {
	char *buf;
	size_t len, pos;
	int overflow;
};

static void jp(struct jb *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = j->pos < j->len ? j->len - j->pos : 0;
	int n = vsnprintf(j->buf + (j->pos < j->len ? j->pos : j->len), room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		j->overflow = 1;
	j->pos += n > 0 ? (size_t)n : 0;
}

static void jstr(struct jb *j, const char *key, const char *s)
{
	jp(j, "\"%s\":\"", key);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			jp(j, "\\%c", c);
		else if (c < 0x20)
			jp(j, "\\u%04x", c);
		else
			jp(j, "%c", c);
	}
	jp(j, "\",");
}

static const char *level_name(int l)
{
	switch (l) {
	case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
	case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
	case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
	case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
	}
	return "?";
}

const char *mfs_level_name(int l) { return level_name(l); }

/* The counters of struct mfs_stats in the stats JSON, in this order: a count (U) or a time in
 * ns written as seconds (T). */
static const struct {
	const char *key;
	size_t off;
	int secs;
} COUNTERS[] = {
#define U(k, f) { k, offsetof(struct mfs_stats, f), 0 }
#define T(k, f) { k, offsetof(struct mfs_stats, f), 1 }
	U("bytes_read_source", bytes_read_source),
	U("source_read_calls", source_read_calls),
	T("source_read_time_s", source_read_ns),
	U("open_calls", open_calls),
	T("open_time_s", open_ns),
	U("read_calls", read_calls),
	U("read_bytes", read_bytes),
	T("read_time_s", read_ns),
	T("read_wait_time_s", read_wait_ns),
	U("mpi_get_calls", get_calls),
	T("mpi_get_time_s", get_ns),
	U("bytes_fetched_remote", get_bytes),
	T("meta_time_s", meta_ns),
	U("bcast_calls", bcast_calls),
	U("bcast_bytes", bcast_bytes),
	T("bcast_time_s", bcast_ns),
	U("bcast_sync_calls", bcast_sync_calls),
	T("bcast_sync_time_s", bcast_sync_ns),
	T("bcast_demand_wait_time_s", bcast_demand_wait_ns),
	U("bcast_demand_bytes", bcast_demand_bytes),
	U("cache_hits", cache_hits),
	U("cache_misses", cache_misses),
	U("cache_evictions", cache_evictions),
	U("files_created", files_created),
	U("files_freed", files_freed),
	T("bcast_stream_cpu_s", stream_cpu_ns),
	U("zero_copy_read_bytes", zc_bytes),
#undef U
#undef T
};

int mfs_stats_to_json(mfs_t *m, char *buf, size_t len)
{
	struct jb j = { buf, len, 0, 0 };
	struct mfs_stats *s = &m->st;
	jp(&j, "{");
	jstr(&j, "version", MPIFUSE_VERSION);
	jp(&j, "\"rank\":%d,\"nranks\":%d,", m->rank, m->nranks);
	jstr(&j, "mode", mfs_mode_name(m->mode));
	jstr(&j, "source", m->source);
	jstr(&j, "mountpoint", m->mountpoint);
	jstr(&j, "mpi_thread_level", level_name(m->thread_level));
	jp(&j, "\"global_mpi_lock\":%s,", m->serialized ? "true" : "false");
	jp(&j, "\"fuse_threads\":%s,", m->o.threads ? "true" : "false");
	jp(&j, "\"max_read\":%zu,", m->o.max_read);
	if (m->be && m->be->describe) { /* the mode's own configuration */
		char d[512];
		m->be->describe(m, d, sizeof(d));
		jp(&j, "%s", d);
	}
	jp(&j, "\"since_reset_s\":%.6f,", (double)(mfs_now_ns() - atomic_load(&s->reset_ns)) / 1e9);
	for (size_t i = 0; i < sizeof(COUNTERS) / sizeof(COUNTERS[0]); i++) {
		uint64_t v = atomic_load((_Atomic uint64_t *)((char *)s + COUNTERS[i].off));
		if (COUNTERS[i].secs)
			jp(&j, "\"%s\":%.9f,", COUNTERS[i].key, (double)v / 1e9);
		else
			jp(&j, "\"%s\":%llu,", COUNTERS[i].key, (unsigned long long)v);
	}
	/* CPU burnt by this rank: process (all threads) and the MPI thread, now
	 * and at mount / first open / unmount (keys appear once known); the
	 * idle share = CPU seconds per wall second from mount to the first open
	 * (or to now while nothing was opened) */
	{
		uint64_t now = mfs_now_ns(), cpu = mfs_process_cpu_ns();
		uint64_t fo = atomic_load(&m->first_open_ns), um = atomic_load(&m->unmount_ns);
		jp(&j, "\"cpu_process_s\":%.6f,", (double)cpu / 1e9);
		if (m->mpi_started)
			jp(&j, "\"cpu_mpi_thread_s\":%.6f,", (double)mfs_thread_cpu_ns(m->mpi_thr) / 1e9);
		if (m->mount_ns) {
			jp(&j, "\"cpu_at_mount_s\":%.6f,", (double)m->cpu_mount_ns / 1e9);
			uint64_t t1 = fo ? fo : now, c1 = fo ? atomic_load(&m->cpu_first_open_ns) : cpu;
			if (t1 > m->mount_ns)
				jp(&j, "\"idle_cpu_fraction\":%.6f,\"idle_wall_s\":%.6f,",
				   (double)(c1 - m->cpu_mount_ns) / (double)(t1 - m->mount_ns),
				   (double)(t1 - m->mount_ns) / 1e9);
		}
		if (fo)
			jp(&j, "\"cpu_at_first_open_s\":%.6f,\"wall_mount_to_first_open_s\":%.6f,",
			   (double)atomic_load(&m->cpu_first_open_ns) / 1e9, (double)(fo - m->mount_ns) / 1e9);
		if (um)
			jp(&j, "\"cpu_at_unmount_s\":%.6f,\"wall_mount_to_unmount_s\":%.6f,",
			   (double)atomic_load(&m->cpu_unmount_ns) / 1e9, (double)(um - m->mount_ns) / 1e9);
	}
	{ /* the FUSE transport (-o io_uring): requests through the ring vs READs from /dev/fuse */
		char t[1024];
		mfs_transport_json(m, t, sizeof(t));
		jp(&j, "\"transport\":%s,", t);
	}
	jp(&j, "\"files_live\":%d}", atomic_load(&m->live));
	if (j.overflow)
		return -ENOSPC;
	return (int)j.pos;
}
