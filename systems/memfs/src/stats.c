/* Per-mount counters, exported as JSON through /.memfs-stats. */
#include "stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_FUSEURING
#include "../../../tools/fuseuring/fuseuring.h"
#endif

memfs_counters S;
memfs_srv_counters *SS;
int64_t G_open_read, G_open_write;
static int64_t reset_time;

typedef struct { const char *group, *name; size_t off; } ctr_desc;
static const ctr_desc DESC[] = {
#define MEMFS_DESC(g, n) { #g, #n, offsetof(memfs_counters, g##_##n) },
    MEMFS_COUNTERS(MEMFS_DESC)
#undef MEMFS_DESC
};

void stats_init(void)
{
    SS = calloc((size_t)C.sl.n, sizeof *SS);
    reset_time = (int64_t)time(NULL);
}

void stats_reset(void)
{
    for (size_t i = 0; i < sizeof DESC / sizeof DESC[0]; i++)
        __atomic_store_n((uint64_t *)((char *)&S + DESC[i].off), 0, __ATOMIC_RELAXED);
    for (int i = 0; i < C.sl.n; i++) {
        __atomic_store_n(&SS[i].stripes_set, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&SS[i].stripes_get, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&SS[i].bytes_set, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&SS[i].bytes_get, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&SS[i].errors, 0, __ATOMIC_RELAXED);
    }
    reset_time = (int64_t)time(NULL);
}

typedef struct { char *b; size_t len, cap; } sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->b + s->len, s->cap - s->len, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (s->len + (size_t)n < s->cap) {
            s->len += (size_t)n;
            return;
        }
        s->cap = (s->cap + (size_t)n) * 2;
        s->b = realloc(s->b, s->cap);
    }
}

char *stats_json(size_t *len)
{
    sbuf s = { malloc(4096), 0, 4096 };
    char esc[1024];
    json_escape(esc, sizeof esc, C.mountpoint ? C.mountpoint : "");
    sb_printf(&s,
              "{\"schema\":\"memfs-stats/1\",\"policy\":\"%s\",\"mountpoint\":\"%s\","
              "\"local_server\":%d,\"distribution\":\"%s\",\"hash\":\"%s\",\"stripe_size\":%u,"
              "\"buffer_size\":%zu,\"threads\":%d,\"timeout_ms\":%d,"
              "\"time\":%" PRId64 ",\"since\":%" PRId64 ","
              "\"open_files\":{\"read\":%" PRId64 ",\"write\":%" PRId64 "},"
              "\"fuse\":{\"max_write\":%u,\"max_read\":%u,\"max_readahead\":%u,"
              "\"max_background\":%u,\"read_ahead_kb\":%d,\"readahead_option\":%zu,"
              "\"direct_io\":%d,\"writeback_cache\":%d,\"splice\":%d,\"keep_buffers\":%d}",
              C.policy == PLACE_LOCALITY ? "locality" : "symmetric", esc, C.local,
              dist_name(C.dist), C.dist == DIST_CONSISTENT ? "md5-ketama" : hash_name(C.hash), C.stripe_size, C.buffer_size, C.threads, C.timeout_ms,
              (int64_t)time(NULL), reset_time,
              __atomic_load_n(&G_open_read, __ATOMIC_RELAXED),
              __atomic_load_n(&G_open_write, __ATOMIC_RELAXED),
              C.fuse_max_write, C.fuse_max_read, C.fuse_max_readahead, C.fuse_max_background,
              C.fuse_read_ahead_kb, C.readahead, C.direct_io,
              C.writeback_cache == 2, C.splice == 2, C.keep_buffers);
    const char *cur = NULL;
    for (size_t i = 0; i < sizeof DESC / sizeof DESC[0]; i++) {
        if (!cur || strcmp(cur, DESC[i].group)) {
            sb_printf(&s, "%s,\"%s\":{", cur ? "}" : "", DESC[i].group);
            cur = DESC[i].group;
        } else {
            sb_printf(&s, ",");
        }
        sb_printf(&s, "\"%s\":%" PRIu64, DESC[i].name,
                  __atomic_load_n((uint64_t *)((char *)&S + DESC[i].off), __ATOMIC_RELAXED));
    }
    sb_printf(&s, "},\"per_server\":[");
    for (int i = 0; i < C.sl.n; i++) {
        json_escape(esc, sizeof esc, C.sl.spec[i]);
        sb_printf(&s,
                  "%s{\"index\":%d,\"server\":\"%s\",\"stripes_set\":%" PRIu64
                  ",\"stripes_get\":%" PRIu64 ",\"bytes_set\":%" PRIu64
                  ",\"bytes_get\":%" PRIu64 ",\"errors\":%" PRIu64 "}",
                  i ? "," : "", i, esc,
                  __atomic_load_n(&SS[i].stripes_set, __ATOMIC_RELAXED),
                  __atomic_load_n(&SS[i].stripes_get, __ATOMIC_RELAXED),
                  __atomic_load_n(&SS[i].bytes_set, __ATOMIC_RELAXED),
                  __atomic_load_n(&SS[i].bytes_get, __ATOMIC_RELAXED),
                  __atomic_load_n(&SS[i].errors, __ATOMIC_RELAXED));
    }
    /* the FUSE transport (--transport, issue 30): ring_reqs = requests served through io_uring,
     * dev_rw_reqs = READ/WRITE still read from /dev/fuse (0 when every one went through the ring) */
#ifdef HAVE_FUSEURING
    char tj[2048];
    fuseuring_json(NULL, tj, sizeof tj);
    sb_printf(&s, "],\"transport\":%s}\n", tj);
#else
    sb_printf(&s, "],\"transport\":{\"transport\":\"dev-fuse\",\"requested\":%d,\"ring_reqs\":0,"
                  "\"dev_rw_reqs\":0,\"message\":\"built without liburing\"}}\n", C.uring);
#endif
    *len = s.len;
    return s.b;
}
