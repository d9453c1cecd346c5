/*
 * mpifuse standalone launcher: one file system instance per MPI rank.
 *
 *   mpirun -n N mpifuse --mode osr|osr-refined|bcast|passthrough
 *          [--mount-template /path/mnt{rank}] [--max-read BYTES]
 *          [--threads on|off] [--stats-file F] [-o key=value,...]
 *          SOURCE [MOUNTPOINT]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>

#include <mpi.h>
#include "mpifuse.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -n N mpifuse --mode osr|osr-refined|bcast|passthrough\n"
		"              [--mount-template /path/mnt{rank}] [--max-read BYTES]\n"
		"              [--threads on|off] [--stats-file F] [--timeout SEC]\n"
		"              [--mpi-thread multiple|serialized]\n"
		"              [-o key=value[,key=value...]] SOURCE [MOUNTPOINT]\n"
		"MOUNTPOINT (or the template) may contain {rank}; ranks sharing a host need\n"
		"distinct mount points. Stops on SIGTERM/SIGINT/SIGHUP/SIGUSR1 or when any\n"
		"rank's mount is unmounted (fusermount3 -u); then every rank unmounts.\n"
		"Options (-o): see README.md (max_read, threads, keep_cache, splice,\n"
		"timeout, linger, idle_cache, mem_cap, spool, chunk, cache, block,\n"
		"bcast_root=0|rr, bcast_depth, bcast_on_demand, bcast_sync=auto|barrier|none,\n"
		"attr_timeout, allow_other, readahead_kb,\n"
		"poll_us, align, verbose).\n");
}

/* replace every "{rank}" in tmpl by rank */
static void subst_rank(const char *tmpl, int rank, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < len;) {
		if (!strncmp(p, "{rank}", 6)) {
			int n = snprintf(out + o, len - o, "%d", rank);
			o += n > 0 ? (size_t)n : 0;
			p += 6;
		} else {
			out[o++] = *p++;
		}
	}
	out[o < len ? o : len - 1] = 0;
}

int main(int argc, char **argv)
{
	const char *mode = NULL, *tmpl = NULL, *threads = NULL, *stats_file = NULL, *max_read = NULL;
	const char *timeout = NULL;
	int want_level = MPI_THREAD_MULTIPLE;
	char extra[4096] = "";
	static struct option lo[] = {
		{ "mode", required_argument, 0, 'm' },
		{ "mount-template", required_argument, 0, 't' },
		{ "max-read", required_argument, 0, 'r' },
		{ "threads", required_argument, 0, 'T' },
		{ "stats-file", required_argument, 0, 's' },
		{ "timeout", required_argument, 0, 'W' },
		{ "options", required_argument, 0, 'o' },
		{ "mpi-thread", required_argument, 0, 'L' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "m:t:r:T:s:W:o:L:h", lo, NULL)) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 't': tmpl = optarg; break;
		case 'r': max_read = optarg; break;
		case 'T': threads = optarg; break;
		case 's': stats_file = optarg; break;
		case 'W': timeout = optarg; break;
		case 'o':
			if (extra[0])
				strncat(extra, ",", sizeof(extra) - strlen(extra) - 1);
			strncat(extra, optarg, sizeof(extra) - strlen(extra) - 1);
			break;
		case 'L':
			if (!strcmp(optarg, "multiple"))
				want_level = MPI_THREAD_MULTIPLE;
			else if (!strcmp(optarg, "serialized"))
				want_level = MPI_THREAD_SERIALIZED;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	int npos = argc - optind;
	if (!mode || npos < 1 || npos > 2 || (npos == 1 && !tmpl)) {
		usage(stderr);
		return 2;
	}
	const char *source = argv[optind];
	if (npos == 2)
		tmpl = argv[optind + 1]; /* positional mount point wins; may contain {rank} */

	/* signals are taken synchronously by this thread (all threads, including
	 * MPI's and libfuse's, inherit the blocked mask) */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	int prov = 0;
	MPI_Init_thread(&argc, &argv, want_level, &prov);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	char mnt[PATH_MAX];
	subst_rank(tmpl, rank, mnt, sizeof(mnt));

	/* ranks on one host must not share a mount point */
	MPI_Comm node;
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
	int nsize;
	MPI_Comm_size(node, &nsize);
	int bad = 0;
	if (nsize > 1) {
		char *all = calloc((size_t)nsize, PATH_MAX);
		MPI_Allgather(mnt, PATH_MAX, MPI_CHAR, all, PATH_MAX, MPI_CHAR, node);
		for (int i = 0; i < nsize; i++)
			for (int j = i + 1; j < nsize; j++)
				if (!strcmp(all + (size_t)i * PATH_MAX, all + (size_t)j * PATH_MAX))
					bad = 1;
		free(all);
	}
	MPI_Comm_free(&node);
	int anybad = 0;
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (anybad) {
		if (rank == 0)
			fprintf(stderr, "mpifuse: several ranks on one host would share mount point %s; "
					"use a template with {rank}\n", mnt);
		MPI_Finalize();
		return 2;
	}

	char opts[8192];
	snprintf(opts, sizeof(opts), "%s%s%s%s%s%s%s%s%s", max_read ? "max_read=" : "", max_read ? max_read : "",
		 max_read ? "," : "", threads ? "threads=" : "", threads ? threads : "", threads ? "," : "",
		 timeout ? "timeout=" : "", timeout ? timeout : "", timeout ? "," : "");
	strncat(opts, extra, sizeof(opts) - strlen(opts) - 1);

	int h = mpifuse_start(MPI_COMM_WORLD, mode, source, mnt, opts);
	if (h < 0) {
		if (rank == 0)
			fprintf(stderr, "mpifuse: start failed: %s\n", strerror(-h));
		MPI_Finalize();
		return 1;
	}
	printf("mpifuse: rank %d mounted %s at %s\n", rank, mode, mpifuse_mountpoint(h));
	fflush(stdout);

	struct timespec tick = { 0, 200 * 1000 * 1000 };
	for (;;) {
		siginfo_t si;
		int sig = sigtimedwait(&sigs, &si, &tick);
		if (sig > 0) {
			fprintf(stderr, "mpifuse: rank %d: received signal %d, stopping all ranks\n", rank, sig);
			mpifuse_request_shutdown(h);
			break;
		}
		if (mpifuse_should_stop(h) == 1) {
			mpifuse_request_shutdown(h); /* e.g. our mount was unmounted: tell the others */
			break;
		}
	}

	if (stats_file) {
		char path[PATH_MAX];
		subst_rank(stats_file, rank, path, sizeof(path));
		if (!strstr(stats_file, "{rank}") && size > 1) {
			size_t l = strlen(path);
			snprintf(path + l, sizeof(path) - l, ".%d", rank);
		}
		char buf[16384];
		int n = mpifuse_stats_json(h, buf, sizeof(buf));
		FILE *f = fopen(path, "w");
		if (f && n > 0) {
			fprintf(f, "%s\n", buf);
			fclose(f);
		} else {
			fprintf(stderr, "mpifuse: rank %d: cannot write stats file %s: %s\n", rank, path,
				strerror(errno));
			if (f)
				fclose(f);
		}
	}
	int rc = mpifuse_stop(h);
	fprintf(stderr, "mpifuse: rank %d unmounted %s\n", rank, mnt);
	/* enter MPI_Finalize together: with UCX over TCP a rank that exits while
	 * a peer still disconnects makes UCX print "Endpoint timeout" errors */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return rc == 0 ? 0 : 1;
}
