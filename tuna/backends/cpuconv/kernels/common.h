/* Shared by every cpuconv translation unit: shape macros, a pthread parallel-for, names.
 *
 * Tensors are NCHW, FP32. x: N x C x HI x WI, w: K x (C/G) x FY x FX, y: N x K x HO x WO.
 * Every kernel has the same signature, whatever the direction:
 *   void kern(const float *a, const float *b, float *out, float *ws)
 *   F: a = x,  b = w,  out = y     B: a = dy, b = w,  out = dx     W: a = x,  b = dy, out = dw
 * and writes every element of out (nothing is accumulated across calls).
 *
 * The shape comes from -D flags (CV_N, CV_C, ...), so every kernel is specialised for its
 * problem; the reference build (reference.c) defines CV_RUNTIME_SHAPE and reads it from an
 * int array instead.
 */
#ifndef CPUCONV_COMMON_H
#define CPUCONV_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <string.h>

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

struct cv_task {
    cv_range_fn fn;
    void *ctx;
    long begin, end;
};

static void *cv_task_main(void *p) {
    struct cv_task *t = (struct cv_task *)p;
    t->fn(t->ctx, t->begin, t->end);
    return NULL;
}

CV_UNUSED static void cv_parallel(int nt, long total, cv_range_fn fn, void *ctx) {
    enum { MAX_THREADS = 16 };
    if (nt > MAX_THREADS) nt = MAX_THREADS;
    if (nt > total) nt = (int)total;
    if (nt <= 1) {
        if (total > 0) fn(ctx, 0, total);
        return;
    }
    pthread_t th[MAX_THREADS];
    struct cv_task task[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int i = 0; i < nt; i++) {
        task[i].fn = fn;
        task[i].ctx = ctx;
        task[i].begin = total * i / nt;
        task[i].end = total * (i + 1) / nt;
    }
    for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, cv_task_main, &task[i]) == 0;
    fn(ctx, task[0].begin, task[0].end);
    for (int i = 1; i < nt; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            fn(ctx, task[i].begin, task[i].end); /* no thread to be had: do it here */
    }
}

struct cv_args {
    const float *a, *b;
    float *out, *ws;
};

#endif
