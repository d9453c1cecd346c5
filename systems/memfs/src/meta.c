/* MemFS metadata records (see meta.h). */
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int meta_get(mc_ctx *c, const char *path, memfs_rec *rec, uint64_t *cas)
{
    char key[MEMFS_KEY_MAX + 1];
    size_t kl = key_meta(key, sizeof key, path);
    if (!kl) return ENAMETOOLONG;
    char *val;
    size_t vl;
    ST_INC(memcached_meta_get);
    memcached_return_t rc = mc_gets(c->all, key, kl, &val, &vl, NULL, cas);
    if (rc == MEMCACHED_NOTFOUND) return ENOENT;
    if (rc != MEMCACHED_SUCCESS) {
        ST_INC(errors_metadata);
        memfs_log("metadata get %s: %s", path, memcached_strerror(c->all, rc));
        return EIO;
    }
    int bad = rec_parse(val, vl, rec);
    free(val);
    if (bad) {
        ST_INC(errors_metadata);
        memfs_log("metadata record of %s is corrupt", path);
        return EIO;
    }
    return 0;
}

int meta_update(mc_ctx *c, const char *path, meta_edit_fn edit, void *arg, memfs_rec *out)
{
    char key[MEMFS_KEY_MAX + 1], buf[MEMFS_REC_MAX];
    size_t kl = key_meta(key, sizeof key, path);
    if (!kl) return ENAMETOOLONG;
    for (int tries = 0; tries < 100; tries++) {
        memfs_rec r;
        uint64_t cas = 0;
        int e = meta_get(c, path, &r, &cas);
        if (e) return e;
        e = edit(&r, arg);
        if (e == META_KEEP) {
            if (out) *out = r;
            return 0;
        }
        if (e) return e;
        int l = rec_format(&r, buf, sizeof buf);
        if (l < 0) return EIO;
        ST_INC(memcached_meta_cas);
        memcached_return_t rc = memcached_cas(c->all, key, kl, buf, (size_t)l, 0, 0, cas);
        if (rc == MEMCACHED_SUCCESS) {
            if (out) *out = r;
            return 0;
        }
        if (rc == MEMCACHED_DATA_EXISTS) {
            ST_INC(memcached_meta_cas_conflicts);
            continue;
        }
        if (rc == MEMCACHED_NOTFOUND) return ENOENT;
        ST_INC(errors_metadata);
        memfs_log("metadata update %s: %s", path, memcached_strerror(c->all, rc));
        return mc_errno(rc);
    }
    ST_INC(errors_metadata);
    memfs_log("metadata update %s: too many CAS conflicts", path);
    return EIO;
}

int meta_err(mc_ctx *c, const char *what, const char *path, memcached_return_t rc)
{
    ST_INC(errors_metadata);
    memfs_log("%s %s: %s", what, path, memcached_strerror(c->all, rc));
    return -EIO;
}

int dir_append(mc_ctx *c, const char *dir, char type, const char *name, memcached_return_t *rcout)
{
    char key[MEMFS_KEY_MAX + 1];
    size_t kl = key_dir(key, sizeof key, dir);
    size_t nl = strlen(name);
    char *v = malloc(nl + 2);
    v[0] = type;
    memcpy(v + 1, name, nl + 1);
    ST_INC(memcached_meta_append);
    memcached_return_t rc = memcached_append(c->all, key, kl, v, nl + 2, 0, 0);
    free(v);
    *rcout = rc;
    return rc == MEMCACHED_SUCCESS ? 0 : -1;
}
