/* fuseuring: FUSE over io_uring for a libfuse 3.14 low-level file system
 * (see fuseuring.h).  Written from the kernel's uAPI (include/uapi/linux/fuse.h
 * >= 7.42, fs/fuse/dev_uring.c, Documentation/filesystems/fuse-io-uring.rst);
 * liburing 2.3 (Debian 12) has IORING_OP_URING_CMD and SQE128 but no
 * io_uring_prep_cmd helper, so the command SQEs are filled by hand here. */
#define _GNU_SOURCE
#include "fuseuring.h"

#include <errno.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---- kernel uAPI (Debian 12's linux/fuse.h is 7.38, these are 7.42+) ---- */
#define FU_OVER_IO_URING (1ULL << 41) /* flags2 bit 9 of INIT */
#define FU_IN_OUT_HEADER_SZ 128
#define FU_OP_IN_OUT_SZ 128
#define FU_CMD_REGISTER 1
#define FU_CMD_COMMIT_AND_FETCH 2

struct fu_ent_in_out {
    uint64_t flags;
    uint64_t commit_id; /* to be echoed in the commit */
    uint32_t payload_sz;
    uint32_t padding;
    uint64_t reserved;
};

struct fu_req_header {
    char in_out[FU_IN_OUT_HEADER_SZ]; /* fuse_in_header on fetch, fuse_out_header on commit */
    char op_in[FU_OP_IN_OUT_SZ];      /* the request's first argument (per-op header) */
    struct fu_ent_in_out ring_ent_in_out;
};

struct fu_cmd_req { /* in the SQE128's 80-byte command area */
    uint64_t flags;
    uint64_t commit_id;
    uint16_t qid;
    uint8_t padding[6];
};

_Static_assert(sizeof(struct fu_req_header) == 288, "fuse_uring_req_header is 288 bytes");
_Static_assert(sizeof(struct fu_cmd_req) == 24, "fuse_uring_cmd_req is 24 bytes");
_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct fuse_out_header) == 16, "fuse_out_header");

#define HEADROOM 4096 /* room in front of the payload for in_header + op_in */
#define MIN_PAYLOAD 8192 /* FUSE_MIN_READ_BUFFER */

struct ent {
    struct fu_req_header *hdr;
    char *payload; /* registered payload buffer (HEADROOM bytes precede it) */
    struct queue *q;
    uint64_t unique;
    int replied;
    struct iovec iov[2];
};

struct queue { /* one worker thread: its own ring, entries on kernel queue qid */
    struct fuseuring *u;
    unsigned qid;
    int pin;
    pthread_t thr;
    int started;
    struct io_uring ring;
    struct ent *ents;
    int reg_err;     /* 0, or -errno of the first failed step */
    const char *reg_step;
    uint64_t reqs;
    uint64_t errors;
    unsigned pending; /* entries the kernel holds (registered, or committed and fetching) */
    int alive;        /* fuseuring_stop could not join it */
};

struct fuseuring {
    struct fuse_session *se;
    int fd;
    int want;
    int offered;   /* the kernel offered FUSE_OVER_IO_URING at INIT */
    int accepted;  /* our INIT reply said yes */
    int active;
    unsigned nq, depth;
    unsigned tpq, nt; /* threads (rings) per queue, and in all */
    size_t payload_sz;
    uint64_t init_unique;
    uint32_t max_write;
    uint16_t max_pages;
    volatile int stop;
    sem_t ready;
    struct queue *qs;
    char param; /* enable_uring at start */
    uint64_t dev_reqs, dev_rw; /* requests read from /dev/fuse (all; READ and WRITE) */
    char msg[512];
};

static __thread struct ent *cur_ent; /* the ring entry this thread is answering */
static struct fuseuring *the_u;      /* for the custom I/O callbacks (se->userdata is the fs's) */

char fuseuring_param(void)
{
    FILE *f = fopen("/sys/module/fuse/parameters/enable_uring", "r");
    int c = f ? fgetc(f) : EOF;
    if (f) fclose(f);
    return c == 'Y' || c == 'N' ? (char)c : '?';
}

/* ---------------------------------------------------------- custom I/O */
static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    ssize_t n = read(fd, buf, len);
    struct fuseuring *u = the_u;
    if (u && n >= (ssize_t)sizeof(struct fuse_in_header)) {
        const struct fuse_in_header *ih = buf;
        __atomic_add_fetch(&u->dev_reqs, 1, __ATOMIC_RELAXED);
        if (ih->opcode == FUSE_READ || ih->opcode == FUSE_WRITE) __atomic_add_fetch(&u->dev_rw, 1, __ATOMIC_RELAXED);
        if (ih->opcode == FUSE_INIT &&
            (size_t)n >= sizeof *ih + offsetof(struct fuse_init_in, flags2) + sizeof(uint32_t)) {
            const struct fuse_init_in *in = (const void *)(ih + 1);
            u->init_unique = ih->unique;
            u->offered = (in->flags & FUSE_INIT_EXT) && (in->flags2 & (uint32_t)(FU_OVER_IO_URING >> 32));
        }
    }
    return n;
}

static ssize_t io_splice_receive(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                 unsigned flags, void *userdata)
{
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}

static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                              unsigned flags, void *userdata)
{
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}

/* copy `skip`.. of the iovec stream into dst (at most cap bytes); returns bytes copied */
static size_t gather(char *dst, size_t cap, const struct iovec *iov, int count, size_t skip)
{
    size_t got = 0;
    for (int i = 0; i < count; i++) {
        size_t l = iov[i].iov_len;
        const char *p = iov[i].iov_base;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        p += skip;
        l -= skip;
        skip = 0;
        if (l > cap - got) l = cap - got;
        memcpy(dst + got, p, l);
        got += l;
    }
    return got;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    (void)userdata;
    struct fuseuring *u = the_u;
    size_t total = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    struct ent *e = cur_ent;
    if (e && !e->replied && total >= sizeof(struct fuse_out_header)) {
        struct fuse_out_header oh;
        gather((char *)&oh, sizeof oh, iov, count, 0);
        if (oh.unique == e->unique) {
            size_t body = total - sizeof oh;
            if (body > e->q->u->payload_sz) { /* cannot happen: requests are capped by the payload size */
                oh.error = -EIO;
                oh.len = sizeof oh;
                body = 0;
            } else {
                gather(e->payload, body, iov, count, sizeof oh);
            }
            memcpy(e->hdr->in_out, &oh, sizeof oh);
            e->hdr->ring_ent_in_out.payload_sz = (uint32_t)body;
            e->replied = 1;
            return (ssize_t)total;
        }
    }
    if (u && u->init_unique && count >= 2 && iov[0].iov_len == sizeof(struct fuse_out_header)) {
        struct fuse_out_header *oh = iov[0].iov_base;
        if (oh->unique == u->init_unique && oh->error == 0 &&
            iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t)) {
            struct fuse_init_out *o = iov[1].iov_base;
            if (u->want && u->offered) { /* libfuse 3.14 has no word for it: say yes ourselves */
                o->flags |= FUSE_INIT_EXT;
                o->flags2 |= (uint32_t)(FU_OVER_IO_URING >> 32);
                u->accepted = 1;
            }
            u->max_write = o->max_write;
            u->max_pages = (o->flags & FUSE_MAX_PAGES) ? o->max_pages : 32;
            u->init_unique = 0;
        }
    }
    return writev(fd, iov, count);
}

static const struct fuse_custom_io IO = {
    .writev = io_writev,
    .read = io_read,
    .splice_receive = io_splice_receive,
    .splice_send = io_splice_send,
};

/* ---------------------------------------------------------- the queues */
static void prep_cmd(struct io_uring_sqe *sqe, int fd, unsigned op, unsigned qid, uint64_t commit_id,
                     const struct iovec *iov, unsigned nr, void *data)
{
    io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, iov, nr, 0);
    sqe->cmd_op = op; /* shares the word of `off` */
    struct fu_cmd_req *r = (struct fu_cmd_req *)(void *)sqe->cmd;
    memset(sqe->cmd, 0, 80);
    r->qid = (uint16_t)qid;
    r->commit_id = commit_id;
    io_uring_sqe_set_data(sqe, data);
}

static void handle(struct queue *q, struct ent *e)
{
    struct fuseuring *u = q->u;
    struct fuse_in_header ih;
    memcpy(&ih, e->hdr->in_out, sizeof ih);
    uint32_t psz = e->hdr->ring_ent_in_out.payload_sz;
    uint64_t commit_id = e->hdr->ring_ent_in_out.commit_id;
    e->unique = ih.unique;
    e->replied = 0;
    size_t head = sizeof ih;
    if (ih.len >= head + psz && ih.len - head - psz <= FU_OP_IN_OUT_SZ && psz <= u->payload_sz) {
        size_t opsz = ih.len - head - psz; /* the per-op header's size (0 for LOOKUP, UNLINK...) */
        char *start = e->payload - head - opsz; /* rebuild the /dev/fuse layout in front of the payload */
        memcpy(start, &ih, head);
        memcpy(start + head, e->hdr->op_in, opsz);
        struct fuse_buf fb = {.size = ih.len, .mem = start};
        cur_ent = e;
        fuse_session_process_buf(u->se, &fb);
        cur_ent = NULL;
    }
    if (!e->replied) { /* malformed, or the file system did not answer inside the callback */
        struct fuse_out_header oh = {.len = sizeof oh, .error = -EIO, .unique = ih.unique};
        memcpy(e->hdr->in_out, &oh, sizeof oh);
        e->hdr->ring_ent_in_out.payload_sz = 0;
        __atomic_add_fetch(&q->errors, 1, __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(&q->reqs, 1, __ATOMIC_RELAXED);
    struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
    if (!sqe) { /* the SQ holds depth entries: cannot be full here, but be safe */
        io_uring_submit(&q->ring);
        sqe = io_uring_get_sqe(&q->ring);
    }
    prep_cmd(sqe, u->fd, FU_CMD_COMMIT_AND_FETCH, q->qid, commit_id, NULL, 0, e);
}

static void *queue_main(void *arg)
{
    struct queue *q = arg;
    struct fuseuring *u = q->u;
    int signalled = 0, err;
    cpu_set_t cs;
    /* requests are queued on the queue of the CPU the caller runs on: serve them there */
    if (q->pin && sched_getaffinity(0, sizeof cs, &cs) == 0 && CPU_ISSET(q->qid, &cs)) {
        CPU_ZERO(&cs);
        CPU_SET(q->qid, &cs);
        pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    }
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    err = io_uring_queue_init_params(u->depth, &q->ring, &p);
    if (err == -EINVAL) { /* a kernel without DEFER_TASKRUN: SQE128 is what FUSE needs */
        memset(&p, 0, sizeof p);
        p.flags = IORING_SETUP_SQE128;
        err = io_uring_queue_init_params(u->depth, &q->ring, &p);
    }
    if (err) {
        q->reg_err = err;
        q->reg_step = "io_uring_setup(SQE128)";
        sem_post(&u->ready);
        return NULL;
    }
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    q->ents = calloc(u->depth, sizeof *q->ents);
    for (unsigned i = 0; q->ents && i < u->depth; i++) {
        struct ent *e = &q->ents[i];
        char *m = mmap(NULL, ps + HEADROOM + u->payload_sz, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (m == MAP_FAILED) {
            q->reg_err = -errno;
            q->reg_step = "mmap of the ring buffers";
            sem_post(&u->ready);
            return NULL;
        }
        e->hdr = (struct fu_req_header *)(void *)m;
        e->payload = m + ps + HEADROOM;
        e->q = q;
        e->iov[0] = (struct iovec){e->hdr, sizeof *e->hdr};
        e->iov[1] = (struct iovec){e->payload, u->payload_sz};
        struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
        prep_cmd(sqe, u->fd, FU_CMD_REGISTER, q->qid, 0, e->iov, 2, e);
    }
    if (!q->ents) {
        q->reg_err = -ENOMEM;
        q->reg_step = "calloc";
        sem_post(&u->ready);
        return NULL;
    }
    err = io_uring_submit(&q->ring);
    if (err < 0) {
        q->reg_err = err;
        q->reg_step = "io_uring_enter(FUSE_IO_URING_CMD_REGISTER)";
        sem_post(&u->ready);
        return NULL;
    }
    q->pending = u->depth;
    /* a refused REGISTER completes at once with -errno; an accepted one stays pending until a
     * request arrives for it */
    while (!u->stop) {
        struct io_uring_cqe *cqe;
        if (!signalled) {
            if (io_uring_sq_ready(&q->ring)) io_uring_submit(&q->ring); /* commits of early requests */
            /* a refused command completes inline, within the submit: 20 ms is a margin */
            struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
            err = io_uring_wait_cqe_timeout(&q->ring, &cqe, &ts);
            if (err == -ETIME) {
                signalled = 1;
                sem_post(&u->ready);
                continue;
            }
        } else {
            err = io_uring_submit_and_wait(&q->ring, 1);
            if (err < 0 && err != -EINTR && err != -EAGAIN && err != -EBUSY) break;
            err = io_uring_peek_cqe(&q->ring, &cqe);
            if (err == -EAGAIN) continue;
        }
        if (err == -EINTR) continue;
        if (err < 0) break;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&q->ring, head, cqe) {
            n++;
            struct ent *e = io_uring_cqe_get_data(cqe);
            if (cqe->res < 0) {
                /* a refused REGISTER, -ENOTCONN/-ECONNABORTED at unmount, or a refused commit: the
                 * kernel no longer holds this entry; the thread serves the others while any remain
                 * (a queue with some entries registered gets requests: nobody may leave them) */
                if (!signalled && !q->reg_err) {
                    q->reg_err = cqe->res;
                    q->reg_step = "FUSE_IO_URING_CMD_REGISTER";
                } else if (signalled && cqe->res != -ENOTCONN && cqe->res != -ECONNABORTED &&
                           cqe->res != -ECANCELED) {
                    __atomic_add_fetch(&q->errors, 1, __ATOMIC_RELAXED);
                }
                q->pending--;
                continue;
            }
            if (!signalled) { /* a request already: the registration took */
                signalled = 1;
                sem_post(&u->ready);
            }
            handle(q, e);
        }
        io_uring_cq_advance(&q->ring, n);
        if (q->pending == 0) break;
    }
    if (!signalled) sem_post(&u->ready);
    return NULL;
}

static unsigned possible_cpus(void)
{
    /* the kernel makes one queue per possible CPU and a ring is ready only when all have entries */
    FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
    unsigned hi = 0, a, b;
    char c;
    if (f) {
        while (fscanf(f, "%u", &a) == 1) {
            b = a;
            if (fscanf(f, "%c", &c) == 1 && c == '-' && fscanf(f, "%u", &b) == 1) {
                if (fscanf(f, "%c", &c) != 1) c = 0;
            }
            if (b + 1 > hi) hi = b + 1;
            if (c != ',') break;
        }
        fclose(f);
    }
    return hi ? hi : (unsigned)get_nprocs_conf();
}

static void on_sigusr(int s) { (void)s; }

struct fuseuring *fuseuring_start(struct fuse_session *se, int want, unsigned depth)
{
    struct fuseuring *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->se = se;
    u->want = want;
    u->fd = fuse_session_fd(se);
    u->depth = depth ? depth : 4;
    u->param = fuseuring_param();
    the_u = u;
    snprintf(u->msg, sizeof u->msg, "transport=dev-fuse");
    if (!want) return u;
    if (fuse_session_custom_io(se, &IO, u->fd) != 0) {
        snprintf(u->msg, sizeof u->msg, "io_uring refused at fuse_session_custom_io: serving through /dev/fuse reads");
        return u;
    }
    /* INIT, here (not in the loop), so the queues exist before the first file request */
    struct fuse_buf buf = {.mem = NULL};
    int r = fuse_session_receive_buf(se, &buf);
    if (r > 0) fuse_session_process_buf(se, &buf);
    free(buf.mem);
    if (r <= 0 || fuse_session_exited(se)) {
        snprintf(u->msg, sizeof u->msg, "io_uring: no INIT from the kernel (%s); serving through /dev/fuse reads",
                 r < 0 ? strerror(-r) : "end of file");
        return u;
    }
    if (!u->offered) {
        snprintf(u->msg, sizeof u->msg,
                 "io_uring not available: the kernel did not offer FUSE_OVER_IO_URING at INIT "
                 "(/sys/module/fuse/parameters/enable_uring=%c%s); serving through /dev/fuse reads",
                 u->param, u->param == 'N' ? ", set it to Y as root" : u->param == '?' ? ": no such parameter, "
                 "a kernel without CONFIG_FUSE_IO_URING" : "");
        return u;
    }
    if (!u->accepted) {
        snprintf(u->msg, sizeof u->msg, "io_uring: INIT reply not amended (libfuse answered an error); "
                 "serving through /dev/fuse reads");
        return u;
    }
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    size_t pl = (size_t)u->max_pages * ps;
    if (pl < u->max_write) pl = u->max_write;
    if (pl < MIN_PAYLOAD) pl = MIN_PAYLOAD;
    u->payload_sz = (pl + ps - 1) / ps * ps;
    const char *t = getenv("FUSEURING_TEST_PAYLOAD"); /* tests: a size the kernel must refuse */
    if (t && atol(t) > 0) u->payload_sz = (size_t)atol(t);
    u->nq = possible_cpus();
    /* FUSEURING_THREADS_PER_QUEUE=T: T threads (rings) register entries on each queue; the first is
     * pinned to the queue's CPU, the others float, so one CPU's requests can be answered on another */
    const char *tq = getenv("FUSEURING_THREADS_PER_QUEUE");
    u->tpq = tq && atoi(tq) > 0 && atoi(tq) <= 64 ? (unsigned)atoi(tq) : 1;
    u->nt = u->nq * u->tpq;
    u->qs = calloc(u->nt, sizeof *u->qs);
    if (!u->qs) return u;
    sem_init(&u->ready, 0, 0);
    struct sigaction sa = {.sa_handler = on_sigusr};
    sigaction(SIGUSR2, &sa, NULL); /* no SA_RESTART: wakes a queue thread out of io_uring_enter */
    unsigned started = 0;
    int nopin = getenv("FUSEURING_NOPIN") != NULL;
    for (unsigned q = 0; q < u->nt; q++) {
        u->qs[q].u = u;
        u->qs[q].qid = q / u->tpq;
        u->qs[q].pin = !nopin && q % u->tpq == 0;
        if (pthread_create(&u->qs[q].thr, NULL, queue_main, &u->qs[q]) == 0) {
            u->qs[q].started = 1;
            started++;
        } else {
            u->qs[q].reg_err = -EAGAIN;
            u->qs[q].reg_step = "pthread_create";
        }
    }
    for (unsigned q = 0; q < started; q++) sem_wait(&u->ready);
    for (unsigned q = 0; q < u->nt; q++) {
        if (u->qs[q].reg_err) {
            snprintf(u->msg, sizeof u->msg,
                     "io_uring refused: queue %u of %u, step %s: errno %d (%s); serving through /dev/fuse reads",
                     u->qs[q].qid, u->nq, u->qs[q].reg_step, -u->qs[q].reg_err, strerror(-u->qs[q].reg_err));
            return u;
        }
    }
    u->active = 1;
    if (u->tpq == 1)
        snprintf(u->msg, sizeof u->msg, "transport=io_uring: %u queues x %u entries, payload %zu bytes", u->nq,
                 u->depth, u->payload_sz);
    else
        snprintf(u->msg, sizeof u->msg,
                 "transport=io_uring: %u queues x %u threads x %u entries, payload %zu bytes", u->nq, u->tpq,
                 u->depth, u->payload_sz);
    return u;
}

int fuseuring_active(const struct fuseuring *u) { return u && u->active; }

const char *fuseuring_message(const struct fuseuring *u) { return u ? u->msg : "transport=dev-fuse"; }

int fuseuring_json(const struct fuseuring *u, char *buf, size_t cap)
{
    if (!u) u = the_u; /* requests can be served before fuseuring_start returns */
    unsigned long long reqs = 0, errs = 0;
    for (unsigned q = 0; u && u->qs && q < u->nt; q++) {
        reqs += __atomic_load_n(&u->qs[q].reqs, __ATOMIC_RELAXED);
        errs += __atomic_load_n(&u->qs[q].errors, __ATOMIC_RELAXED);
    }
    char esc[sizeof u->msg * 2];
    size_t k = 0;
    for (const char *p = fuseuring_message(u); *p && k + 2 < sizeof esc; p++) {
        if (*p == '"' || *p == '\\') esc[k++] = '\\';
        esc[k++] = *p;
    }
    esc[k] = 0;
    return snprintf(buf, cap,
                    "{\"transport\":\"%s\",\"requested\":%d,\"offered\":%d,\"queues\":%u,\"threads_per_queue\":%u,"
                    "\"depth\":%u,"
                    "\"payload\":%zu,\"ring_reqs\":%llu,\"ring_errors\":%llu,\"dev_reqs\":%llu,"
                    "\"dev_rw_reqs\":%llu,\"enable_uring\":\"%c\","
                    "\"message\":\"%s\"}",
                    fuseuring_active(u) || reqs ? "io_uring" : "dev-fuse", u ? u->want : 0, u ? u->offered : 0,
                    u && u->qs ? u->nq : 0, u && u->qs ? u->tpq : 0, u ? u->depth : 0, u ? u->payload_sz : 0, reqs, errs,
                    u ? (unsigned long long)__atomic_load_n(&u->dev_reqs, __ATOMIC_RELAXED) : 0ULL,
                    u ? (unsigned long long)__atomic_load_n(&u->dev_rw, __ATOMIC_RELAXED) : 0ULL,
                    u ? u->param : fuseuring_param(), esc);
}

void fuseuring_stop(struct fuseuring *u)
{
    if (!u) return;
    u->stop = 1;
    for (unsigned q = 0; u->qs && q < u->nt; q++) {
        if (!u->qs[q].started) continue;
        struct timespec t;
        int joined = 0;
        for (int tries = 0; tries < 20 && !joined; tries++) { /* after unmount the kernel ends the commands */
            pthread_kill(u->qs[q].thr, SIGUSR2);
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_nsec += 50 * 1000 * 1000;
            if (t.tv_nsec >= 1000000000) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000;
            }
            joined = pthread_timedjoin_np(u->qs[q].thr, NULL, &t) == 0;
        }
        u->qs[q].started = 0;
        u->qs[q].alive = !joined; /* fuseuring_free leaves what a thread still running uses */
    }
}

void fuseuring_free(struct fuseuring *u)
{
    if (!u) return;
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    int alive = 0;
    for (unsigned q = 0; u->qs && q < u->nt; q++) alive |= u->qs[q].started || u->qs[q].alive;
    if (alive) return; /* a queue thread did not end: its ring and buffers stay (leaked, not freed) */
    for (unsigned q = 0; u->qs && q < u->nt; q++) {
        struct queue *qu = &u->qs[q];
        if (!qu->ents) continue;
        for (unsigned i = 0; i < u->depth; i++)
            if (qu->ents[i].hdr) munmap(qu->ents[i].hdr, ps + HEADROOM + u->payload_sz);
        free(qu->ents);
        io_uring_queue_exit(&qu->ring);
    }
    if (u->qs) sem_destroy(&u->ready);
    free(u->qs);
    if (the_u == u) the_u = NULL;
    free(u);
}
