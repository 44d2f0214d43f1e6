/* CpuDirectNaive: the textbook loops, one output element at a time. The reference.
 *
 * Per inclusion: KNAME (the function), CV_DIR (0 F, 1 B, 2 W), CV_ACC (the accumulator
 * type: float for the solver, double for the reference). No parameters, no workspace.
 */
#include "common.h"

#ifndef CV_ACC
#define CV_ACC float
#endif

CV_SIG(KNAME) {
    CV_SHAPE_DECL
    (void)ws;
#if CV_DIR == 0
    const float *x = a, *w = b;
    float *y = out;
    for (long n = 0; n < CV_N; n++)
        for (long k = 0; k < CV_K; k++) {
            const long g = k / CV_KG;
            for (long ho = 0; ho < CV_HO; ho++)
                for (long wo = 0; wo < CV_WO; wo++) {
                    CV_ACC acc = 0;
                    for (long c = 0; c < CV_CG; c++)
                        for (long fy = 0; fy < CV_FY; fy++) {
                            const long hi = ho * CV_SH - CV_PH + fy * CV_DH;
                            if (hi < 0 || hi >= CV_HI) continue;
                            for (long fx = 0; fx < CV_FX; fx++) {
                                const long wi = wo * CV_SW - CV_PW + fx * CV_DW;
                                if (wi < 0 || wi >= CV_WI) continue;
                                acc += (CV_ACC)x[CV_XIDX(n, g * CV_CG + c, hi, wi)] *
                                       w[CV_WIDX(k, c, fy, fx)];
                            }
                        }
                    y[CV_YIDX(n, k, ho, wo)] = (float)acc;
                }
        }
#elif CV_DIR == 1
    const float *dy = a, *w = b;
    float *dx = out;
    for (long n = 0; n < CV_N; n++)
        for (long c = 0; c < CV_C; c++) {
            const long g = c / CV_CG, cc = c % CV_CG;
            for (long hi = 0; hi < CV_HI; hi++)
                for (long wi = 0; wi < CV_WI; wi++) {
                    CV_ACC acc = 0;
                    for (long kk = 0; kk < CV_KG; kk++)
                        for (long fy = 0; fy < CV_FY; fy++) {
                            const long th = hi + CV_PH - fy * CV_DH;
                            if (th < 0 || th % CV_SH) continue;
                            const long ho = th / CV_SH;
                            if (ho >= CV_HO) continue;
                            for (long fx = 0; fx < CV_FX; fx++) {
                                const long tw = wi + CV_PW - fx * CV_DW;
                                if (tw < 0 || tw % CV_SW) continue;
                                const long wo = tw / CV_SW;
                                if (wo >= CV_WO) continue;
                                const long k = g * CV_KG + kk;
                                acc += (CV_ACC)dy[CV_YIDX(n, k, ho, wo)] * w[CV_WIDX(k, cc, fy, fx)];
                            }
                        }
                    dx[CV_XIDX(n, c, hi, wi)] = (float)acc;
                }
        }
#else
    const float *x = a, *dy = b;
    float *dw = out;
    for (long k = 0; k < CV_K; k++) {
        const long g = k / CV_KG;
        for (long c = 0; c < CV_CG; c++)
            for (long fy = 0; fy < CV_FY; fy++)
                for (long fx = 0; fx < CV_FX; fx++) {
                    CV_ACC acc = 0;
                    for (long n = 0; n < CV_N; n++)
                        for (long ho = 0; ho < CV_HO; ho++) {
                            const long hi = ho * CV_SH - CV_PH + fy * CV_DH;
                            if (hi < 0 || hi >= CV_HI) continue;
                            for (long wo = 0; wo < CV_WO; wo++) {
                                const long wi = wo * CV_SW - CV_PW + fx * CV_DW;
                                if (wi < 0 || wi >= CV_WI) continue;
                                acc += (CV_ACC)x[CV_XIDX(n, g * CV_CG + c, hi, wi)] *
                                       dy[CV_YIDX(n, k, ho, wo)];
                            }
                        }
                    dw[CV_WIDX(k, c, fy, fx)] = (float)acc;
                }
    }
#endif
}
