/* MemFS metadata: the records of files and directories (one memcached item
 * per path, "m:<path>") and the directories' entry logs ("d:<path>").
 * Everything that reads or changes a record goes through here, so the data
 * path (io.c) and the FUSE operations (memfs.c) share one implementation of
 * the record's read-modify-write and neither reaches into the other. */
#ifndef MEMFS_META_H
#define MEMFS_META_H

#include "conf.h"
#include "stats.h"

/* Read the record of path.  0, ENOENT, ENAMETOOLONG or EIO (logged). */
int meta_get(mc_ctx *c, const char *path, memfs_rec *rec, uint64_t *cas);

/* An edit of a record for meta_update: change *r and return 0 to store it,
 * META_KEEP when the record is already right (nothing stored), or an errno
 * (nothing stored, meta_update returns it). */
#define META_KEEP (-1)
typedef int (*meta_edit_fn)(memfs_rec *r, void *arg);

/* Read-modify-write of path's record with memcached's CAS, retried on a
 * concurrent change (up to 100 times).  On 0, *out (if given) holds the
 * record as stored (or as kept).  ENOENT when there is no record, the edit's
 * errno, or EIO/a storage errno (logged, counted as a metadata error). */
int meta_update(mc_ctx *c, const char *path, meta_edit_fn edit, void *arg, memfs_rec *out);

/* Log a failed metadata operation, count it, return -EIO. */
int meta_err(mc_ctx *c, const char *what, const char *path, memcached_return_t rc);

/* Append an entry (type 'f', 'd' or 'x' = removed) to dir's entry log.
 * 0 or -1 with *rcout set. */
int dir_append(mc_ctx *c, const char *dir, char type, const char *name, memcached_return_t *rcout);

#endif
