/* MemFS daemon: the shared configuration, the log and the per-thread
 * memcached handles (see conf.h). */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>

memfs_cfg C;

void memfs_log(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "memfs: %s\n", buf);
}

/* ------------------------------------------------- per-thread memcached */
mc_ctx *ctx_new(void)
{
    mc_ctx *c = calloc(1, sizeof *c);
    c->all = mc_new(&C.sl, -1, C.dist, C.hash, C.timeout_ms);
    c->one = calloc((size_t)C.sl.n, sizeof *c->one);
    int ok = c->all != NULL;
    for (int i = 0; i < C.sl.n; i++) {
        c->one[i] = mc_new(&C.sl, i, C.dist, C.hash, C.timeout_ms);
        ok = ok && c->one[i];
    }
    if (!ok) {
        ctx_free(c);
        return NULL;
    }
    return c;
}

void ctx_free(mc_ctx *c)
{
    if (!c) return;
    if (c->all) memcached_free(c->all);
    for (int i = 0; c->one && i < C.sl.n; i++)
        if (c->one[i]) memcached_free(c->one[i]);
    free(c->one);
    free(c);
}

static pthread_key_t ctx_key;
static void tls_destroy(void *p) { ctx_free(p); }
void tls_init(void) { pthread_key_create(&ctx_key, tls_destroy); }

mc_ctx *tls_ctx(void)
{
    mc_ctx *c = pthread_getspecific(ctx_key);
    if (!c) {
        c = ctx_new();
        if (!c) {
            memfs_log("cannot create memcached handles (out of memory?)");
            abort();
        }
        pthread_setspecific(ctx_key, c);
    }
    return c;
}
