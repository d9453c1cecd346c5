/* memfs-locate: where does a MemFS file live?  Reads the file's metadata
 * record directly from memcached (no mount needed) so that a locality-aware
 * scheduler can place a task on the node holding its input. */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: memfs-locate --servers HOST:PORT[,...] [--distribution modula|consistent]\n"
            "                    [--hash fnv1_32|...] [--timeout-ms N]\n"
            "                    [--format json|owners|servers] PATH...\n"
            "Server list, distribution and hash must be those of the mounts.\n"
            "PATH is the path inside MemFS (e.g. /run1/out.dat; a leading '/' is added).\n"
            "json (default): one JSON object per line; owners: 'PATH<TAB>0,1';\n"
            "servers: 'PATH<TAB>host:port,host:port'.  Exit 1 if a path is missing.\n");
}

int main(int argc, char **argv)
{
    const char *servers = NULL, *dist = "modula", *format = "json", *hash = "fnv1_32";
    int timeout = 2000, first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (!strcmp(a, "--servers")) dst = &servers;
        else if (!strcmp(a, "--distribution")) dst = &dist;
        else if (!strcmp(a, "--format")) dst = &format;
        else if (!strcmp(a, "--hash")) dst = &hash;
        else if (!strcmp(a, "--timeout-ms")) {
            if (i + 1 >= argc) { usage(stderr); return 2; }
            timeout = atoi(argv[++i]);
            continue;
        } else if (!strncmp(a, "--servers=", 10)) { servers = a + 10; continue; }
        else if (!strncmp(a, "--distribution=", 15)) { dist = a + 15; continue; }
        else if (!strncmp(a, "--format=", 9)) { format = a + 9; continue; }
        else if (!strncmp(a, "--hash=", 7)) { hash = a + 7; continue; }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--")) { first = i + 1; break; }
        else if (a[0] == '-' && a[1]) { usage(stderr); return 2; }
        else { first = i; break; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        *dst = argv[++i];
    }
    if (!servers || first >= argc) { usage(stderr); return 2; }
    int fmt = !strcmp(format, "json") ? 0 : !strcmp(format, "owners") ? 1
            : !strcmp(format, "servers") ? 2 : -1;
    int d = dist_parse(dist), hh = hash_parse(hash);
    if (fmt < 0 || d < 0 || hh < 0) { usage(stderr); return 2; }
    server_list sl;
    char err[256];
    if (servers_parse(servers, &sl, err, sizeof err)) {
        fprintf(stderr, "memfs-locate: %s\n", err);
        return 2;
    }
    memcached_st *m = mc_new(&sl, -1, d, hh, timeout);
    int status = 0;
    for (int i = first; i < argc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", argv[i][0] == '/' ? "" : "/", argv[i]);
        size_t l = strlen(path);
        while (l > 1 && path[l - 1] == '/') path[--l] = 0;
        char key[MEMFS_KEY_MAX + 1];
        size_t kl = key_meta(key, sizeof key, path);
        char *val = NULL;
        size_t vl = 0;
        memcached_return_t rc = mc_gets(m, key, kl, &val, &vl, NULL, NULL);
        memfs_rec r;
        const char *e = NULL;
        if (rc == MEMCACHED_NOTFOUND) e = "ENOENT";
        else if (rc != MEMCACHED_SUCCESS) e = "EIO";
        else if (rec_parse(val, vl, &r)) e = "corrupt record";
        free(val);
        if (e) {
            status = 1;
            char esc[8192];
            json_escape(esc, sizeof esc, path);
            if (fmt == 0) printf("{\"path\":\"%s\",\"error\":\"%s\"}\n", esc, e);
            else fprintf(stderr, "memfs-locate: %s: %s\n", path, e);
            continue;
        }
        if (fmt == 0) {
            char *j = layout_json(m, &sl, path, &r);
            printf("%s\n", j);
            free(j);
        } else {
            char *o = r.type == 'f' ? layout_owners(m, &sl, &r, fmt == 2) : strdup("");
            printf("%s\t%s\n", path, o);
            free(o);
        }
    }
    memcached_free(m);
    servers_free(&sl);
    return status;
}
