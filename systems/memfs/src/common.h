/* MemFS shared core: server list, key layout, metadata records, directory
 * logs and libmemcached helpers.  Used by memfs, memfs-locate and the unit
 * tests.  See ../README.md for the design. */
#ifndef MEMFS_COMMON_H
#define MEMFS_COMMON_H

#define _GNU_SOURCE
#include <libmemcached/memcached.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MEMFS_KEY_MAX        250  /* memcached's key length limit          */
#define MEMFS_PATH_KEY_MAX   200  /* encoded paths longer than this: hashed */
#define MEMFS_MAX_SERVERS    1024
#define MEMFS_MAX_OWNERS     64
#define MEMFS_REC_MAX        1024 /* max length of a metadata record       */
#define MEMFS_STATS_NAME     ".memfs-stats"
#define MEMFS_STATS_PATH     "/" MEMFS_STATS_NAME

/* ---------------------------------------------------------------- servers */
typedef struct {
    int    n;
    char **host;     /* host names, as given                    */
    int   *port;
    char **spec;     /* "host:port", for messages and JSON       */
} server_list;

/* Parse "h:p,h:p,..." (port defaults to 11211).  Returns 0 or -1 (msg set). */
int  servers_parse(const char *s, server_list *out, char *err, size_t errlen);
void servers_free(server_list *sl);

enum { DIST_MODULA = 0, DIST_CONSISTENT = 1 };
int  dist_parse(const char *s); /* -1 on error */
const char *dist_name(int d);

/* Key hash used with the modula distribution.  Default fnv1_32: consecutive
 * stripe keys then go round-robin-like over the servers (measured: max
 * excess over a perfect split of a 256-stripe file is <= 1 stripe for 2 and
 * 4 servers), whereas libmemcached's default one-at-a-time hash skews badly
 * (e.g. 65/77/113 stripes on 3 servers).  Consistent hashing uses ketama
 * (MD5) and ignores this setting. */
#define MEMFS_HASH_DEFAULT MEMCACHED_HASH_FNV1_32
int  hash_parse(const char *s); /* memcached_hash_t, or -1 */
const char *hash_name(int h);

/* A memcached_st on all servers (with the given distribution and key hash)
 * or on one server only (idx >= 0), configured with bounded timeouts. */
memcached_st *mc_new(const server_list *sl, int idx, int dist, int hash, int timeout_ms);

/* memcached return code -> errno (0 on success). */
int mc_errno(memcached_return_t rc);

/* get with CAS.  *val is malloc'd (NUL-terminated, may contain NULs);
 * returns a memcached_return_t. */
memcached_return_t mc_gets(memcached_st *m, const char *key, size_t klen,
                           char **val, size_t *vlen, uint32_t *flags,
                           uint64_t *cas);

/* ------------------------------------------------------------------ keys */
/* Key layout (all keys are printable ASCII without spaces):
 *   M<epath>            inode record of a file or directory
 *   D<epath>            append-only entry log of a directory
 *   S<epath>#<gen>.<n>  stripe n of file generation <gen> (16 hex digits)
 * <epath> is the absolute path with bytes outside 0x21..0x7e and '%'
 * percent-encoded; if that is longer than MEMFS_PATH_KEY_MAX it is replaced
 * by "~" + 40 hex digits of SHA-256(path). */
size_t key_epath(char *out, size_t cap, const char *path); /* 0 on overflow */
size_t key_meta(char *out, size_t cap, const char *path);
size_t key_dir(char *out, size_t cap, const char *path);
size_t key_stripe_base(char *out, size_t cap, const char *path, uint64_t gen);
size_t key_stripe(char *out, size_t cap, const char *base, uint64_t n);

void sha256(const void *data, size_t len, uint8_t out[32]);

/* --------------------------------------------------------------- records */
enum { PLACE_SYMMETRIC = 's', PLACE_LOCALITY = 'l' };

typedef struct {
    char     type;        /* 'f' file, 'd' directory                     */
    char     state;       /* 'w' being written (never flushed), 'c' size set */
    char     place;       /* PLACE_SYMMETRIC / PLACE_LOCALITY            */
    uint64_t size;
    uint32_t ss;          /* stripe size                                 */
    uint64_t gen;         /* random file generation                      */
    uint32_t mode;        /* full st_mode                                */
    uint32_t uid, gid;
    int64_t  mt_sec;
    long     mt_nsec;
    int      nown;        /* owners (locality placement): server indexes */
    int      own[MEMFS_MAX_OWNERS];
    char     base[MEMFS_KEY_MAX + 1]; /* stripe key base                */
} memfs_rec;

int  rec_format(const memfs_rec *r, char *out, size_t cap); /* len or -1 */
int  rec_parse(const char *s, size_t len, memfs_rec *r);     /* 0 or -1   */
int  rec_has_owner(const memfs_rec *r, int idx);
uint64_t rec_nstripes(const memfs_rec *r);
uint64_t rec_stripe_len(const memfs_rec *r, uint64_t n);

/* ---------------------------------------------------------- directory log */
/* The value of D<path> is a sequence of entries "<t><name>\0" with t = 'f'
 * (file added), 'd' (directory added) or 'x' (name removed).  Entries are
 * only ever appended (memcached append is atomic); readers fold the log. */
typedef struct { const char *name; char type; } dirent_live;
typedef struct {
    dirent_live *e;
    size_t       n;       /* live entries, in first-added order           */
    size_t       total;   /* log records (adds + removes)                 */
} dirlog_view;

/* Fold a log.  Names point into buf (which must stay alive).  0 or -1. */
int  dirlog_fold(const char *buf, size_t len, dirlog_view *v);
void dirlog_free(dirlog_view *v);
/* Serialise the live entries of v (compaction); returns malloc'd buffer. */
char *dirlog_compact(const dirlog_view *v, size_t *outlen);

/* ---------------------------------------------------------------- layout */
/* Stripes per server for a file (array of sl->n counters).  Symmetric
 * placement: computed with the client's hash distribution; locality: every
 * owner holds every stripe.  Returns the number of servers holding data. */
int layout_count(memcached_st *all, const server_list *sl, const memfs_rec *r,
                 uint64_t *per_server);
/* JSON description of a file's placement (malloc'd, no trailing newline). */
char *layout_json(memcached_st *all, const server_list *sl, const char *path,
                  const memfs_rec *r);
/* Comma-separated owner indexes ("0,2"); malloc'd. */
char *layout_owners(memcached_st *all, const server_list *sl, const memfs_rec *r,
                    int as_specs);

/* ---------------------------------------------------------------- misc */
uint64_t now_ns(void);
uint64_t random_u64(void);
/* Split "/a/b/c" into parent "/a/b" and name "c" (parent of "/x" is "/"). */
int path_split(const char *path, char *parent, size_t pcap, const char **name);
/* Minimal JSON string escaping into out; returns length or 0 on overflow. */
size_t json_escape(char *out, size_t cap, const char *s);

#endif
