/* The verification library, built once per process: the naive kernels with the shape read
 * at run time and double accumulators, seeded random data, and the error measure.
 */
#define CV_RUNTIME_SHAPE
#define CV_ACC double
#include <math.h>
#include <stdint.h>

#include "common.h"

#define CV_DIR 0
#define KNAME cv_ref_fwd
#include "naive.h"
#undef KNAME
#undef CV_DIR

#define CV_DIR 1
#define KNAME cv_ref_bwd
#include "naive.h"
#undef KNAME
#undef CV_DIR

#define CV_DIR 2
#define KNAME cv_ref_wrw
#include "naive.h"
#undef KNAME
#undef CV_DIR

/* Uniform values in [-1, 1) from a 64-bit xorshift: the same on every machine. */
CV_EXPORT void cv_fill_random(float *p, long n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    for (long i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (float)((double)(s >> 40) / (double)(1ull << 23)) - 1.0f;
    }
}

CV_EXPORT void cv_fill_value(float *p, long n, float v) {
    for (long i = 0; i < n; i++) p[i] = v;
}

/* max |got - ref| / max(max |ref|, 1e-30); +inf when got holds a NaN or an infinity. */
CV_EXPORT double cv_max_error(const float *got, const float *ref, long n) {
    double scale = 0, err = 0;
    for (long i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        const double r = fabs((double)ref[i]), d = fabs((double)got[i] - (double)ref[i]);
        if (r > scale) scale = r;
        if (d > err) err = d;
    }
    return err / (scale > 1e-30 ? scale : 1e-30);
}
