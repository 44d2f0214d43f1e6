/* Shared by every cpuconv translation unit: shape macros, a pthread parallel-for, names.
 *
 * Tensors are NCHW, FP32. x: N x C x HI x WI, w: K x (C/G) x FY x FX, y: N x K x HO x WO.
 * Every kernel has the same signature, whatever the direction:
 *   void kern(const float *a, const float *b, float *out, float *ws)
 *   F: a = x,  b = w,  out = y     B: a = dy, b = w,  out = dx     W: a = x,  b = dy, out = dw
 * and writes every element of out (nothing is accumulated across calls). A kernel that keeps
 * its weights packed in its workspace (CpuIm2colGemm forward with PB 2) also exports
 *   void kern_prepack(const float *b, float *ws)
 * which the caller runs once, untimed, before the kernel's first run on that workspace
 * (run.Candidate.prepare); the kernel then reads the weights from ws, not from b.
 *
 * The shape comes from -D flags (CV_N, CV_C, ...), so every kernel is specialised for its
 * problem; the reference build (reference.c) defines CV_RUNTIME_SHAPE and reads it from an
 * int array instead.
 */
#ifndef CPUCONV_COMMON_H
#define CPUCONV_COMMON_H

#include <pthread.h>
#include <unistd.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#define CV_CAT_(a, b) a##b
#define CV_CAT(a, b) CV_CAT_(a, b)
/* A helper private to the kernel being defined: kern_3 -> kern_3_name. */
#define FN(name) CV_CAT(KNAME, CV_CAT(_, name))
#define CV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CV_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CV_EXPORT __attribute__((visibility("default")))
#define CV_UNUSED __attribute__((unused))

#ifdef CV_RUNTIME_SHAPE
#define CV_SIG(name) \
    CV_EXPORT void name(const int *sh, const float *a, const float *b, float *out, float *ws)
#define CV_SHAPE_DECL                                                                      \
    const long CV_N = sh[0], CV_C = sh[1], CV_K = sh[2], CV_G = sh[3], CV_HI = sh[4],      \
               CV_WI = sh[5], CV_HO = sh[6], CV_WO = sh[7], CV_FY = sh[8], CV_FX = sh[9],  \
               CV_PH = sh[10], CV_PW = sh[11], CV_SH = sh[12], CV_SW = sh[13],             \
               CV_DH = sh[14], CV_DW = sh[15];
#else
#define CV_SIG(name) \
    CV_EXPORT void name(const float *restrict a, const float *restrict b, \
                        float *restrict out, float *restrict ws)
#define CV_SHAPE_DECL
#endif

#define CV_CG (CV_C / CV_G)
#define CV_KG (CV_K / CV_G)
#define CV_XIDX(n, c, h, w) ((((long)(n) * CV_C + (c)) * CV_HI + (h)) * CV_WI + (w))
#define CV_YIDX(n, k, h, w) ((((long)(n) * CV_K + (k)) * CV_HO + (h)) * CV_WO + (w))
#define CV_WIDX(k, c, h, w) ((((long)(k) * CV_CG + (c)) * CV_FY + (h)) * CV_FX + (w))

/* fn(ctx, begin, end) over [0, total) split in nt contiguous ranges, one thread each. */
typedef void (*cv_range_fn)(void *ctx, long begin, long end);

/* The threads that run the ranges: a pool per shared object, started on first use and kept
 * between calls. Creating and joining a thread per call cost 16-64 us each (measured here);
 * a kernel makes 1 to 75 parallel calls per run (CpuWinograd2x3: three per block of
 * tiles), on runs of 0.2-2 ms. The caller runs the first range itself. Between calls a
 * worker spins for CV_SPIN_NS, then sleeps on a condition variable; the caller waits for the
 * workers the same way. On a busy machine a sleeping worker can wait a scheduler tick to be
 * woken, and an unfolding that took 0.05 ms on one thread took 0.17 ms on two; OpenMP, which
 * oneDNN uses, spins too. The pool is stopped and joined when the library is unloaded (a
 * destructor: dlclose runs it before unmapping the code the threads run), and a forked child
 * (cpuconv's isolation forks the worker) starts its own: it has none of its parent's
 * threads. One call at a time per library (a mutex); a range function must not call
 * cv_parallel itself. */
enum { CV_MAX_THREADS = 16 };
#define CV_SPIN_NS 50000L

struct cv_pool {
    pthread_mutex_t call;           /* held for a whole cv_parallel call */
    pthread_mutex_t mu;             /* with go and done: sleeping and waking */
    pthread_cond_t go, done;
    pid_t pid;                      /* the process the workers belong to; 0: none started */
    int workers, sleepers;          /* started; asleep on go (under mu) */
    int stop, pending;              /* atomic: stop the workers; workers yet to answer */
    unsigned long round;            /* atomic: bumped for each call (and for stop) */
    cv_range_fn fn;                 /* the call: written before round is bumped */
    void *ctx;
    long total;
    int nt;
    pthread_t th[CV_MAX_THREADS];
};

static struct cv_pool cv_pool_ = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                  PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

struct cv_worker_arg {
    int index;           /* the range it runs: 1 .. CV_MAX_THREADS - 1 */
    unsigned long round; /* the round when it was started: it waits for the next */
};
static struct cv_worker_arg cv_worker_args_[CV_MAX_THREADS];

static long cv_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static inline void cv_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Whether *word became other than `was` within CV_SPIN_NS (checked without sleeping). */
static int cv_spin_while(const unsigned long *word, unsigned long was) {
    const long start = cv_now_ns();
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != was) return 1;
        cv_relax();
        if (i % 64 == 0 && cv_now_ns() - start > CV_SPIN_NS) return 0;
    }
}

static void *cv_worker_main(void *p) {
    const int me = ((struct cv_worker_arg *)p)->index;
    struct cv_pool *pl = &cv_pool_;
    unsigned long seen = ((struct cv_worker_arg *)p)->round;
    for (;;) {
        if (!cv_spin_while(&pl->round, seen)) {
            pthread_mutex_lock(&pl->mu);
            pl->sleepers++;
            while (__atomic_load_n(&pl->round, __ATOMIC_ACQUIRE) == seen)
                pthread_cond_wait(&pl->go, &pl->mu);
            pl->sleepers--;
            pthread_mutex_unlock(&pl->mu);
        }
        seen = __atomic_load_n(&pl->round, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&pl->stop, __ATOMIC_ACQUIRE)) break;
        if (me < pl->nt) /* else this call needs fewer threads: it only answers */
            pl->fn(pl->ctx, pl->total * me / pl->nt, pl->total * (me + 1) / pl->nt);
        if (__atomic_sub_fetch(&pl->pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&pl->mu);
            pthread_cond_signal(&pl->done);
            pthread_mutex_unlock(&pl->mu);
        }
    }
    return NULL;
}

/* Workers 1 .. want - 1 running in this process (fewer if a thread cannot be had). */
static int cv_pool_grow(struct cv_pool *pl, int want) {
    if (pl->pid != getpid()) { /* none yet, or a forked child: its parent's are not here */
        pthread_mutex_init(&pl->call, NULL);
        pthread_mutex_init(&pl->mu, NULL);
        pthread_cond_init(&pl->go, NULL);
        pthread_cond_init(&pl->done, NULL);
        pthread_mutex_lock(&pl->call);
        pl->pid = getpid();
        pl->workers = pl->sleepers = pl->stop = pl->pending = 0;
        pl->round = 0;
    }
    while (pl->workers + 1 < want) {
        const int i = pl->workers + 1;
        cv_worker_args_[i].index = i;
        cv_worker_args_[i].round = pl->round; /* only the caller changes it, holding `call` */
        if (pthread_create(&pl->th[i], NULL, cv_worker_main, &cv_worker_args_[i]) != 0) break;
        pl->workers++;
    }
    return pl->workers + 1;
}

/* A new round (a call, or the stop): the workers spinning see it, the sleeping are woken. */
static void cv_pool_bump(struct cv_pool *pl) {
    pthread_mutex_lock(&pl->mu);
    __atomic_add_fetch(&pl->round, 1, __ATOMIC_RELEASE);
    if (pl->sleepers) pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
}

__attribute__((destructor)) static void cv_pool_stop(void) {
    struct cv_pool *pl = &cv_pool_;
    if (pl->pid != getpid() || pl->workers == 0) return;
    __atomic_store_n(&pl->stop, 1, __ATOMIC_RELEASE);
    cv_pool_bump(pl);
    for (int i = 1; i <= pl->workers; i++) pthread_join(pl->th[i], NULL);
    pl->workers = 0;
}

CV_UNUSED static void cv_parallel(int nt, long total, cv_range_fn fn, void *ctx) {
    struct cv_pool *pl = &cv_pool_;
    if (nt > CV_MAX_THREADS) nt = CV_MAX_THREADS;
    if (nt > total) nt = (int)total;
    if (nt <= 1) {
        if (total > 0) fn(ctx, 0, total);
        return;
    }
    if (pl->pid == getpid()) pthread_mutex_lock(&pl->call); /* else cv_pool_grow takes it */
    nt = cv_pool_grow(pl, nt);
    pl->fn = fn;
    pl->ctx = ctx;
    pl->total = total;
    pl->nt = nt;
    /* Every worker answers every call, so none still reads this call's fields when the
     * next call writes them. */
    __atomic_store_n(&pl->pending, pl->workers, __ATOMIC_RELAXED);
    cv_pool_bump(pl);
    fn(ctx, 0, total / nt);
    const long start = cv_now_ns();
    for (unsigned i = 1; __atomic_load_n(&pl->pending, __ATOMIC_ACQUIRE) > 0; i++) {
        cv_relax();
        if (i % 64 == 0 && cv_now_ns() - start > CV_SPIN_NS) {
            pthread_mutex_lock(&pl->mu);
            while (__atomic_load_n(&pl->pending, __ATOMIC_ACQUIRE) > 0)
                pthread_cond_wait(&pl->done, &pl->mu);
            pthread_mutex_unlock(&pl->mu);
        }
    }
    pthread_mutex_unlock(&pl->call);
}

struct cv_args {
    const float *a, *b;
    float *out, *ws;
};

#endif
