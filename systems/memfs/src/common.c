/* MemFS shared core: see common.h. */
#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- servers */
int servers_parse(const char *s, server_list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!s || !*s) {
        snprintf(err, errlen, "empty server list");
        return -1;
    }
    char *dup = strdup(s), *save = NULL;
    int cap = 8;
    out->host = calloc(cap, sizeof(char *));
    out->port = calloc(cap, sizeof(int));
    out->spec = calloc(cap, sizeof(char *));
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        if (out->n == MEMFS_MAX_SERVERS) {
            snprintf(err, errlen, "too many servers (max %d)", MEMFS_MAX_SERVERS);
            goto fail;
        }
        if (out->n == cap) {
            cap *= 2;
            out->host = realloc(out->host, cap * sizeof(char *));
            out->port = realloc(out->port, cap * sizeof(int));
            out->spec = realloc(out->spec, cap * sizeof(char *));
        }
        char *colon = strrchr(tok, ':');
        long port = 11211;
        if (colon) {
            char *end;
            port = strtol(colon + 1, &end, 10);
            if (*end || port <= 0 || port > 65535) {
                snprintf(err, errlen, "bad port in server '%s'", tok);
                goto fail;
            }
            *colon = 0;
        }
        if (!*tok) {
            snprintf(err, errlen, "empty host in server list");
            goto fail;
        }
        out->host[out->n] = strdup(tok);
        out->port[out->n] = (int)port;
        char spec[300];
        snprintf(spec, sizeof spec, "%s:%ld", tok, port);
        out->spec[out->n] = strdup(spec);
        out->n++;
    }
    free(dup);
    if (out->n == 0) {
        snprintf(err, errlen, "empty server list");
        servers_free(out);
        return -1;
    }
    return 0;
fail:
    free(dup);
    servers_free(out);
    return -1;
}

void servers_free(server_list *sl)
{
    for (int i = 0; i < sl->n; i++) {
        free(sl->host[i]);
        free(sl->spec[i]);
    }
    free(sl->host);
    free(sl->port);
    free(sl->spec);
    memset(sl, 0, sizeof *sl);
}

int dist_parse(const char *s)
{
    if (!strcmp(s, "modula") || !strcmp(s, "modulo")) return DIST_MODULA;
    if (!strcmp(s, "consistent") || !strcmp(s, "ketama")) return DIST_CONSISTENT;
    return -1;
}

const char *dist_name(int d) { return d == DIST_CONSISTENT ? "consistent" : "modula"; }

static const struct { const char *name; memcached_hash_t h; } HASHES[] = {
    {"fnv1_32", MEMCACHED_HASH_FNV1_32},   {"fnv1a_32", MEMCACHED_HASH_FNV1A_32},
    {"fnv1_64", MEMCACHED_HASH_FNV1_64},   {"fnv1a_64", MEMCACHED_HASH_FNV1A_64},
    {"one_at_a_time", MEMCACHED_HASH_DEFAULT}, {"md5", MEMCACHED_HASH_MD5},
    {"crc", MEMCACHED_HASH_CRC},           {"murmur", MEMCACHED_HASH_MURMUR},
    {"jenkins", MEMCACHED_HASH_JENKINS},
};

int hash_parse(const char *s)
{
    for (size_t i = 0; i < sizeof HASHES / sizeof HASHES[0]; i++)
        if (!strcmp(s, HASHES[i].name)) return (int)HASHES[i].h;
    return -1;
}

const char *hash_name(int h)
{
    for (size_t i = 0; i < sizeof HASHES / sizeof HASHES[0]; i++)
        if ((int)HASHES[i].h == h) return HASHES[i].name;
    return "?";
}

memcached_st *mc_new(const server_list *sl, int idx, int dist, int hash, int timeout_ms)
{
    memcached_st *m = memcached_create(NULL);
    if (!m) return NULL;
    for (int i = 0; i < sl->n; i++) {
        if (idx >= 0 && i != idx) continue;
        if (memcached_server_add(m, sl->host[i], (in_port_t)sl->port[i]) != MEMCACHED_SUCCESS) {
            memcached_free(m);
            return NULL;
        }
    }
    if (timeout_ms < 1) timeout_ms = 1;
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_SUPPORT_CAS, 1);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, (uint64_t)timeout_ms);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, (uint64_t)timeout_ms);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_SND_TIMEOUT, (uint64_t)timeout_ms * 1000);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_RCV_TIMEOUT, (uint64_t)timeout_ms * 1000);
    /* A failed server is skipped (fast failure) for RETRY_TIMEOUT seconds,
     * then retried.  No auto-ejection: keys never move to another server
     * (a moved stripe would read as missing = EIO, never as wrong data). */
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, 1);
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_AUTO_EJECT_HOSTS, 0);
    if (idx < 0) {
        if (dist == DIST_CONSISTENT) {
            memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA, 1);
        } else {
            memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION, MEMCACHED_DISTRIBUTION_MODULA);
            memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, (uint64_t)hash);
        }
    }
    return m;
}

int mc_errno(memcached_return_t rc)
{
    switch (rc) {
    case MEMCACHED_SUCCESS:
    case MEMCACHED_STORED:
    case MEMCACHED_DELETED:
    case MEMCACHED_END:
        return 0;
    case MEMCACHED_NOTFOUND:
        return ENOENT;
    case MEMCACHED_DATA_EXISTS:
    case MEMCACHED_NOTSTORED:
        return EEXIST;
    case MEMCACHED_SERVER_MEMORY_ALLOCATION_FAILURE:
        return ENOSPC;
    case MEMCACHED_E2BIG:
        return EFBIG;
    default:
        return EIO;
    }
}

memcached_return_t mc_gets(memcached_st *m, const char *key, size_t klen,
                           char **val, size_t *vlen, uint32_t *flags,
                           uint64_t *cas)
{
    const char *keys[1] = { key };
    size_t lens[1] = { klen };
    *val = NULL;
    *vlen = 0;
    memcached_return_t rc = memcached_mget(m, keys, lens, 1);
    if (rc != MEMCACHED_SUCCESS) return rc;
    memcached_result_st res;
    if (!memcached_result_create(m, &res)) return MEMCACHED_MEMORY_ALLOCATION_FAILURE;
    memcached_return_t frc;
    memcached_result_st *r = memcached_fetch_result(m, &res, &frc);
    if (r) {
        size_t l = memcached_result_length(r);
        char *v = malloc(l + 1);
        if (!v) {
            rc = MEMCACHED_MEMORY_ALLOCATION_FAILURE;
        } else {
            memcpy(v, memcached_result_value(r), l);
            v[l] = 0;
            *val = v;
            *vlen = l;
            if (flags) *flags = memcached_result_flags(r);
            if (cas) *cas = memcached_result_cas(r);
            rc = MEMCACHED_SUCCESS;
        }
        /* drain the END marker */
        memcached_return_t drc;
        while (memcached_fetch_result(m, &res, &drc)) {}
    } else {
        rc = (frc == MEMCACHED_END || frc == MEMCACHED_NOTFOUND || frc == MEMCACHED_SUCCESS)
                 ? MEMCACHED_NOTFOUND : frc;
    }
    memcached_result_free(&res);
    return rc;
}

/* ------------------------------------------------------------------ sha256 */
static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22);
        uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void sha256(const void *data, size_t len, uint8_t out[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t left = len;
    while (left >= 64) {
        sha256_block(h, p);
        p += 64;
        left -= 64;
    }
    uint8_t tail[128] = {0};
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t tl = left < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tl == 128) sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ------------------------------------------------------------------ keys */
size_t key_epath(char *out, size_t cap, const char *path)
{
    static const char hx[] = "0123456789abcdef";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p > 0x20 && *p < 0x7f && *p != '%') {
            if (o + 1 > MEMFS_PATH_KEY_MAX) goto hashed;
            out[o++] = (char)*p;
        } else {
            if (o + 3 > MEMFS_PATH_KEY_MAX) goto hashed;
            out[o++] = '%';
            out[o++] = hx[*p >> 4];
            out[o++] = hx[*p & 15];
        }
    }
    if (o >= cap) return 0;
    out[o] = 0;
    return o;
hashed: {
        uint8_t d[32];
        sha256(path, strlen(path), d);
        if (cap < 42) return 0;
        out[0] = '~';
        for (int i = 0; i < 20; i++) {
            out[1 + 2 * i] = hx[d[i] >> 4];
            out[2 + 2 * i] = hx[d[i] & 15];
        }
        out[41] = 0;
        return 41;
    }
}

static size_t key_prefixed(char *out, size_t cap, char prefix, const char *path)
{
    if (cap < 2) return 0;
    out[0] = prefix;
    size_t l = key_epath(out + 1, cap - 1, path);
    return l ? l + 1 : 0;
}

size_t key_meta(char *out, size_t cap, const char *path) { return key_prefixed(out, cap, 'M', path); }
size_t key_dir(char *out, size_t cap, const char *path) { return key_prefixed(out, cap, 'D', path); }

size_t key_stripe_base(char *out, size_t cap, const char *path, uint64_t gen)
{
    size_t l = key_prefixed(out, cap, 'S', path);
    if (!l) return 0;
    int n = snprintf(out + l, cap - l, "#%016" PRIx64, gen);
    if (n < 0 || (size_t)n >= cap - l) return 0;
    return l + (size_t)n;
}

size_t key_stripe(char *out, size_t cap, const char *base, uint64_t n)
{
    int r = snprintf(out, cap, "%s.%" PRIu64, base, n);
    if (r < 0 || (size_t)r >= cap || r > MEMFS_KEY_MAX) return 0;
    return (size_t)r;
}

/* --------------------------------------------------------------- records */
int rec_format(const memfs_rec *r, char *out, size_t cap)
{
    int n;
    if (r->type == 'd') {
        n = snprintf(out, cap, "v=1 t=d m=%o u=%u gid=%u mt=%" PRId64 ".%09ld",
                     r->mode, r->uid, r->gid, r->mt_sec, r->mt_nsec);
    } else {
        char own[MEMFS_MAX_OWNERS * 6 + 2] = "";
        size_t o = 0;
        for (int i = 0; i < r->nown; i++)
            o += (size_t)snprintf(own + o, sizeof own - o, "%s%d", i ? "," : "", r->own[i]);
        if (!r->nown) strcpy(own, "-");
        n = snprintf(out, cap,
                     "v=1 t=f st=%c sz=%" PRIu64 " ss=%u g=%016" PRIx64
                     " m=%o u=%u gid=%u mt=%" PRId64 ".%09ld p=%c own=%s b=%s",
                     r->state, r->size, r->ss, r->gen, r->mode, r->uid, r->gid,
                     r->mt_sec, r->mt_nsec, r->place, own, r->base);
    }
    if (n < 0 || (size_t)n >= cap) return -1;
    return n;
}

int rec_parse(const char *s, size_t len, memfs_rec *r)
{
    memset(r, 0, sizeof *r);
    r->state = 'c';
    r->place = PLACE_SYMMETRIC;
    if (len >= MEMFS_REC_MAX) return -1;
    char buf[MEMFS_REC_MAX];
    memcpy(buf, s, len);
    buf[len] = 0;
    if (strlen(buf) != len) return -1;
    char *save = NULL;
    int have_type = 0;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        if (!strcmp(k, "t")) { r->type = v[0]; have_type = 1; }
        else if (!strcmp(k, "st")) r->state = v[0];
        else if (!strcmp(k, "sz")) r->size = strtoull(v, NULL, 10);
        else if (!strcmp(k, "ss")) r->ss = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "g")) r->gen = strtoull(v, NULL, 16);
        else if (!strcmp(k, "m")) r->mode = (uint32_t)strtoul(v, NULL, 8);
        else if (!strcmp(k, "u")) r->uid = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "gid")) r->gid = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "mt")) {
            char *dot;
            r->mt_sec = strtoll(v, &dot, 10);
            if (*dot == '.') r->mt_nsec = strtol(dot + 1, NULL, 10);
        } else if (!strcmp(k, "p")) r->place = v[0];
        else if (!strcmp(k, "own")) {
            r->nown = 0;
            if (strcmp(v, "-")) {
                const char *p = v;
                while (*p && r->nown < MEMFS_MAX_OWNERS) {
                    char *end;
                    long x = strtol(p, &end, 10);
                    if (end == p) break;
                    r->own[r->nown++] = (int)x;
                    p = *end == ',' ? end + 1 : end;
                }
            }
        } else if (!strcmp(k, "b")) {
            if (strlen(v) > MEMFS_KEY_MAX) return -1;
            strcpy(r->base, v);
        }
    }
    if (!have_type || (r->type != 'f' && r->type != 'd')) return -1;
    if (r->type == 'f' && (r->ss == 0 || !r->base[0])) return -1;
    return 0;
}

int rec_has_owner(const memfs_rec *r, int idx)
{
    for (int i = 0; i < r->nown; i++)
        if (r->own[i] == idx) return 1;
    return 0;
}

uint64_t rec_nstripes(const memfs_rec *r)
{
    return r->ss ? (r->size + r->ss - 1) / r->ss : 0;
}

uint64_t rec_stripe_len(const memfs_rec *r, uint64_t n)
{
    uint64_t off = n * r->ss;
    if (off >= r->size) return 0;
    uint64_t l = r->size - off;
    return l < r->ss ? l : r->ss;
}

/* ---------------------------------------------------------- directory log */
typedef struct { const char *name; size_t len; char type; int live; } dl_ent;

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

int dirlog_fold(const char *buf, size_t len, dirlog_view *v)
{
    memset(v, 0, sizeof *v);
    size_t cnt = 0;
    for (size_t i = 0; i < len; i++)
        if (buf[i] == 0) cnt++;
    dl_ent *ents = calloc(cnt + 1, sizeof *ents);
    size_t hcap = 16;
    while (hcap < 2 * cnt + 2) hcap <<= 1;
    int64_t *ht = malloc(hcap * sizeof *ht);
    if (!ents || !ht) {
        free(ents);
        free(ht);
        return -1;
    }
    for (size_t i = 0; i < hcap; i++) ht[i] = -1;
    size_t ne = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        if (!nul) break; /* partial record: cannot happen with atomic appends */
        char t = p[0];
        const char *name = p + 1;
        size_t nl = (size_t)(nul - name);
        p = nul + 1;
        v->total++;
        if (t == 'T') { /* tombstone: directory is being removed */
            free(ents);
            free(ht);
            v->total = (size_t)-1;
            return 0;
        }
        if (nl == 0 || (t != 'f' && t != 'd' && t != 'x')) continue;
        size_t h = fnv1a(name, nl) & (hcap - 1);
        while (ht[h] >= 0) {
            dl_ent *e = &ents[ht[h]];
            if (e->len == nl && !memcmp(e->name, name, nl)) break;
            h = (h + 1) & (hcap - 1);
        }
        if (t == 'x') {
            if (ht[h] >= 0) ents[ht[h]].live = 0;
            continue;
        }
        if (ht[h] >= 0 && ents[ht[h]].live) {
            ents[ht[h]].type = t;
            continue;
        }
        ents[ne] = (dl_ent){ name, nl, t, 1 };
        ht[h] = (int64_t)ne++;
    }
    v->e = calloc(ne + 1, sizeof *v->e);
    if (!v->e) {
        free(ents);
        free(ht);
        return -1;
    }
    for (size_t i = 0; i < ne; i++)
        if (ents[i].live) v->e[v->n++] = (dirent_live){ ents[i].name, ents[i].type };
    free(ents);
    free(ht);
    return 0;
}

void dirlog_free(dirlog_view *v)
{
    free(v->e);
    memset(v, 0, sizeof *v);
}

char *dirlog_compact(const dirlog_view *v, size_t *outlen)
{
    size_t l = 0;
    for (size_t i = 0; i < v->n; i++) l += strlen(v->e[i].name) + 2;
    char *b = malloc(l + 1), *p = b;
    if (!b) return NULL;
    for (size_t i = 0; i < v->n; i++) {
        size_t nl = strlen(v->e[i].name);
        *p++ = v->e[i].type;
        memcpy(p, v->e[i].name, nl);
        p += nl;
        *p++ = 0;
    }
    *outlen = l;
    return b;
}

/* ---------------------------------------------------------------- misc */
uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t random_u64(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != sizeof x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40);
    }
    return x ? x : 1;
}

int path_split(const char *path, char *parent, size_t pcap, const char **name)
{
    const char *slash = strrchr(path, '/');
    if (!slash || !slash[1]) return -1;
    size_t pl = (size_t)(slash - path);
    if (pl == 0) pl = 1; /* parent is root */
    if (pl >= pcap) return -1;
    memcpy(parent, path, pl);
    parent[pl] = 0;
    *name = slash + 1;
    return 0;
}

size_t json_escape(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char tmp[8];
        const char *w = tmp;
        size_t wl;
        if (*p == '"') w = "\\\"";
        else if (*p == '\\') w = "\\\\";
        else if (*p < 0x20) snprintf(tmp, sizeof tmp, "\\u%04x", *p);
        else { tmp[0] = (char)*p; tmp[1] = 0; }
        wl = strlen(w);
        if (o + wl + 1 > cap) return 0;
        memcpy(out + o, w, wl);
        o += wl;
    }
    out[o] = 0;
    return o;
}

/* ---------------------------------------------------------------- layout */
int layout_count(memcached_st *all, const server_list *sl, const memfs_rec *r,
                 uint64_t *per_server)
{
    memset(per_server, 0, (size_t)sl->n * sizeof *per_server);
    uint64_t ns = rec_nstripes(r);
    if (r->place == PLACE_LOCALITY) {
        for (int i = 0; i < r->nown; i++)
            if (r->own[i] >= 0 && r->own[i] < sl->n) per_server[r->own[i]] = ns;
    } else {
        char key[MEMFS_KEY_MAX + 8];
        for (uint64_t n = 0; n < ns; n++) {
            size_t kl = key_stripe(key, sizeof key, r->base, n);
            if (!kl) break;
            uint32_t idx = memcached_generate_hash(all, key, kl);
            if ((int)idx < sl->n) per_server[idx]++;
        }
    }
    int k = 0;
    for (int i = 0; i < sl->n; i++) k += per_server[i] > 0;
    return k;
}

char *layout_owners(memcached_st *all, const server_list *sl, const memfs_rec *r,
                    int as_specs)
{
    uint64_t *cnt = calloc((size_t)sl->n, sizeof *cnt);
    layout_count(all, sl, r, cnt);
    size_t cap = 16;
    for (int i = 0; i < sl->n; i++) cap += strlen(sl->spec[i]) + 12;
    char *out = malloc(cap);
    size_t o = 0;
    out[0] = 0;
    int first = 1;
    if (r->place == PLACE_LOCALITY) { /* owner order = replication order */
        for (int i = 0; i < r->nown; i++) {
            int x = r->own[i];
            if (x < 0 || x >= sl->n) continue;
            o += (size_t)snprintf(out + o, cap - o, "%s", first ? "" : ",");
            if (as_specs) o += (size_t)snprintf(out + o, cap - o, "%s", sl->spec[x]);
            else o += (size_t)snprintf(out + o, cap - o, "%d", x);
            first = 0;
        }
    } else {
        for (int i = 0; i < sl->n; i++) {
            if (!cnt[i]) continue;
            o += (size_t)snprintf(out + o, cap - o, "%s", first ? "" : ",");
            if (as_specs) o += (size_t)snprintf(out + o, cap - o, "%s", sl->spec[i]);
            else o += (size_t)snprintf(out + o, cap - o, "%d", i);
            first = 0;
        }
    }
    free(cnt);
    return out;
}

char *layout_json(memcached_st *all, const server_list *sl, const char *path,
                  const memfs_rec *r)
{
    uint64_t *cnt = calloc((size_t)sl->n, sizeof *cnt);
    layout_count(all, sl, r, cnt);
    size_t cap = 1024 + strlen(path) * 6;
    for (int i = 0; i < sl->n; i++) cap += strlen(sl->spec[i]) * 6 + 64;
    char *out = malloc(cap), *esc = malloc(strlen(path) * 6 + 1);
    json_escape(esc, strlen(path) * 6 + 1, path);
    size_t o = 0;
    if (r->type == 'd') {
        o += (size_t)snprintf(out + o, cap - o, "{\"path\":\"%s\",\"type\":\"directory\"}", esc);
        free(esc);
        free(cnt);
        return out;
    }
    o += (size_t)snprintf(out + o, cap - o,
                          "{\"path\":\"%s\",\"type\":\"file\",\"state\":\"%s\",\"size\":%" PRIu64
                          ",\"stripe_size\":%u,\"stripes\":%" PRIu64
                          ",\"placement\":\"%s\",\"gen\":\"%016" PRIx64 "\",\"key_base\":\"%s\","
                          "\"owners\":[",
                          esc, r->state == 'c' ? "complete" : "writing", r->size, r->ss,
                          rec_nstripes(r), r->place == PLACE_LOCALITY ? "locality" : "symmetric",
                          r->gen, r->base);
    free(esc);
    char *own = layout_owners(all, sl, r, 0);
    o += (size_t)snprintf(out + o, cap - o, "%s],\"owner_servers\":[", own);
    free(own);
    int first = 1;
    if (r->place == PLACE_LOCALITY) {
        for (int i = 0; i < r->nown; i++)
            if (r->own[i] >= 0 && r->own[i] < sl->n) {
                o += (size_t)snprintf(out + o, cap - o, "%s\"%s\"", first ? "" : ",",
                                      sl->spec[r->own[i]]);
                first = 0;
            }
    } else {
        for (int i = 0; i < sl->n; i++)
            if (cnt[i]) {
                o += (size_t)snprintf(out + o, cap - o, "%s\"%s\"", first ? "" : ",",
                                      sl->spec[i]);
                first = 0;
            }
    }
    o += (size_t)snprintf(out + o, cap - o, "],\"stripes_per_server\":[");
    for (int i = 0; i < sl->n; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%" PRIu64, i ? "," : "", cnt[i]);
    snprintf(out + o, cap - o, "]}");
    free(cnt);
    return out;
}
