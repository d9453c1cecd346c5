/*
 * Backend "passthrough": no distribution; every open reads the source
 * directly with pread (or, splice=on, hands libfuse the source fd to splice
 * from). The FUSE overhead baseline: source traffic N x file size. The same
 * reads serve non-regular files in every mode.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int mfs_pass_read(mfs_t *m, int fd, char *buf, size_t size, off_t off)
{
	uint64_t t0 = mfs_now_ns();
	int rc = (int)pread(fd, buf, size, off);
	if (rc < 0)
		rc = -errno;
	else
		SADD(m, bytes_read_source, rc);
	SADD(m, source_read_ns, mfs_now_ns() - t0);
	SADD(m, source_read_calls, 1);
	return rc;
}

/* splice=on: hand libfuse the source fd */
int mfs_pass_read_buf(mfs_t *m, int fd, off_t fsize, struct fuse_bufvec **bufp, size_t size, off_t off)
{
	uint64_t t0 = mfs_now_ns();
	struct fuse_bufvec *bv = malloc(sizeof(*bv));
	if (!bv)
		return -ENOMEM;
	*bv = FUSE_BUFVEC_INIT(size);
	bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv->buf[0].fd = fd;
	bv->buf[0].pos = off;
	*bufp = bv;
	uint64_t n = 0;
	if (off < fsize)
		n = (uint64_t)(fsize - off) < size ? (uint64_t)(fsize - off) : size;
	SADD(m, bytes_read_source, n);
	SADD(m, source_read_calls, 1);
	SADD(m, read_ns, mfs_now_ns() - t0);
	SADD(m, read_calls, 1);
	SADD(m, read_bytes, n);
	return 0;
}

static int pass_check(mfs_t *m, const char *mode, char *err, size_t errlen)
{
	return mfs_check_no_meta(m, mode, err, errlen);
}

static void pass_conn_init(mfs_t *m, struct fuse_conn_info *conn)
{
	if (m->o.splice)
		mfs_want_splice(conn);
}

const struct mfs_backend mfs_backend_pass = {
	.name = "passthrough",
	.distributed = 0,
	.check_opts = pass_check,
	.conn_init = pass_conn_init,
};
