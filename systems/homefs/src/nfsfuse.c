/*
 * nfsfuse: a small read-only FUSE client for NFS (v3 by default, v4 optional) over libnfs.
 *
 * The kernel on the development machines has no NFS client, so the emulated
 * "home" file system (systems/homefs) is read through this user-space client:
 * one instance (one mount, one page cache, one TCP connection) per emulated
 * node, started inside that node's network namespace with
 * `nsenter --net=/run/netns/<ns>` so that the mount stays visible in the
 * host's mount namespace while its traffic crosses the emulated network.
 *
 *   nfsfuse --server 10.77.0.1 --export /home --client-name node3 \
 *           [--max-read 1048576] [--timeout-ms 60000] [--attr-timeout 1]
 *           [--keepalive-path /.homefs-keepalive [--keepalive-s 10]]
 *           [--nfs-version 3|4] [--nfs-port 2049] [--mount-port 20048] [--reconnect 3] MOUNTPOINT
 *
 * Reads return every byte asked for, or fewer only at the end of the file, or an error (EIO for
 * transport failures): never the bytes read before an error, which FUSE would take as the end of
 * the file (a silently truncated file). --reconnect N: how often libnfs reconnects after the
 * server closed the connection before the call fails (libnfs' own default, -1 = for ever, left a
 * reader hanging while nfsfuse spun at 100 % CPU once the server had died).
 *
 * NFSv3 (default): stateless; libnfs 4.0 documents its NFSv4 support as "not yet
 * functional", and it was seen to lose its open-owner sequence (NFS4ERR_BAD_SEQID).
 *
 * Runs in the foreground, single threaded (libnfs' synchronous API is not
 * thread safe); kernel readahead still keeps one request in flight while the
 * previous one is being answered. Ends on SIGTERM/SIGINT or when unmounted.
 */
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <getopt.h>
#include <nfsc/libnfs.h>
#include <pthread.h>
#ifndef NFS_V4
#define NFS_V4 4 /* libnfs-raw-nfs4.h */
#endif
#ifndef NFS_V3
#define NFS_V3 3
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static struct {
	const char *server;
	const char *export;
	const char *client_name;
	size_t max_read;
	int timeout_ms;
	double attr_timeout;
	const char *keepalive_path;
	int keepalive_s;
	int version, nfsport, mountport;
	int reconnect;
	struct nfs_context *nfs;
	pthread_mutex_t mu; /* libnfs' sync API is not thread safe: FUSE loop vs keepalive */
	pthread_t ka_thr;
	volatile int ka_stop;
	uint64_t bytes, reads, read_errors, keepalives, keepalive_errors;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define LOCK() pthread_mutex_lock(&g.mu)
#define UNLOCK() pthread_mutex_unlock(&g.mu)

/*
 * NFSv4.0 leases: a client that sends nothing that carries its client id for
 * longer than the server's lease time loses its state, and libnfs (sync API,
 * no background thread) then fails every OPEN with ERANGE. An idle emulated
 * node is normal in the benchmark (the broadcast use cases read on one node
 * only), so a keepalive thread opens, reads and closes a small file every
 * keepalive_s seconds, which renews the lease.
 */
static void *keepalive(void *arg)
{
	(void)arg;
	while (!g.ka_stop) {
		for (int i = 0; i < g.keepalive_s * 10 && !g.ka_stop; i++)
			usleep(100000);
		if (g.ka_stop)
			break;
		LOCK();
		struct nfsfh *fh;
		char b[1];
		int rc = nfs_open(g.nfs, g.keepalive_path, O_RDONLY, &fh);
		if (rc == 0) {
			nfs_pread(g.nfs, fh, 0, 1, b);
			nfs_close(g.nfs, fh);
			g.keepalives++;
		} else {
			g.keepalive_errors++;
			fprintf(stderr, "nfsfuse %s: keepalive open %s failed: %d %s\n", g.client_name, g.keepalive_path,
				rc, nfs_get_error(g.nfs));
		}
		UNLOCK();
	}
	return NULL;
}

static void fill_stat(struct stat *st, const struct nfs_stat_64 *n)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = (dev_t)n->nfs_dev;
	st->st_ino = (ino_t)n->nfs_ino;
	st->st_mode = (mode_t)n->nfs_mode;
	st->st_nlink = (nlink_t)n->nfs_nlink;
	st->st_uid = (uid_t)n->nfs_uid;
	st->st_gid = (gid_t)n->nfs_gid;
	st->st_rdev = (dev_t)n->nfs_rdev;
	st->st_size = (off_t)n->nfs_size;
	st->st_blksize = (blksize_t)(n->nfs_blksize ? n->nfs_blksize : 4096);
	st->st_blocks = (blkcnt_t)n->nfs_blocks;
	st->st_atim.tv_sec = (time_t)n->nfs_atime;
	st->st_atim.tv_nsec = (long)n->nfs_atime_nsec;
	st->st_mtim.tv_sec = (time_t)n->nfs_mtime;
	st->st_mtim.tv_nsec = (long)n->nfs_mtime_nsec;
	st->st_ctim.tv_sec = (time_t)n->nfs_ctime;
	st->st_ctim.tv_nsec = (long)n->nfs_ctime_nsec;
}

static void *nf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	conn->max_read = (unsigned)g.max_read;
	if (conn->max_readahead < g.max_read)
		conn->max_readahead = (unsigned)g.max_read;
	cfg->entry_timeout = g.attr_timeout;
	cfg->attr_timeout = g.attr_timeout;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0; /* a fresh open drops this mount's cached pages */
	cfg->use_ino = 1;
	if (g.keepalive_path && pthread_create(&g.ka_thr, NULL, keepalive, NULL) != 0) {
		fprintf(stderr, "nfsfuse: cannot start the keepalive thread\n");
		g.keepalive_path = NULL;
	}
	return NULL;
}

static int nf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct nfs_stat_64 n;
	LOCK();
	int rc = fi && fi->fh ? nfs_fstat64(g.nfs, (struct nfsfh *)(uintptr_t)fi->fh, &n)
			      : nfs_lstat64(g.nfs, path, &n);
	UNLOCK();
	if (rc < 0)
		return rc;
	fill_stat(st, &n);
	st->st_mode &= ~(mode_t)0222; /* read-only mount */
	return 0;
}

static int nf_readlink(const char *path, char *buf, size_t size)
{
	LOCK();
	int rc = nfs_readlink(g.nfs, path, buf, (int)size);
	UNLOCK();
	if (rc < 0)
		return rc;
	buf[size - 1] = 0;
	return 0;
}

static int nf_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	struct nfsdir *d;
	LOCK();
	int rc = nfs_opendir(g.nfs, path, &d);
	if (rc < 0) {
		UNLOCK();
		return rc;
	}
	struct nfsdirent *e;
	while ((e = nfs_readdir(g.nfs, d)) != NULL) {
		if (filler(buf, e->name, NULL, 0, 0))
			break;
	}
	nfs_closedir(g.nfs, d);
	UNLOCK();
	return 0;
}

static int nf_open(const char *path, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	struct nfsfh *fh;
	LOCK();
	int rc = nfs_open(g.nfs, path, O_RDONLY, &fh);
	UNLOCK();
	if (rc < 0) {
		fprintf(stderr, "nfsfuse %s: open %s: %s\n", g.client_name, path, strerror(-rc));
		return rc;
	}
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->keep_cache = 0;
	return 0;
}

/*
 * The errno a failed read returns to the reader. libnfs gives a negative errno: the NFS status
 * mapped, or its own for RPC failures: -EFAULT (RPC error), -EINTR (timed out or cancelled, which
 * readers would retry: Python does, PEP 475), -1 (the request could not even be queued). Those
 * become -EIO, as does anything that is not an errno.
 */
static int read_errno(int rc)
{
	if (rc <= -4096 || rc >= -1 || rc == -EINTR || rc == -EAGAIN || rc == -EFAULT)
		return -EIO;
	return rc;
}

/*
 * A read returns exactly `size` bytes or, at the end of the file, fewer; anything else is an
 * error. FUSE takes a short count as the end of the file (the kernel then shrinks its idea of the
 * file size), so a read that fails part-way must not return the bytes it has so far: the reader
 * would see a silently truncated file. Likewise a read that gets no bytes before `size` checks
 * with the server that this really is the end of the file.
 */
static int nf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	struct nfsfh *fh = (struct nfsfh *)(uintptr_t)fi->fh;
	size_t done = 0;
	int err = 0;
	LOCK();
	while (done < size) {
		int rc = nfs_pread(g.nfs, fh, (uint64_t)off + done, size - done, buf + done);
		if (rc < 0) {
			fprintf(stderr, "nfsfuse %s: read of [%lld, %lld) failed after %zu bytes: %d (%s) %s\n",
				g.client_name, (long long)off, (long long)off + (long long)size, done, rc,
				strerror(-rc), nfs_get_error(g.nfs));
			err = read_errno(rc);
			break;
		}
		if (rc == 0) { /* the server has no more bytes here: the end of the file? */
			struct nfs_stat_64 n;
			int src = nfs_fstat64(g.nfs, fh, &n);
			if (src < 0) {
				err = read_errno(src);
			} else if ((uint64_t)off + done < n.nfs_size) {
				fprintf(stderr, "nfsfuse %s: read at %lld returned no bytes before the end of the file "
					"(%llu bytes)\n", g.client_name, (long long)off + (long long)done,
					(unsigned long long)n.nfs_size);
				err = -EIO;
			}
			break;
		}
		done += (size_t)rc;
	}
	UNLOCK();
	if (err) {
		g.read_errors++;
		return err;
	}
	g.bytes += done;
	g.reads++;
	return (int)done;
}

static int nf_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	LOCK();
	nfs_close(g.nfs, (struct nfsfh *)(uintptr_t)fi->fh);
	UNLOCK();
	return 0;
}

static int nf_statfs(const char *path, struct statvfs *sv)
{
	struct statvfs s;
	LOCK();
	int rc = nfs_statvfs(g.nfs, path, &s);
	UNLOCK();
	if (rc < 0)
		return rc;
	*sv = s;
	return 0;
}

static void nf_destroy(void *p)
{
	(void)p;
	if (g.keepalive_path) {
		g.ka_stop = 1;
		pthread_join(g.ka_thr, NULL);
	}
	fprintf(stderr, "nfsfuse %s: %llu bytes in %llu reads, %llu failed reads, %llu keepalives (%llu failed)\n",
		g.client_name, (unsigned long long)g.bytes, (unsigned long long)g.reads,
		(unsigned long long)g.read_errors, (unsigned long long)g.keepalives,
		(unsigned long long)g.keepalive_errors);
}

static const struct fuse_operations ops = {
	.init = nf_init,
	.getattr = nf_getattr,
	.readlink = nf_readlink,
	.readdir = nf_readdir,
	.open = nf_open,
	.read = nf_read,
	.release = nf_release,
	.statfs = nf_statfs,
	.destroy = nf_destroy,
};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s --server HOST --export PATH --client-name NAME [--max-read BYTES]\n"
		"          [--timeout-ms MS] [--attr-timeout S] [--keepalive-path /FILE [--keepalive-s S]]\n"
		"          [--nfs-version 3|4] [--nfs-port 2049] [--mount-port 20048] [--reconnect N] MOUNTPOINT\n",
		argv0);
}

int main(int argc, char **argv)
{
	g.export = "/";
	g.client_name = "nfsfuse";
	g.max_read = 1 << 20;
	g.timeout_ms = 60000;
	g.attr_timeout = 1.0;
	g.keepalive_s = 10;
	g.version = 3;
	g.nfsport = 2049;
	g.mountport = 20048;
	g.reconnect = 3;
	static const struct option lo[] = {
		{"server", required_argument, 0, 's'},
		{"export", required_argument, 0, 'e'},
		{"client-name", required_argument, 0, 'c'},
		{"max-read", required_argument, 0, 'm'},
		{"timeout-ms", required_argument, 0, 't'},
		{"attr-timeout", required_argument, 0, 'a'},
		{"keepalive-path", required_argument, 0, 'k'},
		{"keepalive-s", required_argument, 0, 'K'},
		{"nfs-version", required_argument, 0, 'V'},
		{"nfs-port", required_argument, 0, 'P'},
		{"mount-port", required_argument, 0, 'M'},
		{"reconnect", required_argument, 0, 'R'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's': g.server = optarg; break;
		case 'e': g.export = optarg; break;
		case 'c': g.client_name = optarg; break;
		case 'm': g.max_read = strtoull(optarg, NULL, 10); break;
		case 't': g.timeout_ms = atoi(optarg); break;
		case 'a': g.attr_timeout = atof(optarg); break;
		case 'k': g.keepalive_path = optarg; break;
		case 'K': g.keepalive_s = atoi(optarg); break;
		case 'V': g.version = atoi(optarg); break;
		case 'P': g.nfsport = atoi(optarg); break;
		case 'M': g.mountport = atoi(optarg); break;
		case 'R': g.reconnect = atoi(optarg); break;
		case 'h': usage(argv[0]); return 0;
		default: usage(argv[0]); return 2;
		}
	}
	if (!g.server || optind != argc - 1 || g.max_read < 4096 || g.max_read > (1u << 20)) {
		usage(argv[0]);
		return 2;
	}
	const char *mnt = argv[optind];

	g.nfs = nfs_init_context();
	if (!g.nfs) {
		fprintf(stderr, "nfsfuse: nfs_init_context failed\n");
		return 1;
	}
	nfs_set_timeout(g.nfs, g.timeout_ms);
	nfs_set_autoreconnect(g.nfs, g.reconnect);
	nfs_set_uid(g.nfs, 0);
	nfs_set_gid(g.nfs, 0);
	if (g.version == 4) {
		/* libnfs 4.0 says of NFSv4: "not yet functional"; seen here: NFS4ERR_BAD_SEQID
		 * after a few hundred opens, then every OPEN fails (ERANGE) */
		nfs_set_version(g.nfs, NFS_V4);
		nfs4_set_client_name(g.nfs, g.client_name);
	} else {
		/* NFSv3: stateless (no leases, no open-owner sequence ids); the server has no
		 * portmapper, so the NFS and MOUNT ports are given explicitly */
		char url[1024];
		snprintf(url, sizeof(url), "nfs://%s%s?version=3&nfsport=%d&mountport=%d", g.server, g.export,
			 g.nfsport, g.mountport);
		struct nfs_url *u = nfs_parse_url_dir(g.nfs, url);
		if (!u) {
			fprintf(stderr, "nfsfuse: bad url %s: %s\n", url, nfs_get_error(g.nfs));
			return 1;
		}
		nfs_destroy_url(u);
		nfs_set_version(g.nfs, NFS_V3);
	}
	if (nfs_mount(g.nfs, g.server, g.export) != 0) {
		fprintf(stderr, "nfsfuse: mounting %s:%s failed: %s\n", g.server, g.export, nfs_get_error(g.nfs));
		nfs_destroy_context(g.nfs);
		return 1;
	}

	fprintf(stderr, "nfsfuse %s: mounted %s:%s (NFSv%d), server read size %llu, reconnect %d\n", g.client_name,
		g.server, g.export, g.version, (unsigned long long)nfs_get_readmax(g.nfs), g.reconnect);
	char opts[512];
	snprintf(opts, sizeof(opts), "ro,fsname=nfsfuse:%s:%s,subtype=nfsfuse,max_read=%zu", g.server, g.export,
		 g.max_read);
	char *fargv[] = {argv[0], "-f", "-s", "-o", opts, (char *)mnt, NULL};
	int rc = fuse_main(6, fargv, &ops, NULL);
	nfs_destroy_context(g.nfs);
	return rc;
}
