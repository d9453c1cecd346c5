/* mcbench: raw libmemcached set/get bandwidth with N threads over a server
 * list -- the ceiling MemFS is compared against.  Prints one JSON line per
 * operation on stdout; on stderr, for every operation that had failures,
 * what failed: the operation, how many of how many, and per distinct error
 * (libmemcached's return code and server) the count and the first message
 * (memcached_last_error_message). */
#include "common.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One distinct failure (return code x server) of a worker, with its first message. */
#define MAX_ERR_KINDS 8
typedef struct {
    memcached_return_t rc;
    char     server[96];   /* host:port the key maps to */
    char     msg[320];     /* the first message of this kind */
    uint64_t count;
} err_kind;

typedef struct {
    int      id;
    memcached_st *m;
    int      op;        /* 0 set, 1 get */
    uint64_t ops_target; /* 0: time-bound */
    uint64_t ops, errors, bytes;
    uint64_t prep_errors; /* populate (get) failures, untimed */
    int      nkinds;
    uint64_t other_kinds; /* failures beyond MAX_ERR_KINDS distinct kinds */
    err_kind kinds[MAX_ERR_KINDS];
    char    *value;
} worker;

static server_list SL;
static int DIST, HASH = MEMFS_HASH_DEFAULT, TIMEOUT = 2000, KEYS = 16;
static size_t VSIZE = 524288;
static double SECONDS = 5;
static pthread_barrier_t BAR;
static volatile int STOP;

static char HOST[64];
static uint32_t NONCE;

/* Every process's keys are its own: the host name, the PID and a random nonce are in the key.
 * mcbench processes on several nodes at once against the same servers (memfs limit runs) can have
 * the same PID -- each in a PID namespace of its own (a container instance) or on hosts of their
 * own -- and with keys of PID and thread alone one process's end-of-phase delete removed the keys
 * another was still reading (NOT FOUND on get; the limit run failed with "mcbench exited 1"). */
static size_t mkkey(char *k, size_t cap, int tid, uint64_t i)
{
    return (size_t)snprintf(k, cap, "mcbench:%s:%d:%08x:%d:%" PRIu64, HOST, (int)getpid(), NONCE, tid,
                            i % (uint64_t)KEYS);
}

/* libmemcached's last error message of m (without its leading "(0x...) " handle address), or
 * memcached_strerror(rc) where m holds no error (a server reply such as ITEM TOO BIG). */
static const char *error_text(memcached_st *m, memcached_return_t rc)
{
    const char *last = memcached_last_error(m) != MEMCACHED_SUCCESS ? memcached_last_error_message(m) : NULL;
    if (!last || !*last) return memcached_strerror(m, rc);
    if (last[0] == '(' && last[1] == '0' && last[2] == 'x') {
        const char *p = strstr(last, ") ");
        if (p) last = p + 2;
    }
    return last;
}

/* Count a failed operation of worker w on key (its kind: rc x server), keeping the first message. */
static void note_error(worker *w, const char *key, size_t kl, memcached_return_t rc, const char *detail)
{
    char server[96] = "?";
    memcached_return_t src;
    const memcached_instance_st *in = memcached_server_by_key(w->m, key, kl, &src);
    if (in) snprintf(server, sizeof server, "%s:%u", memcached_server_name(in), (unsigned)memcached_server_port(in));
    for (int i = 0; i < w->nkinds; i++) {
        if (w->kinds[i].rc == rc && !strcmp(w->kinds[i].server, server)) {
            w->kinds[i].count++;
            return;
        }
    }
    if (w->nkinds == MAX_ERR_KINDS) {
        w->other_kinds++;
        return;
    }
    err_kind *e = &w->kinds[w->nkinds++];
    e->rc = rc;
    e->count = 1;
    snprintf(e->server, sizeof e->server, "%s", server);
    if (detail) snprintf(e->msg, sizeof e->msg, "%s", detail);
    else snprintf(e->msg, sizeof e->msg, "%s", error_text(w->m, rc));
}

static void *run(void *arg)
{
    worker *w = arg;
    char key[160];
    pthread_barrier_wait(&BAR);
    for (uint64_t i = 0; !STOP && (!w->ops_target || i < w->ops_target); i++) {
        size_t kl = mkkey(key, sizeof key, w->id, i);
        memcached_return_t rc;
        char detail[96];
        const char *why = NULL;
        if (w->op == 0) {
            rc = memcached_set(w->m, key, kl, w->value, VSIZE, 0, 0);
            if (rc == MEMCACHED_SUCCESS) w->bytes += VSIZE;
        } else {
            size_t vl = 0;
            uint32_t fl;
            char *v = memcached_get(w->m, key, kl, &vl, &fl, &rc);
            if (rc == MEMCACHED_SUCCESS && vl != VSIZE) {
                rc = MEMCACHED_FAILURE;
                snprintf(detail, sizeof detail, "value of %zu bytes, expected %zu", vl, VSIZE);
                why = detail;
            }
            if (rc == MEMCACHED_SUCCESS) w->bytes += vl;
            free(v);
        }
        if (rc == MEMCACHED_SUCCESS) w->ops++;
        else {
            w->errors++;
            note_error(w, key, kl, rc, why);
        }
    }
    return NULL;
}

static uint64_t TOTAL_ERRORS;

/* What failed, on stderr (stdout keeps its JSON lines): one summary line per operation with
 * failures, then one line per distinct error (return code x server), most frequent first. */
static void report_errors(const char *opname, worker *ws, int threads, uint64_t ops, uint64_t errs, double secs)
{
    uint64_t prep = 0, other = 0;
    err_kind all[MAX_ERR_KINDS * 4];
    int n = 0;
    for (int t = 0; t < threads; t++) {
        prep += ws[t].prep_errors;
        other += ws[t].other_kinds;
        for (int i = 0; i < ws[t].nkinds; i++) {
            err_kind *e = &ws[t].kinds[i];
            int j = 0;
            while (j < n && !(all[j].rc == e->rc && !strcmp(all[j].server, e->server))) j++;
            if (j < n) all[j].count += e->count;
            else if (n < (int)(sizeof all / sizeof all[0])) all[n++] = *e;
            else other += e->count;
        }
    }
    if (!errs && ops && !prep) return;
    char srv[512] = "";
    for (int i = 0; i < SL.n && strlen(srv) < sizeof srv - 100; i++)
        snprintf(srv + strlen(srv), sizeof srv - strlen(srv), "%s%s", i ? "," : "", SL.spec[i]);
    if (errs || !ops)
        fprintf(stderr, "mcbench: %s: %" PRIu64 " of %" PRIu64 " operations failed in %.3f s "
                "(%d threads, servers %s, timeout %d ms)%s\n", opname, errs, ops + errs, secs, threads, srv,
                TIMEOUT, ops ? "" : "; none succeeded");
    if (prep)
        fprintf(stderr, "mcbench: %s: %" PRIu64 " of %" PRIu64 " untimed populate sets failed\n",
                opname, prep, (uint64_t)threads * (uint64_t)KEYS);
    for (int a = 0; a < n; a++) /* most frequent first */
        for (int b = a + 1; b < n; b++)
            if (all[b].count > all[a].count) { err_kind x = all[a]; all[a] = all[b]; all[b] = x; }
    for (int i = 0; i < n; i++)
        fprintf(stderr, "mcbench: %s: %" PRIu64 " x %s on %s: %s\n", opname, all[i].count,
                memcached_strerror(NULL, all[i].rc), all[i].server, all[i].msg);
    if (other) fprintf(stderr, "mcbench: %s: %" PRIu64 " more failures of other kinds\n", opname, other);
    fflush(stderr);
}

static void bench(const char *opname, int op, int threads, uint64_t total_ops)
{
    worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    pthread_barrier_init(&BAR, NULL, (unsigned)threads + 1);
    STOP = 0;
    for (int t = 0; t < threads; t++) {
        ws[t].id = t;
        ws[t].op = op;
        ws[t].m = mc_new(&SL, -1, DIST, HASH, TIMEOUT);
        ws[t].value = malloc(VSIZE);
        for (size_t i = 0; i < VSIZE; i++) ws[t].value[i] = (char)(i * 31 + (size_t)t);
        ws[t].ops_target = total_ops ? (total_ops + (uint64_t)threads - 1) / (uint64_t)threads : 0;
        /* connect to every server before timing; a failure here is the first cause of what follows */
        memcached_return_t vrc = memcached_version(ws[t].m);
        if (vrc != MEMCACHED_SUCCESS && t == 0)
            fprintf(stderr, "mcbench: %s: connect: %s: %s\n", opname, memcached_strerror(ws[t].m, vrc),
                    error_text(ws[t].m, vrc));
        if (op == 1) { /* populate the keys read by this thread (untimed) */
            char key[160];
            for (int k = 0; k < KEYS; k++) {
                size_t kl = mkkey(key, sizeof key, t, (uint64_t)k);
                memcached_return_t rc = memcached_set(ws[t].m, key, kl, ws[t].value, VSIZE, 0, 0);
                if (rc != MEMCACHED_SUCCESS) {
                    ws[t].prep_errors++;
                    note_error(&ws[t], key, kl, rc, NULL);
                }
            }
        }
        pthread_create(&th[t], NULL, run, &ws[t]);
    }
    pthread_barrier_wait(&BAR);
    uint64_t t0 = now_ns();
    if (!total_ops) {
        usleep((useconds_t)(SECONDS * 1e6));
        STOP = 1;
    }
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    double secs = (double)(now_ns() - t0) / 1e9;
    uint64_t ops = 0, errs = 0, bytes = 0;
    for (int t = 0; t < threads; t++) {
        ops += ws[t].ops;
        errs += ws[t].errors;
        bytes += ws[t].bytes;
    }
    printf("{\"op\":\"%s\",\"value_size\":%zu,\"threads\":%d,\"servers\":%d,\"distribution\":\"%s\","
           "\"ops\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,"
           "\"bytes_per_s\":%.1f,\"ops_per_s\":%.1f}\n",
           opname, VSIZE, threads, SL.n, dist_name(DIST), ops, errs, bytes, secs,
           secs > 0 ? (double)bytes / secs : 0.0, secs > 0 ? (double)ops / secs : 0.0);
    fflush(stdout);
    report_errors(opname, ws, threads, ops, errs, secs);
    TOTAL_ERRORS += errs + (ops == 0);
    for (int t = 0; t < threads; t++) {
        char key[160];
        for (int k = 0; k < KEYS; k++) {
            size_t kl = mkkey(key, sizeof key, t, (uint64_t)k);
            memcached_delete(ws[t].m, key, kl, 0);
        }
        memcached_free(ws[t].m);
        free(ws[t].value);
    }
    pthread_barrier_destroy(&BAR);
    free(ws);
    free(th);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mcbench --servers HOST:PORT[,...] [--op set|get|both] [--value-size N]\n"
            "               [--threads N] [--seconds S | --ops N] [--keys K]\n"
            "               [--distribution modula|consistent] [--hash H] [--timeout-ms N]\n"
            "Each thread cycles over K keys of its own (default 16). get first stores its\n"
            "keys (untimed); connections are opened before timing.  Output: one JSON\n"
            "line per op with bytes_per_s and ops_per_s.\n"
            "Exit status 1 if any operation failed; then stderr says what failed: the\n"
            "operation, how many of how many, and per distinct error (libmemcached's\n"
            "return code x server host:port) the count and the first message.\n");
}

int main(int argc, char **argv)
{
    const char *servers = NULL, *opname = "both";
    int threads = 8;
    uint64_t ops = 0;
    DIST = DIST_MODULA;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--servers")) servers = v;
        else if (!strcmp(a, "--op")) opname = v;
        else if (!strcmp(a, "--value-size")) VSIZE = (size_t)strtoull(v, NULL, 10);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--seconds")) SECONDS = atof(v);
        else if (!strcmp(a, "--ops")) ops = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--keys")) KEYS = atoi(v);
        else if (!strcmp(a, "--timeout-ms")) TIMEOUT = atoi(v);
        else if (!strcmp(a, "--distribution")) DIST = dist_parse(v);
        else if (!strcmp(a, "--hash")) HASH = hash_parse(v);
        else { usage(stderr); return 2; }
    }
    char err[256];
    if (!servers || threads < 1 || KEYS < 1 || VSIZE < 1 || DIST < 0 || HASH < 0 ||
        (strcmp(opname, "set") && strcmp(opname, "get") && strcmp(opname, "both"))) {
        usage(stderr);
        return 2;
    }
    if (gethostname(HOST, sizeof HOST - 1)) snprintf(HOST, sizeof HOST, "?");
    {
        FILE *ur = fopen("/dev/urandom", "rb");
        if (!ur || fread(&NONCE, sizeof NONCE, 1, ur) != 1) NONCE = (uint32_t)now_ns() ^ (uint32_t)getpid();
        if (ur) fclose(ur);
    }
    for (char *h = HOST; *h; h++)
        if (*h <= ' ' || *h == ':' || *h > '~') *h = '_';
    if (servers_parse(servers, &SL, err, sizeof err)) {
        fprintf(stderr, "mcbench: %s\n", err);
        return 2;
    }
    if (strcmp(opname, "get")) bench("set", 0, threads, ops);
    if (strcmp(opname, "set")) bench("get", 1, threads, ops);
    servers_free(&SL);
    return TOTAL_ERRORS ? 1 : 0; /* any failed operation: exit 1 (JSON still printed) */
}
