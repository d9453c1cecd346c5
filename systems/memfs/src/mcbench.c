/* mcbench: raw libmemcached set/get bandwidth with N threads over a server
 * list -- the ceiling MemFS is compared against.  Prints one JSON line per
 * operation. */
#include "common.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int      id;
    memcached_st *m;
    int      op;        /* 0 set, 1 get */
    uint64_t ops_target; /* 0: time-bound */
    uint64_t ops, errors, bytes;
    char    *value;
} worker;

static server_list SL;
static int DIST, HASH = MEMFS_HASH_DEFAULT, TIMEOUT = 2000, KEYS = 16;
static size_t VSIZE = 524288;
static double SECONDS = 5;
static pthread_barrier_t BAR;
static volatile int STOP;

static size_t mkkey(char *k, size_t cap, int tid, uint64_t i)
{
    return (size_t)snprintf(k, cap, "mcbench:%d:%d:%" PRIu64, (int)getpid(), tid, i % (uint64_t)KEYS);
}

static void *run(void *arg)
{
    worker *w = arg;
    char key[128];
    pthread_barrier_wait(&BAR);
    for (uint64_t i = 0; !STOP && (!w->ops_target || i < w->ops_target); i++) {
        size_t kl = mkkey(key, sizeof key, w->id, i);
        memcached_return_t rc;
        if (w->op == 0) {
            rc = memcached_set(w->m, key, kl, w->value, VSIZE, 0, 0);
            if (rc == MEMCACHED_SUCCESS) w->bytes += VSIZE;
        } else {
            size_t vl;
            uint32_t fl;
            char *v = memcached_get(w->m, key, kl, &vl, &fl, &rc);
            if (rc == MEMCACHED_SUCCESS && vl != VSIZE) rc = MEMCACHED_FAILURE;
            if (rc == MEMCACHED_SUCCESS) w->bytes += vl;
            free(v);
        }
        if (rc == MEMCACHED_SUCCESS) w->ops++;
        else w->errors++;
    }
    return NULL;
}

static uint64_t TOTAL_ERRORS;

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
        memcached_version(ws[t].m); /* connect to every server before timing */
        if (op == 1) { /* populate the keys read by this thread (untimed) */
            char key[128];
            for (int k = 0; k < KEYS; k++) {
                size_t kl = mkkey(key, sizeof key, t, (uint64_t)k);
                memcached_set(ws[t].m, key, kl, ws[t].value, VSIZE, 0, 0);
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
    TOTAL_ERRORS += errs + (ops == 0);
    for (int t = 0; t < threads; t++) {
        char key[128];
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
            "Exit status 1 if any operation failed.\n");
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
    if (servers_parse(servers, &SL, err, sizeof err)) {
        fprintf(stderr, "mcbench: %s\n", err);
        return 2;
    }
    if (strcmp(opname, "get")) bench("set", 0, threads, ops);
    if (strcmp(opname, "set")) bench("get", 1, threads, ops);
    servers_free(&SL);
    return TOTAL_ERRORS ? 1 : 0; /* any failed operation: exit 1 (JSON still printed) */
}
