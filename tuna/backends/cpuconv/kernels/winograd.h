/* CpuWinograd2x3: Winograd F(2x2, 3x3) for 3x3, stride-1, dilation-1 filters.
 *
 * F convolves x with w. B convolves dy with w flipped and transposed (k <-> c) and padded by
 * 2 - pad, which is dx for stride 1. Per call: filters transformed once (U), then per image,
 * group and block of WG_TB 2x2 output tiles: input transform (V), 16 GEMMs M = U V
 * (gemm.h), output transform. Parameters: those of gemm.h, WG_TB, GM_NT (threads).
 * Workspace (floats): 16 * (G*KO*CI + CI*TB + KO*TB).
 */
#include "gemm.h"

#if CV_DIR == 0
#define WG_CI CV_CG
#define WG_KO CV_KG
#define WG_INCH CV_C
#define WG_OUTCH CV_K
#define WG_HIN CV_HI
#define WG_WIN CV_WI
#define WG_HOUT CV_HO
#define WG_WOUT CV_WO
#define WG_PH CV_PH
#define WG_PW CV_PW
#define WG_FILTER(w, g, ko, ci, fy, fx) (w)[CV_WIDX((g) * CV_KG + (ko), ci, fy, fx)]
#else
#define WG_CI CV_KG
#define WG_KO CV_CG
#define WG_INCH CV_K
#define WG_OUTCH CV_C
#define WG_HIN CV_HO
#define WG_WIN CV_WO
#define WG_HOUT CV_HI
#define WG_WOUT CV_WI
#define WG_PH (2 - CV_PH)
#define WG_PW (2 - CV_PW)
#define WG_FILTER(w, g, ko, ci, fy, fx) (w)[CV_WIDX((g) * CV_KG + (ci), ko, 2 - (fy), 2 - (fx))]
#endif
#define WG_TY ((WG_HOUT + 1) / 2)
#define WG_TX ((WG_WOUT + 1) / 2)
#define WG_T ((long)WG_TY * WG_TX)
#define WG_U_SIZE (16L * CV_G * WG_KO * WG_CI)
#define WG_V_SIZE (16L * WG_CI * WG_TB)

struct FN(ctx) {
    const struct cv_args *args;
    long n, g, t0, tb;
};

/* U[g][xi][ko][ci] = G f G^T, G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]. */
static void FN(filters)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    const float *w = c->args->b;
    float *U = c->args->ws;
    for (long gk = begin; gk < end; gk++) {
        const long g = gk / WG_KO, ko = gk % WG_KO;
        for (long ci = 0; ci < WG_CI; ci++) {
            float f[3][3], t[4][3];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) f[i][j] = WG_FILTER(w, g, ko, ci, i, j);
            for (int j = 0; j < 3; j++) {
                t[0][j] = f[0][j];
                t[1][j] = 0.5f * (f[0][j] + f[1][j] + f[2][j]);
                t[2][j] = 0.5f * (f[0][j] - f[1][j] + f[2][j]);
                t[3][j] = f[2][j];
            }
            for (int i = 0; i < 4; i++) {
                const float u[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                                    0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
                for (int j = 0; j < 4; j++)
                    U[((g * 16 + i * 4 + j) * WG_KO + ko) * WG_CI + ci] = u[j];
            }
        }
    }
}

/* V[xi][ci][tt] = B^T d B for the 4x4 input patch d of each tile, B^T rows
 * [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. */
static void FN(inputs)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    float *V = c->args->ws + WG_U_SIZE;
    for (long ci = begin; ci < end; ci++) {
        const float *src = c->args->a + (((long)c->n * WG_INCH + c->g * WG_CI + ci) * WG_HIN) * WG_WIN;
        for (long tt = 0; tt < c->tb; tt++) {
            const long tile = c->t0 + tt, h0 = tile / WG_TX * 2 - WG_PH, w0 = tile % WG_TX * 2 - WG_PW;
            float d[4][4], t[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) {
                    const long h = h0 + i, wc = w0 + j;
                    d[i][j] = h >= 0 && h < WG_HIN && wc >= 0 && wc < WG_WIN ? src[h * WG_WIN + wc] : 0.0f;
                }
            for (int j = 0; j < 4; j++) {
                t[0][j] = d[0][j] - d[2][j];
                t[1][j] = d[1][j] + d[2][j];
                t[2][j] = d[2][j] - d[1][j];
                t[3][j] = d[1][j] - d[3][j];
            }
            for (int i = 0; i < 4; i++) {
                const float v[4] = {t[i][0] - t[i][2], t[i][1] + t[i][2], t[i][2] - t[i][1],
                                    t[i][1] - t[i][3]};
                for (int j = 0; j < 4; j++) V[((i * 4 + j) * WG_CI + ci) * WG_TB + tt] = v[j];
            }
        }
    }
}

/* M[xi] (KO x tb) = U[g][xi] (KO x CI) V[xi] (CI x tb), 16 GEMMs split by row blocks. */
static void FN(products)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    const float *U = c->args->ws, *V = c->args->ws + WG_U_SIZE;
    float *M = c->args->ws + WG_U_SIZE + WG_V_SIZE;
    GM_FOR_ROW_BLOCKS(begin, end, WG_KO, xi, r0, r1) {
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(WG_KO, r1 * GM_MR), c->tb, WG_CI,
                    U + (c->g * 16 + xi) * WG_KO * WG_CI, WG_CI, 1, V + xi * WG_CI * WG_TB, WG_TB,
                    M + xi * WG_KO * WG_TB, WG_TB, 0);
    }
}

/* y tile = A^T m A, A^T = [1 1 1 0; 0 1 -1 -1]. */
static void FN(outputs)(void *vctx, long begin, long end) {
    const struct FN(ctx) *c = (const struct FN(ctx) *)vctx;
    const float *M = c->args->ws + WG_U_SIZE + WG_V_SIZE;
    for (long ko = begin; ko < end; ko++) {
        float *dst = c->args->out + (((long)c->n * WG_OUTCH + c->g * WG_KO + ko) * WG_HOUT) * WG_WOUT;
        for (long tt = 0; tt < c->tb; tt++) {
            float m[4][4], t[2][4];
            for (int i = 0; i < 16; i++) m[i / 4][i % 4] = M[(i * WG_KO + ko) * WG_TB + tt];
            for (int j = 0; j < 4; j++) {
                t[0][j] = m[0][j] + m[1][j] + m[2][j];
                t[1][j] = m[1][j] - m[2][j] - m[3][j];
            }
            const long tile = c->t0 + tt, h0 = tile / WG_TX * 2, w0 = tile % WG_TX * 2;
            for (int i = 0; i < 2 && h0 + i < WG_HOUT; i++) {
                const float o[2] = {t[i][0] + t[i][1] + t[i][2], t[i][1] - t[i][2] - t[i][3]};
                for (int j = 0; j < 2 && w0 + j < WG_WOUT; j++) dst[(h0 + i) * WG_WOUT + w0 + j] = o[j];
            }
        }
    }
}

CV_SIG(KNAME) {
    struct cv_args args = {a, b, out, ws};
    struct FN(ctx) c = {&args, 0, 0, 0, 0};
    cv_parallel(GM_NT, (long)CV_G * WG_KO, FN(filters), &c);
    for (long n = 0; n < CV_N; n++)
        for (long g = 0; g < CV_G; g++)
            for (long t0 = 0; t0 < WG_T; t0 += WG_TB) {
                c.n = n;
                c.g = g;
                c.t0 = t0;
                c.tb = CV_MIN(WG_TB, WG_T - t0);
                cv_parallel(GM_NT, WG_CI, FN(inputs), &c);
                cv_parallel(GM_NT, 16 * ((WG_KO + GM_MR - 1) / GM_MR), FN(products), &c);
                cv_parallel(GM_NT, WG_KO, FN(outputs), &c);
            }
}
