/* CpuIm2colGemm: unfold the input into columns (the workspace: CG*FY*FX x HO*WO floats; for a
 * forward GM_PB, in NR-wide packed panels, HO*WO rounded up to NR), then one GEMM per image
 * and group. Parameters: those of gemm.h and GM_NT (threads).
 *   F: col = im2col(x[n,g]);  y[n,g] = w[g] col
 *   B: col = w[g]^T dy[n,g];  dx[n,g] = col2im(col)
 *   W: col = im2col(x[n,g]);  dw[g] += dy[n,g] col^T
 */
#include "gemm.h"

#define IC_P ((long)CV_HO * CV_WO)
#define IC_R ((long)CV_CG * CV_FY * CV_FX)
/* Forward with GM_PB: the workspace holds the unfolded input as packed panels (im2col). */
#define IC_PACKED (CV_DIR == 0 && GM_PB)
#define IC_PANELS ((IC_P + GM_NR - 1) / GM_NR)
/* PB 2: the weights too, packed once per problem. */
#define IC_PACKED_W (IC_PACKED && GM_PB == 2)
#if IC_PACKED_W
/* The weights of group g packed into MR-row panels (gemm.h's pack_a) by KNAME_prepack, in the
 * workspace after the unfolded input (from a 64-byte boundary): once per problem, before the
 * kernel runs, as oneDNN reorders its weights once, not on every call. A register tile then
 * reads its rows of A as one stream, where unpacked it read MR rows K floats apart: with K a
 * multiple of 1024 (4 KB) those rows share the L1's sets, and 12 or 16 of them (more than
 * its 12 ways) evicted each other; and a last row tile of fewer than MR rows runs the full
 * register tile on the zero rows instead of gemm.h's row-at-a-time edge code. */
#define IC_A_OFF (((long)IC_R * IC_PANELS * GM_NR + 15) / 16 * 16)
#define IC_A_ROWS (((long)CV_KG + GM_MR - 1) / GM_MR * GM_MR)
#define IC_PACKED_A(ws, g) ((ws) + IC_A_OFF + (long)(g) * IC_A_ROWS * IC_R)
#endif

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
/* Row r of the unfolded input of image n, group g (filter tap (ch, fy, fx) of every output
 * position), IC_P values at dst. Its copy loops stay loops: GCC turned them into `rep movs`
 * and `rep stos` where this was inlined into the packed im2col, whose start-up cost on each
 * output row of 7-56 floats made the unfolding 4x slower (0.20 vs 0.05 ms, 256x14x14 3x3). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void FN(unfold_row)(const float *restrict x, long n, long g, long r, float *restrict dst) {
    const long ch = r / (CV_FY * CV_FX), fy = r / CV_FX % CV_FY, fx = r % CV_FX;
    const float *xc = x + CV_XIDX(n, g * CV_CG + ch, 0, 0);
    long lo, hi;
    FN(wo_range)(fx, &lo, &hi);
    const long off = fx * CV_DW - CV_PW;
    for (long ho = 0; ho < CV_HO; ho++, dst += CV_WO) {
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

#if IC_PACKED
/* Rows unfolded at a time into a buffer before they are copied into their panels. */
#define IC_ROWS 16

/* Rows [begin, end) of the unfolded input straight into the NR-wide panels gemm_nn takes
 * packed (ldb == 0): per cache block of KC rows (kc in the last), panel t holds columns
 * [t NR, t NR + NR) of the block's rows, NR floats a row, zeros past IC_P. IC_ROWS rows are
 * unfolded into a buffer, then copied panel by panel (IC_ROWS x NR contiguous floats each).
 * One pass over the input, split between the threads, where unfolding into rows and then
 * packing them per cache block took two (the second once per thread). */
static void FN(im2col)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    enum { W = IC_PANELS * GM_NR };
    float *rows = aligned_alloc(64, IC_ROWS * W * sizeof(float));
    for (long r0 = begin; r0 < end;) {
        const long pc = r0 / GM_KC * GM_KC, kc = CV_MIN(GM_KC, IC_R - pc);
        const long r1 = CV_MIN(CV_MIN(end, pc + kc), r0 + IC_ROWS);
        for (long r = r0; r < r1; r++) {
            FN(unfold_row)(c->args->a, c->n, c->g, r, rows + (r - r0) * W);
            memset(rows + (r - r0) * W + IC_P, 0, (W - IC_P) * sizeof(float));
#ifdef CV_SKIP_TAP /* test only: leaves out the last filter tap, a kernel that must fail */
            if (r == IC_R - 1) memset(rows + (r - r0) * W, 0, W * sizeof(float));
#endif
        }
        float *dst = c->args->ws + pc * W + (r0 - pc) * GM_NR;
        for (long t = 0; t < IC_PANELS; t++)
            for (long r = r0; r < r1; r++)
                memcpy(dst + t * kc * GM_NR + (r - r0) * GM_NR, rows + (r - r0) * W + t * GM_NR,
                       GM_NR * sizeof(float));
        r0 = r1;
    }
    free(rows);
}
#else
static void FN(im2col)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    for (long r = begin; r < end; r++)
        FN(unfold_row)(c->args->a, c->n, c->g, r, c->args->ws + r * IC_P);
}
#endif
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
#if IC_PACKED_W
    GM_FOR_ROW_BLOCKS(begin, end, CV_KG, unused, r0, r1) {
        (void)unused;
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(CV_KG, r1 * GM_MR), IC_P, IC_R, IC_PACKED_A(args->ws, g),
                    IC_A_ROWS, 0, args->ws, 0,
                    args->out + ((long)n * CV_K + g * CV_KG) * IC_P, IC_P, 0);
    }
#elif CV_DIR == 0
    GM_FOR_ROW_BLOCKS(begin, end, CV_KG, unused, r0, r1) {
        (void)unused;
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(CV_KG, r1 * GM_MR), IC_P, IC_R,
                    args->b + g * CV_KG * IC_R, IC_R, 1, args->ws, IC_PACKED ? 0 : IC_P,
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

#if IC_PACKED_W
/* The weights b packed into the workspace for KNAME (see IC_A_OFF); the caller runs it once
 * before the kernel's first run with these weights and workspace, and again after either
 * changes. */
CV_EXPORT void CV_CAT(KNAME, _prepack)(const float *restrict b, float *restrict ws) {
    for (long g = 0; g < CV_G; g++)
        FN(pack_a)(CV_KG, IC_R, b + g * CV_KG * IC_R, IC_R, IC_PACKED_A(ws, g));
}
#endif

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
