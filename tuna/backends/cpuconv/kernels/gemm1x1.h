/* CpuGemm1x1: a 1x1, stride-1, unpadded convolution is a GEMM per image and group, on the
 * tensors as they are (no workspace). Parameters: those of gemm.h and GM_NT (threads).
 *   F: y[n,g]  (KG x HW) = w[g] (KG x CG) x[n,g] (CG x HW)
 *   B: dx[n,g] (CG x HW) = w[g]^T dy[n,g]
 *   W: dw[g]   (KG x CG) = sum_n dy[n,g] x[n,g]^T
 */
#include "gemm.h"

#define G1_HW ((long)CV_HO * CV_WO)

static void FN(part)(void *vctx, long begin, long end) {
    const struct cv_args *args = (const struct cv_args *)vctx;
#if CV_DIR == 0
    GM_FOR_ROW_BLOCKS(begin, end, CV_KG, ng, r0, r1) {
        const long n = ng / CV_G, g = ng % CV_G;
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(CV_KG, r1 * GM_MR), G1_HW, CV_CG,
                    args->b + (long)g * CV_KG * CV_CG, CV_CG, 1,
                    args->a + ((long)n * CV_C + g * CV_CG) * G1_HW, G1_HW,
                    args->out + ((long)n * CV_K + g * CV_KG) * G1_HW, G1_HW, 0);
    }
#elif CV_DIR == 1
    GM_FOR_ROW_BLOCKS(begin, end, CV_CG, ng, r0, r1) {
        const long n = ng / CV_G, g = ng % CV_G;
        FN(gemm_nn)(r0 * GM_MR, CV_MIN(CV_CG, r1 * GM_MR), G1_HW, CV_KG,
                    args->b + (long)g * CV_KG * CV_CG, 1, CV_CG,
                    args->a + ((long)n * CV_K + g * CV_KG) * G1_HW, G1_HW,
                    args->out + ((long)n * CV_C + g * CV_CG) * G1_HW, G1_HW, 0);
    }
#else
    GM_FOR_ROW_BLOCKS(begin, end, CV_KG, g, r0, r1) {
        const long i0 = r0 * GM_MR, i1 = CV_MIN(CV_KG, r1 * GM_MR);
        for (long n = 0; n < CV_N; n++)
            FN(gemm_nt)(i0, i1, CV_CG, G1_HW,
                        args->b + ((long)n * CV_K + g * CV_KG) * G1_HW, G1_HW,
                        args->a + ((long)n * CV_C + g * CV_CG) * G1_HW, G1_HW,
                        args->out + (long)g * CV_KG * CV_CG, CV_CG, n > 0);
    }
#endif
}

CV_SIG(KNAME) {
    struct cv_args args = {a, b, out, ws};
#if CV_DIR == 0
    const long tasks = (long)CV_N * CV_G * ((CV_KG + GM_MR - 1) / GM_MR);
#elif CV_DIR == 1
    const long tasks = (long)CV_N * CV_G * ((CV_CG + GM_MR - 1) / GM_MR);
#else
    const long tasks = (long)CV_G * ((CV_KG + GM_MR - 1) / GM_MR);
#endif
    cv_parallel(GM_NT, tasks, FN(part), &args);
}
