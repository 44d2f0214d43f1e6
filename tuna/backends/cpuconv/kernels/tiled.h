/* CpuDirectTiled: direct convolution with a register tile, no workspace.
 *
 * Per inclusion: KNAME, and the parameters
 *   TL_TK  channels per tile: output channels (F, W) or input channels (B); divides the group's
 *   TL_TH  rows per tile (F: output rows, B: input rows); W: input channels per tile
 *   TL_TW  tile width: output columns (F), input columns of one stride phase (B), or the
 *          number of partial sums kept along the output row (W)
 *   TL_U   unroll factor of the reduction loop
 *   TL_NT  threads
 * CV_SKIP_TAP (test only) leaves out the last filter tap: a wrong kernel for verification
 * to catch.
 */
#include "common.h"

#define CV_PRAGMA(x) _Pragma(#x)
#define CV_UNROLL(n) CV_PRAGMA(GCC unroll n)

#undef TL_SKIPPED /* candidates of one translation unit differ here */
#ifdef CV_SKIP_TAP
#define TL_SKIPPED(fy, fx) ((fy) == CV_FY - 1 && (fx) == CV_FX - 1)
#else
#define TL_SKIPPED(fy, fx) 0
#endif

#if CV_DIR == 0
static void FN(part)(void *vctx, long begin, long end) {
    const struct cv_args *args = (const struct cv_args *)vctx;
    const float *restrict x = args->a, *restrict w = args->b;
    float *restrict y = args->out;
    enum { NKB = CV_KG / TL_TK, NHB = (CV_HO + TL_TH - 1) / TL_TH };
    for (long t = begin; t < end; t++) {
        const long hb = t % NHB, kb = t / NHB % NKB, g = t / NHB / NKB % CV_G;
        const long n = t / NHB / NKB / CV_G;
        const long k0 = g * CV_KG + kb * TL_TK, ho0 = hb * TL_TH;
        for (long wo0 = 0; wo0 < CV_WO; wo0 += TL_TW) {
            float acc[TL_TK][TL_TH][TL_TW];
            memset(acc, 0, sizeof acc);
            const int inner = wo0 * CV_SW - CV_PW >= 0 && wo0 + TL_TW <= CV_WO &&
                              (wo0 + TL_TW - 1) * CV_SW - CV_PW + (CV_FX - 1) * CV_DW < CV_WI;
            CV_UNROLL(TL_U)
            for (long c = 0; c < CV_CG; c++) {
                const float *xc = x + CV_XIDX(n, g * CV_CG + c, 0, 0);
                for (long fy = 0; fy < CV_FY; fy++)
                    for (long fx = 0; fx < CV_FX; fx++) {
                        if (TL_SKIPPED(fy, fx)) continue;
                        float wv[TL_TK];
                        for (int q = 0; q < TL_TK; q++) wv[q] = w[CV_WIDX(k0 + q, c, fy, fx)];
                        const long wb = wo0 * CV_SW - CV_PW + fx * CV_DW;
                        for (int r = 0; r < TL_TH; r++) {
                            const long hi = (ho0 + r) * CV_SH - CV_PH + fy * CV_DH;
                            if (ho0 + r >= CV_HO || hi < 0 || hi >= CV_HI) continue;
                            const float *xr = xc + hi * CV_WI;
                            if (inner) {
                                for (int j = 0; j < TL_TW; j++) {
                                    const float xv = xr[wb + j * CV_SW];
                                    for (int q = 0; q < TL_TK; q++) acc[q][r][j] += wv[q] * xv;
                                }
                            } else {
                                for (int j = 0; j < TL_TW; j++) {
                                    const long wi = wb + j * CV_SW;
                                    if (wo0 + j >= CV_WO || wi < 0 || wi >= CV_WI) continue;
                                    const float xv = xr[wi];
                                    for (int q = 0; q < TL_TK; q++) acc[q][r][j] += wv[q] * xv;
                                }
                            }
                        }
                    }
            }
            for (int q = 0; q < TL_TK; q++)
                for (int r = 0; r < TL_TH && ho0 + r < CV_HO; r++)
                    for (int j = 0; j < TL_TW && wo0 + j < CV_WO; j++)
                        y[CV_YIDX(n, k0 + q, ho0 + r, wo0 + j)] = acc[q][r][j];
        }
    }
}

CV_SIG(KNAME) {
    struct cv_args args = {a, b, out, ws};
    const long tasks = (long)CV_N * CV_G * (CV_KG / TL_TK) * ((CV_HO + TL_TH - 1) / TL_TH);
    cv_parallel(TL_NT, tasks, FN(part), &args);
}

#elif CV_DIR == 1
/* dx gathered from dy: the input columns of one stride phase (wi = rw + SW * j) all meet
 * the same filter columns, at consecutive output columns. */
static void FN(part)(void *vctx, long begin, long end) {
    const struct cv_args *args = (const struct cv_args *)vctx;
    const float *restrict dy = args->a, *restrict w = args->b;
    float *restrict dx = args->out;
    enum { NCB = CV_CG / TL_TK, NHB = (CV_HI + TL_TH - 1) / TL_TH };
    for (long t = begin; t < end; t++) {
        const long hb = t % NHB, cb = t / NHB % NCB, g = t / NHB / NCB % CV_G;
        const long n = t / NHB / NCB / CV_G;
        const long c0 = cb * TL_TK, hi0 = hb * TL_TH;
        for (long rw = 0; rw < CV_SW; rw++) {
            const long nw = (CV_WI - rw + CV_SW - 1) / CV_SW;
            for (long j0 = 0; j0 < nw; j0 += TL_TW) {
                float acc[TL_TK][TL_TH][TL_TW];
                memset(acc, 0, sizeof acc);
                CV_UNROLL(TL_U)
                for (long kk = 0; kk < CV_KG; kk++) {
                    const long k = g * CV_KG + kk;
                    for (long fy = 0; fy < CV_FY; fy++)
                        for (long fx = 0; fx < CV_FX; fx++) {
                            if (TL_SKIPPED(fy, fx)) continue;
                            const long u = rw + CV_PW - fx * CV_DW;
                            if (((u % CV_SW) + CV_SW) % CV_SW) continue;
                            const long wo0 = u / CV_SW + j0;
                            const int inner = wo0 >= 0 && wo0 + TL_TW <= CV_WO && j0 + TL_TW <= nw;
                            float wv[TL_TK];
                            for (int q = 0; q < TL_TK; q++) wv[q] = w[CV_WIDX(k, c0 + q, fy, fx)];
                            for (int r = 0; r < TL_TH; r++) {
                                const long hi = hi0 + r, th = hi + CV_PH - fy * CV_DH;
                                if (hi >= CV_HI || th < 0 || th % CV_SH || th / CV_SH >= CV_HO)
                                    continue;
                                const float *row = dy + CV_YIDX(n, k, th / CV_SH, 0);
                                if (inner) {
                                    for (int j = 0; j < TL_TW; j++) {
                                        const float dv = row[wo0 + j];
                                        for (int q = 0; q < TL_TK; q++) acc[q][r][j] += wv[q] * dv;
                                    }
                                } else {
                                    for (int j = 0; j < TL_TW; j++) {
                                        const long wo = wo0 + j;
                                        if (j0 + j >= nw || wo < 0 || wo >= CV_WO) continue;
                                        const float dv = row[wo];
                                        for (int q = 0; q < TL_TK; q++) acc[q][r][j] += wv[q] * dv;
                                    }
                                }
                            }
                        }
                }
                for (int q = 0; q < TL_TK; q++)
                    for (int r = 0; r < TL_TH && hi0 + r < CV_HI; r++)
                        for (int j = 0; j < TL_TW && j0 + j < nw; j++)
                            dx[CV_XIDX(n, g * CV_CG + c0 + q, hi0 + r, rw + CV_SW * (j0 + j))] =
                                acc[q][r][j];
            }
        }
    }
}

CV_SIG(KNAME) {
    struct cv_args args = {a, b, out, ws};
    const long tasks = (long)CV_N * CV_G * (CV_CG / TL_TK) * ((CV_HI + TL_TH - 1) / TL_TH);
    cv_parallel(TL_NT, tasks, FN(part), &args);
}

#else
/* dw: a tile of TK output x TH input channels for one filter tap, TW partial sums each. */
static void FN(part)(void *vctx, long begin, long end) {
    const struct cv_args *args = (const struct cv_args *)vctx;
    const float *restrict x = args->a, *restrict dy = args->b;
    float *restrict dw = args->out;
    enum { NKB = CV_KG / TL_TK, NCB = CV_CG / TL_TH, TAPS = CV_FY * CV_FX };
    for (long t = begin; t < end; t++) {
        const long tap = t % TAPS, cb = t / TAPS % NCB, kb = t / TAPS / NCB % NKB;
        const long g = t / TAPS / NCB / NKB;
        const long fy = tap / CV_FX, fx = tap % CV_FX;
        const long k0 = g * CV_KG + kb * TL_TK, c0 = cb * TL_TH;
        float acc[TL_TK][TL_TH][TL_TW];
        memset(acc, 0, sizeof acc);
        const long off = fx * CV_DW - CV_PW, need = -off;
        const long lo = need > 0 ? (need + CV_SW - 1) / CV_SW : 0;
        const long last = CV_WI - 1 - off;
        const long hi_w = last < 0 ? 0 : CV_MIN(CV_WO, last / CV_SW + 1);
        for (long n = 0; n < CV_N && !TL_SKIPPED(fy, fx); n++)
            for (long ho = 0; ho < CV_HO; ho++) {
                const long hi = ho * CV_SH - CV_PH + fy * CV_DH;
                if (hi < 0 || hi >= CV_HI) continue;
                const float *dr[TL_TK], *xr[TL_TH];
                for (int q = 0; q < TL_TK; q++) dr[q] = dy + CV_YIDX(n, k0 + q, ho, 0);
                for (int r = 0; r < TL_TH; r++) xr[r] = x + CV_XIDX(n, g * CV_CG + c0 + r, hi, 0);
                long wo = lo;
                CV_UNROLL(TL_U)
                for (; wo + TL_TW <= hi_w; wo += TL_TW)
                    for (int j = 0; j < TL_TW; j++)
                        for (int q = 0; q < TL_TK; q++) {
                            const float d = dr[q][wo + j];
                            for (int r = 0; r < TL_TH; r++)
                                acc[q][r][j] += d * xr[r][(wo + j) * CV_SW + off];
                        }
                for (; wo < hi_w; wo++)
                    for (int q = 0; q < TL_TK; q++)
                        for (int r = 0; r < TL_TH; r++)
                            acc[q][r][0] += dr[q][wo] * xr[r][wo * CV_SW + off];
            }
        for (int q = 0; q < TL_TK; q++)
            for (int r = 0; r < TL_TH; r++) {
                float s = 0;
                for (int j = 0; j < TL_TW; j++) s += acc[q][r][j];
                dw[CV_WIDX(k0 + q, c0 + r, fy, fx)] = s;
            }
    }
}

CV_SIG(KNAME) {
    struct cv_args args = {a, b, out, ws};
    const long tasks = (long)CV_G * (CV_KG / TL_TK) * (CV_CG / TL_TH) * CV_FY * CV_FX;
    cv_parallel(TL_NT, tasks, FN(part), &args);
}
#endif
