/* mdbench: an mdtest-style MPI metadata benchmark, used where the real mdtest
 * (IOR project) is not installed.  It follows mdtest's phases and flags and
 * prints mdtest's summary format, so one parser reads both:
 *
 *   mdbench -n ITEMS [-w BYTES] [-e BYTES] -d DIR[@DIR...] [-i ITER] [-u] [-F]
 *           [-D] [--dirs] [-C] [-T] [-E] [-r] [-v]
 *
 *   -n  files per task            -w  bytes written into each file at create
 *   -e  bytes read from each file in the read phase
 *   -d  test directory; DIR1@DIR2@... gives task r the directory r % count
 *   -i  iterations                -u  unique working directory per task
 *   -F  files only (the default of mdbench: without --dirs or -D no directory phase runs)
 *   --dirs  directory phases too, before the file phases (mdtest's default without -F)
 *   -D  directory phases only (as mdtest's -D)
 *   -C/-T/-E/-r  only create / stat / read / remove (default: all four)
 *
 * Phases of one iteration (each between two barriers, timed on rank 0, rate =
 * all tasks' items / phase time, as mdtest does): tree creation (the test
 * directory and, with -u, one directory per task), file creation (creat +
 * write -w bytes + close), file stat, file read (open + read -e bytes +
 * close), file removal, tree removal.  With --dirs or -D, directory creation
 * (mkdir), directory stat (stat, must be a directory), directory read (opendir +
 * readdir to the end + closedir), directory rename (rename in place to NAME.renamed,
 * when all phases run, as mdtest's default "Directory rename") and directory removal
 * (rmdir) of -n directories
 * per task run after tree creation and before the file phases, as in mdtest;
 * their rows ("Directory creation" ...) head the summary.  Without either flag
 * the phases and the summary are exactly those of the files-only mdbench.  Any
 * failed call aborts the run (MPI_Abort), as mdtest's FAIL does.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MAXP 4096
#define MAXDIRS 4096

enum { P_TREE_CREATE, P_CREATE, P_STAT, P_READ, P_REMOVE, P_TREE_REMOVE,
       P_DCREATE, P_DSTAT, P_DREAD, P_DRENAME, P_DREMOVE, NPHASE };

static int rank, size;
static long items = 0;
static long wbytes = 0, rbytes = 0;
static int iterations = 1, unique = 0, verbose = 0;
static int do_dirs = 0, do_files = 1; /* --dirs: both; -D: directories only */
static int do_create, do_stat, do_read, do_remove;
static int do_rename;   /* directory rename: on when every phase runs (mdtest's default without -F) */
static int renamed;     /* the directories of this iteration carry the renamed name */
static char *paths[MAXDIRS];
static int path_count = 0;
static char *wbuf, *rbuf;

static void fail(const char *what, const char *path)
{
    fprintf(stderr, "mdbench: rank %d: %s %s: %s\n", rank, what, path ? path : "", strerror(errno));
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void pathfit(int n, size_t cap, const char *what)
{
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        fail("path too long:", what);
    }
}

static double now(void)
{
    return MPI_Wtime();
}

static void testdir(char *out, size_t cap, int iter)
{
    pathfit(snprintf(out, cap, "%s/test-dir.%d-0", paths[rank % path_count], iter), cap, paths[rank % path_count]);
}

static void taskdir(char *out, size_t cap, int iter)
{
    char td[MAXP];
    testdir(td, sizeof td, iter);
    if (unique)
        pathfit(snprintf(out, cap, "%s/mdtest_tree.%d.0", td, rank), cap, td);
    else
        pathfit(snprintf(out, cap, "%s/mdtest_tree.0", td), cap, td);
}

static void filename(char *out, size_t cap, int iter, long i)
{
    char d[MAXP];
    taskdir(d, sizeof d, iter);
    pathfit(snprintf(out, cap, "%s/file.mdtest.%d.%ld", d, rank, i), cap, d);
}

static void dirname_of(char *out, size_t cap, int iter, long i)
{
    char d[MAXP];
    taskdir(d, sizeof d, iter);
    pathfit(snprintf(out, cap, renamed ? "%s/dir.mdtest.%d.%ld.renamed" : "%s/dir.mdtest.%d.%ld", d, rank, i),
            cap, d);
}

/* The per-item phases: each item's path (a file or a directory of this task) and the calls on it. */
static void create_file(const char *p)
{
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) fail("create", p);
    for (long done = 0; done < wbytes;) {
        ssize_t n = write(fd, wbuf + done, (size_t)(wbytes - done));
        if (n <= 0) fail("write", p);
        done += n;
    }
    if (close(fd)) fail("close", p);
}

static void stat_file(const char *p)
{
    struct stat st;
    if (stat(p, &st)) fail("stat", p);
    if (st.st_size != wbytes) {
        errno = EIO;
        fail("stat: wrong size of", p);
    }
}

static void read_file(const char *p)
{
    int fd = open(p, O_RDONLY);
    if (fd < 0) fail("open", p);
    for (long done = 0; done < rbytes;) {
        ssize_t n = read(fd, rbuf + done, (size_t)(rbytes - done));
        if (n < 0) fail("read", p);
        if (n == 0) break;
        done += n;
    }
    if (close(fd)) fail("close", p);
}

static void remove_file(const char *p)
{
    if (unlink(p)) fail("unlink", p);
}

static void create_dir(const char *p)
{
    if (mkdir(p, 0755)) fail("mkdir", p);
}

static void stat_dir(const char *p)
{
    struct stat st;
    if (stat(p, &st)) fail("stat", p);
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        fail("stat: not a directory:", p);
    }
}

static void read_dir(const char *p)
{
    DIR *dp = opendir(p);
    if (!dp) fail("opendir", p);
    errno = 0;
    while (readdir(dp)) {
    }
    if (errno) fail("readdir", p);
    if (closedir(dp)) fail("closedir", p);
}

static void remove_dir(const char *p)
{
    if (rmdir(p)) fail("rmdir", p);
}

static const struct {
    void (*path)(char *out, size_t cap, int iter, long i);
    void (*call)(const char *p);
} per_item[NPHASE] = {
    [P_CREATE] = { filename, create_file },  [P_STAT] = { filename, stat_file },
    [P_READ] = { filename, read_file },      [P_REMOVE] = { filename, remove_file },
    [P_DCREATE] = { dirname_of, create_dir }, [P_DSTAT] = { dirname_of, stat_dir },
    [P_DREAD] = { dirname_of, read_dir },    [P_DREMOVE] = { dirname_of, remove_dir },
};

static double phase(int which, int iter)
{
    char p[MAXP];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    switch (which) {
    case P_TREE_CREATE:
        if (rank < path_count || !unique) {
            /* the first task of each path creates the shared test directory */
            if (rank < path_count) {
                testdir(p, sizeof p, iter);
                if (mkdir(p, 0755) && errno != EEXIST) fail("mkdir", p);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (unique || rank == 0) {
            taskdir(p, sizeof p, iter);
            if (mkdir(p, 0755) && errno != EEXIST) fail("mkdir", p);
        }
        break;
    case P_DRENAME:
        /* each task renames its own directories in place (mdtest's "Directory rename"); the
           removal phase then removes them under their new names */
        for (long i = 0; i < items; i++) {
            char to[MAXP];
            renamed = 0;
            dirname_of(p, sizeof p, iter, i);
            renamed = 1;
            dirname_of(to, sizeof to, iter, i);
            if (rename(p, to)) fail("rename", p);
        }
        renamed = 1;
        break;
    case P_TREE_REMOVE:
        if (unique || rank == 0) {
            taskdir(p, sizeof p, iter);
            if (rmdir(p)) fail("rmdir", p);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < path_count) {
            testdir(p, sizeof p, iter);
            if (rmdir(p) && errno != ENOENT) fail("rmdir", p);
        }
        break;
    default: /* a per-item phase */
        for (long i = 0; i < items; i++) {
            per_item[which].path(p, sizeof p, iter, i);
            per_item[which].call(p);
        }
        break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return now() - t0;
}

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: mdbench -n ITEMS [-w BYTES] [-e BYTES] -d DIR[@DIR...] [-i ITER] "
                        "[-u] [-F] [-D] [--dirs] [-C] [-T] [-E] [-r] [-v]\n");
    MPI_Finalize();
    exit(2);
}

static void stats(const double *v, int n, double *mx, double *mn, double *mean, double *sd)
{
    double s = 0, var = 0;
    *mx = *mn = v[0];
    for (int i = 0; i < n; i++) {
        if (v[i] > *mx) *mx = v[i];
        if (v[i] < *mn) *mn = v[i];
        s += v[i];
    }
    *mean = s / n;
    for (int i = 0; i < n; i++) var += (v[i] - *mean) * (v[i] - *mean);
    *sd = sqrt(var / n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *dirarg = NULL;
    int opt;
    static const struct option longopts[] = { { "dirs", no_argument, NULL, 1 }, { NULL, 0, NULL, 0 } };
    int files_only = 0, dirs_only = 0;
    while ((opt = getopt_long(argc, argv, "n:w:e:d:i:uFDCTErvz:b:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': items = atol(optarg); break;
        case 'w': wbytes = atol(optarg); break;
        case 'e': rbytes = atol(optarg); break;
        case 'd': dirarg = strdup(optarg); break;
        case 'i': iterations = atoi(optarg); break;
        case 'u': unique = 1; break;
        case 'F': files_only = 1; break;
        case 'D': dirs_only = 1; break;
        case 1: do_dirs = 1; break;
        case 'C': do_create = 1; break;
        case 'T': do_stat = 1; break;
        case 'E': do_read = 1; break;
        case 'r': do_remove = 1; break;
        case 'v': verbose++; break;
        case 'z': if (atoi(optarg) != 0) usage(); break; /* only depth 0 */
        case 'b': break;
        default: usage();
        }
    }
    if (!dirarg || items <= 0 || iterations <= 0) usage();
    if (files_only && (dirs_only || do_dirs)) {
        if (rank == 0) fprintf(stderr, "mdbench: -F (files only) contradicts %s\n", dirs_only ? "-D" : "--dirs");
        MPI_Finalize();
        exit(2);
    }
    if (dirs_only) do_dirs = 1, do_files = 0;
    if (!do_create && !do_stat && !do_read && !do_remove) do_create = do_stat = do_read = do_remove = do_rename = 1;
    for (char *s = strtok(dirarg, "@"); s && path_count < MAXDIRS; s = strtok(NULL, "@")) paths[path_count++] = s;
    if (path_count > size) {
        if (rank == 0) fprintf(stderr, "mdbench: cannot have more directory paths than MPI tasks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (path_count > 1 && !unique) {
        if (rank == 0) fprintf(stderr, "mdbench: shared directory mode is not compatible with multiple directory paths\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    wbuf = malloc((size_t)wbytes + 1);
    rbuf = malloc((size_t)rbytes + 1);
    memset(wbuf, 'x', (size_t)wbytes + 1);

    /* nodes: distinct processor names */
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int nl;
    MPI_Get_processor_name(name, &nl);
    char *all = rank == 0 ? calloc((size_t)size, MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    int nodes = 0;
    if (rank == 0) {
        for (int i = 0; i < size; i++) {
            int seen = 0;
            for (int j = 0; j < i; j++)
                if (!strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME, all + (size_t)j * MPI_MAX_PROCESSOR_NAME)) seen = 1;
            nodes += !seen;
        }
        time_t t = time(NULL);
        char ts[64];
        strftime(ts, sizeof ts, "%m/%d/%Y %H:%M:%S", localtime(&t));
        printf("-- started at %s --\n\n", ts);
        printf("mdbench-1.0 was launched with %d total task(s) on %d node(s)\n", size, nodes);
        printf("(systems/mtc/mdbench: mdtest-style phases, mdtest-3.3 summary format)\n");
        printf("Command line used:");
        for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
        printf("\nPath: %s\n", paths[0]);
        struct statvfs sv;
        if (statvfs(paths[0], &sv) == 0) {
            double tot = (double)sv.f_blocks * sv.f_frsize / (1 << 30);
            double used = sv.f_blocks ? 100.0 * (1 - (double)sv.f_bfree / sv.f_blocks) : 0;
            double ino = (double)sv.f_files / (1 << 20);
            double iused = sv.f_files ? 100.0 * (1 - (double)sv.f_ffree / sv.f_files) : 0;
            printf("FS: %.1f GiB   Used FS: %2.1f%%   Inodes: %.1f Mi   Used Inodes: %2.1f%%\n", tot, used, ino, iused);
        }
        if (do_dirs && do_files)
            printf("\n%d tasks, %ld files/directories\n", size, items * size);
        else if (do_dirs)
            printf("\n%d tasks, %ld directories\n", size, items * size);
        else
            printf("\n%d tasks, %ld files\n", size, items * size);
        fflush(stdout);
    }

    double *rate = calloc((size_t)iterations * NPHASE, sizeof *rate);
    for (int it = 0; it < iterations; it++) {
        double t;
        renamed = 0;
        t = phase(P_TREE_CREATE, it);
        rate[it * NPHASE + P_TREE_CREATE] = (unique ? size : 1) / t;
        if (do_dirs) {
            static const struct { int phase; int *on; } dp[] = {
                { P_DCREATE, &do_create }, { P_DSTAT, &do_stat }, { P_DREAD, &do_read }, { P_DRENAME, &do_rename },
                { P_DREMOVE, &do_remove } };
            for (size_t k = 0; k < sizeof dp / sizeof dp[0]; k++) {
                if (!*dp[k].on) continue;
                t = phase(dp[k].phase, it);
                rate[it * NPHASE + dp[k].phase] = items * size / t;
            }
        }
        if (do_files && do_create) {
            t = phase(P_CREATE, it);
            rate[it * NPHASE + P_CREATE] = items * size / t;
        }
        if (do_files && do_stat) {
            t = phase(P_STAT, it);
            rate[it * NPHASE + P_STAT] = items * size / t;
        }
        if (do_files && do_read) {
            t = phase(P_READ, it);
            rate[it * NPHASE + P_READ] = items * size / t;
        }
        if (do_remove) {
            if (do_files) {
                t = phase(P_REMOVE, it);
                rate[it * NPHASE + P_REMOVE] = items * size / t;
            }
            t = phase(P_TREE_REMOVE, it);
            rate[it * NPHASE + P_TREE_REMOVE] = (unique ? size : 1) / t;
        }
        if (rank == 0 && verbose)
            printf("V-1: iteration %d: create %.3f stat %.3f read %.3f remove %.3f ops/s\n", it + 1,
                   rate[it * NPHASE + P_CREATE], rate[it * NPHASE + P_STAT], rate[it * NPHASE + P_READ],
                   rate[it * NPHASE + P_REMOVE]);
    }

    if (rank == 0) {
        static const struct { int phase; const char *label; int *on; } drows[] = {
            { P_DCREATE, "Directory creation        :", &do_create },
            { P_DSTAT, "Directory stat            :", &do_stat },
            { P_DREAD, "Directory read            :", &do_read },
            { P_DRENAME, "Directory rename          :", &do_rename },
            { P_DREMOVE, "Directory removal         :", &do_remove },
        };
        static const struct { int phase; const char *label; int *on; } rows[] = {
            { P_CREATE, "File creation             :", &do_create },
            { P_STAT, "File stat                 :", &do_stat },
            { P_READ, "File read                 :", &do_read },
            { P_REMOVE, "File removal              :", &do_remove },
            { P_TREE_CREATE, "Tree creation             :", NULL },
            { P_TREE_REMOVE, "Tree removal              :", &do_remove },
        };
        printf("\nSUMMARY rate: (of %d iterations)\n", iterations);
        printf("   Operation                      Max            Min           Mean        Std Dev\n");
        printf("   ---------                      ---            ---           ----        -------\n");
        double v[iterations];
        for (size_t r = 0; do_dirs && r < sizeof drows / sizeof drows[0]; r++) {
            double mx, mn, mean, sd;
            for (int it = 0; it < iterations; it++) v[it] = rate[it * NPHASE + drows[r].phase];
            if (!*drows[r].on)
                mx = mn = mean = sd = 0;
            else
                stats(v, iterations, &mx, &mn, &mean, &sd);
            printf("   %s %14.3f %14.3f %14.3f %14.3f\n", drows[r].label, mx, mn, mean, sd);
        }
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            double mx, mn, mean, sd;
            if (!do_files && rows[r].phase != P_TREE_CREATE && rows[r].phase != P_TREE_REMOVE) continue;
            for (int it = 0; it < iterations; it++) v[it] = rate[it * NPHASE + rows[r].phase];
            if (rows[r].on && !*rows[r].on) {
                mx = mn = mean = sd = 0;
            } else {
                stats(v, iterations, &mx, &mn, &mean, &sd);
            }
            printf("   %s %14.3f %14.3f %14.3f %14.3f\n", rows[r].label, mx, mn, mean, sd);
        }
        time_t t = time(NULL);
        char ts[64];
        strftime(ts, sizeof ts, "%m/%d/%Y %H:%M:%S", localtime(&t));
        printf("\n-- finished at %s --\n\n", ts);
        fflush(stdout);
    }
    free(rate);
    free(wbuf);
    free(rbuf);
    free(dirarg);
    free(all);
    MPI_Finalize();
    return 0;
}
