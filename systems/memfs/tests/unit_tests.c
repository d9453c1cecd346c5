/* Unit tests of the MemFS core (no servers needed): SHA-256, key layout,
 * metadata records, directory-log folding, helpers. */
#include "../src/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, checks;
#define CHECK(c)                                                           \
    do {                                                                   \
        checks++;                                                          \
        if (!(c)) {                                                        \
            fails++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
        }                                                                  \
    } while (0)

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha256(void)
{
    uint8_t d[32];
    char h[65];
    sha256("", 0, d);
    hex(d, 32, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    sha256("abc", 3, d);
    hex(d, 32, h);
    CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256(m, strlen(m), d);
    hex(d, 32, h);
    CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    char *big = malloc(1000000);
    memset(big, 'a', 1000000);
    sha256(big, 1000000, d);
    hex(d, 32, h);
    CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    free(big);
}

static int key_ok(const char *k, size_t l)
{
    if (l == 0 || l > MEMFS_KEY_MAX || strlen(k) != l) return 0;
    for (size_t i = 0; i < l; i++)
        if ((unsigned char)k[i] <= 0x20 || (unsigned char)k[i] >= 0x7f) return 0;
    return 1;
}

static void test_keys(void)
{
    char k[MEMFS_KEY_MAX + 8], base[MEMFS_KEY_MAX + 8];
    size_t l = key_meta(k, sizeof k, "/a/b.txt");
    CHECK(l == 9 && !strcmp(k, "M/a/b.txt"));
    l = key_dir(k, sizeof k, "/");
    CHECK(l == 2 && !strcmp(k, "D/"));
    l = key_meta(k, sizeof k, "/with space/%x\n\xc3\xa9");
    CHECK(!strcmp(k, "M/with%20space/%25x%0a%c3%a9") && key_ok(k, l));
    l = key_stripe_base(base, sizeof base, "/a", 0x1234);
    CHECK(!strcmp(base, "S/a#0000000000001234"));
    l = key_stripe(k, sizeof k, base, 17);
    CHECK(!strcmp(k, "S/a#0000000000001234.17") && key_ok(k, l));
    /* long paths are hashed; different long paths give different keys */
    char p1[4000], p2[4000];
    memset(p1, 'x', sizeof p1);
    p1[0] = '/';
    p1[3999] = 0;
    strcpy(p2, p1);
    p2[3000] = 'y';
    char k1[MEMFS_KEY_MAX + 8], k2[MEMFS_KEY_MAX + 8];
    size_t l1 = key_meta(k1, sizeof k1, p1), l2 = key_meta(k2, sizeof k2, p2);
    CHECK(key_ok(k1, l1) && key_ok(k2, l2) && strcmp(k1, k2) && k1[1] == '~');
    l = key_stripe_base(base, sizeof base, p1, UINT64_MAX);
    l = key_stripe(k, sizeof k, base, UINT64_MAX);
    CHECK(key_ok(k, l));
    /* worst case below the hashing threshold: 200 chars of epath */
    char p3[201];
    memset(p3, 'z', 200);
    p3[0] = '/';
    p3[200] = 0;
    l = key_stripe_base(base, sizeof base, p3, 1);
    l = key_stripe(k, sizeof k, base, UINT64_MAX);
    CHECK(key_ok(k, l));
    /* 67 non-ASCII bytes encode to 201 chars -> hashed */
    char p4[80] = "/";
    memset(p4 + 1, '\xff', 67);
    p4[68] = 0;
    l = key_meta(k, sizeof k, p4);
    CHECK(k[1] == '~' && key_ok(k, l));
}

static void test_records(void)
{
    memfs_rec r, q;
    memset(&r, 0, sizeof r);
    r.type = 'f';
    r.state = 'w';
    r.size = 123456789012ULL;
    r.ss = 524288;
    r.gen = 0xdeadbeefcafef00dULL;
    r.mode = 0100644;
    r.uid = 1000;
    r.gid = 100;
    r.mt_sec = 1700000000;
    r.mt_nsec = 123456789;
    r.place = PLACE_LOCALITY;
    r.nown = 2;
    r.own[0] = 3;
    r.own[1] = 0;
    strcpy(r.base, "S/x#deadbeefcafef00d");
    char buf[MEMFS_REC_MAX];
    int l = rec_format(&r, buf, sizeof buf);
    CHECK(l > 0);
    CHECK(rec_parse(buf, (size_t)l, &q) == 0);
    CHECK(q.type == 'f' && q.state == 'w' && q.size == r.size && q.ss == r.ss && q.gen == r.gen);
    CHECK(q.mode == r.mode && q.uid == 1000 && q.gid == 100 && q.mt_sec == r.mt_sec &&
          q.mt_nsec == r.mt_nsec);
    CHECK(q.place == PLACE_LOCALITY && q.nown == 2 && q.own[0] == 3 && q.own[1] == 0);
    CHECK(!strcmp(q.base, r.base) && rec_has_owner(&q, 3) && !rec_has_owner(&q, 1));
    r.nown = 0;
    r.place = PLACE_SYMMETRIC;
    l = rec_format(&r, buf, sizeof buf);
    CHECK(rec_parse(buf, (size_t)l, &q) == 0 && q.nown == 0 && q.place == 's');
    memset(&r, 0, sizeof r);
    r.type = 'd';
    r.mode = 040755;
    l = rec_format(&r, buf, sizeof buf);
    CHECK(rec_parse(buf, (size_t)l, &q) == 0 && q.type == 'd' && q.mode == 040755);
    CHECK(rec_parse("", 0, &q) == -1);
    CHECK(rec_parse("garbage", 7, &q) == -1);
    CHECK(rec_parse("v=1 t=f sz=3", 12, &q) == -1); /* no stripe size/base */
    /* stripe arithmetic */
    memset(&r, 0, sizeof r);
    r.ss = 10;
    r.size = 0;
    CHECK(rec_nstripes(&r) == 0);
    r.size = 1;
    CHECK(rec_nstripes(&r) == 1 && rec_stripe_len(&r, 0) == 1);
    r.size = 10;
    CHECK(rec_nstripes(&r) == 1 && rec_stripe_len(&r, 0) == 10 && rec_stripe_len(&r, 1) == 0);
    r.size = 11;
    CHECK(rec_nstripes(&r) == 2 && rec_stripe_len(&r, 1) == 1);
}

static void test_dirlog(void)
{
    const char log[] = "fa\0fb\0dsub\0xa\0fc\0fa\0xc\0";
    dirlog_view v;
    CHECK(dirlog_fold(log, sizeof log - 1, &v) == 0);
    CHECK(v.total == 7 && v.n == 3);
    CHECK(v.n == 3 && !strcmp(v.e[0].name, "b") && !strcmp(v.e[1].name, "sub") &&
          v.e[1].type == 'd' && !strcmp(v.e[2].name, "a"));
    size_t cl;
    char *c = dirlog_compact(&v, &cl);
    CHECK(cl == 11 && !memcmp(c, "fb\0dsub\0fa\0", 11));
    dirlog_free(&v);
    dirlog_view w;
    CHECK(dirlog_fold(c, cl, &w) == 0 && w.n == 3 && w.total == 3);
    dirlog_free(&w);
    free(c);
    CHECK(dirlog_fold("", 0, &v) == 0 && v.n == 0 && v.total == 0);
    dirlog_free(&v);
    CHECK(dirlog_fold("fa\0T\0", 5, &v) == 0 && v.total == (size_t)-1);
    dirlog_free(&v);
    /* many entries (hash table growth, O(n) folding) */
    size_t n = 20000, cap = n * 16, o = 0;
    char *big = malloc(cap);
    for (size_t i = 0; i < n; i++) o += (size_t)sprintf(big + o, "ff%zu", i) + 1;
    for (size_t i = 0; i < n; i += 2) o += (size_t)sprintf(big + o, "xf%zu", i) + 1;
    CHECK(dirlog_fold(big, o, &v) == 0 && v.n == n / 2 && !strcmp(v.e[0].name, "f1"));
    dirlog_free(&v);
    free(big);
}

static void test_misc(void)
{
    char parent[256];
    const char *name;
    CHECK(path_split("/a/b/c", parent, sizeof parent, &name) == 0 && !strcmp(parent, "/a/b") &&
          !strcmp(name, "c"));
    CHECK(path_split("/x", parent, sizeof parent, &name) == 0 && !strcmp(parent, "/") &&
          !strcmp(name, "x"));
    CHECK(path_split("/", parent, sizeof parent, &name) == -1);
    server_list sl;
    char err[128];
    CHECK(servers_parse("127.0.0.1:11211,localhost:5,h", &sl, err, sizeof err) == 0);
    CHECK(sl.n == 3 && sl.port[0] == 11211 && sl.port[1] == 5 && sl.port[2] == 11211 &&
          !strcmp(sl.host[1], "localhost") && !strcmp(sl.spec[2], "h:11211"));
    servers_free(&sl);
    CHECK(servers_parse("h:0", &sl, err, sizeof err) == -1);
    CHECK(servers_parse("", &sl, err, sizeof err) == -1);
    CHECK(dist_parse("modula") == DIST_MODULA && dist_parse("consistent") == DIST_CONSISTENT &&
          dist_parse("x") == -1);
    char j[64];
    json_escape(j, sizeof j, "a\"b\\c\n");
    CHECK(!strcmp(j, "a\\\"b\\\\c\\u000a"));
    CHECK(random_u64() != random_u64());
}

int main(void)
{
    test_sha256();
    test_keys();
    test_records();
    test_dirlog();
    test_misc();
    printf("unit_tests: %d checks, %d failed\n", checks, fails);
    return fails ? 1 : 0;
}
