/* CpuIm2colGemm: unfold the input into columns (the workspace: CG*FY*FX x HO*WO floats), then
 * one GEMM per image and group. Parameters: those of gemm.h and GM_NT (threads).
 *   F: col = im2col(x[n,g]);  y[n,g] = w[g] col
 *   B: col = w[g]^T dy[n,g];  dx[n,g] = col2im(col)
 *   W: col = im2col(x[n,g]);  dw[g] += dy[n,g] col^T
 */
#include "gemm.h"

#define IC_P ((long)CV_HO * CV_WO)
#define IC_R ((long)CV_CG * CV_FY * CV_FX)

struct FN(ctx) {
    const struct cv_args *args;
    long n, g;
};

/* The output columns wo whose input column wo*SW - PW + fx*DW lies in [0, WI). */
static inline void FN(wo_range)(long fx, long *lo, long *hi) {
    const long off = fx * CV_DW - CV_PW, last = CV_WI - 1 - off;
    *lo = off < 0 ? (-off + CV_SW - 1) / CV_SW : 0;
    *hi = last < 0 ? 0 : CV_MIN(CV_WO, last / CV_SW + 1);
    if (*lo > *hi) *lo = *hi;
}

#if CV_DIR != 1
static void FN(im2col)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    const float *x = c->args->a;
    float *col = c->args->ws;
    for (long r = begin; r < end; r++) {
        const long ch = r / (CV_FY * CV_FX), fy = r / CV_FX % CV_FY, fx = r % CV_FX;
        const float *xc = x + CV_XIDX(c->n, c->g * CV_CG + ch, 0, 0);
        long lo, hi;
        FN(wo_range)(fx, &lo, &hi);
        const long off = fx * CV_DW - CV_PW;
        for (long ho = 0; ho < CV_HO; ho++) {
            float *dst = col + r * IC_P + ho * CV_WO;
            const long h = ho * CV_SH - CV_PH + fy * CV_DH;
            if (h < 0 || h >= CV_HI) {
                memset(dst, 0, CV_WO * sizeof(float));
                continue;
            }
            const float *src = xc + h * CV_WI;
            for (long wo = 0; wo < lo; wo++) dst[wo] = 0;
            for (long wo = lo; wo < hi; wo++) dst[wo] = src[wo * CV_SW + off];
            for (long wo = hi; wo < CV_WO; wo++) dst[wo] = 0;
        }
    }
}
#else
static void FN(col2im)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    const float *col = c->args->ws;
    for (long ch = begin; ch < end; ch++) {
        float *dxc = c->args->out + CV_XIDX(c->n, c->g * CV_CG + ch, 0, 0);
        memset(dxc, 0, (long)CV_HI * CV_WI * sizeof(float));
        for (long fy = 0; fy < CV_FY; fy++)
            for (long fx = 0; fx < CV_FX; fx++) {
                const float *src = col + ((ch * CV_FY + fy) * CV_FX + fx) * IC_P;
                long lo, hi;
                FN(wo_range)(fx, &lo, &hi);
                const long off = fx * CV_DW - CV_PW;
                for (long ho = 0; ho < CV_HO; ho++) {
                    const long h = ho * CV_SH - CV_PH + fy * CV_DH;
                    if (h < 0 || h >= CV_HI) continue;
                    float *dst = dxc + h * CV_WI;
                    for (long wo = lo; wo < hi; wo++) dst[wo * CV_SW + off] += src[ho * CV_WO + wo];
                }
            }
    }
}
#endif

static void FN(gemm)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    const struct cv_args *args = c->args;
    const long n = c->n, g = c->g;
#if CV_DIR == 0
    GM_FOR_ROW_BLOCKS(begin, end, CV_KG, unused, r0, r1) {
        (void)unused;
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(CV_KG, r1 * GM_MR), IC_P, IC_R,
                    args->b + g * CV_KG * IC_R, IC_R, 1, args->ws, IC_P,
                    args->out + ((long)n * CV_K + g * CV_KG) * IC_P, IC_P, 0);
    }
#elif CV_DIR == 1
    GM_FOR_ROW_BLOCKS(begin, end, IC_R, unused, r0, r1) {
        (void)unused;
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(IC_R, r1 * GM_MR), IC_P, CV_KG,
                    args->b + g * CV_KG * IC_R, 1, IC_R,
                    args->a + ((long)n * CV_K + g * CV_KG) * IC_P, IC_P, args->ws, IC_P, 0);
    }
#else
    GM_FOR_ROW_BLOCKS(begin, end, CV_KG, unused, r0, r1) {
        (void)unused;
        FN(gemm_nt)(r0 * GM_MR, CV_MIN(CV_KG, r1 * GM_MR), IC_R, IC_P,
                    args->b + ((long)n * CV_K + g * CV_KG) * IC_P, IC_P, args->ws, IC_P,
                    args->out + g * CV_KG * IC_R, IC_R, n > 0);
    }
#endif
}

CV_SIG(KNAME) {
    struct cv_args args = {a, b, out, ws};
#if CV_DIR == 1
    const long rows = IC_R;
#else
    const long rows = CV_KG;
#endif
    for (long n = 0; n < CV_N; n++)
        for (long g = 0; g < CV_G; g++) {
            struct FN(ctx) c = {&args, n, g};
#if CV_DIR != 1
            cv_parallel(GM_NT, IC_R, FN(im2col), &c);
#endif
            cv_parallel(GM_NT, (rows + GM_MR - 1) / GM_MR, FN(gemm), &c);
#if CV_DIR == 1
            cv_parallel(GM_NT, CV_CG, FN(col2im), &c);
#endif
        }
}
