// What the evaluate phase needs besides the candidates, built with the same problem macros
// (N_ C_ H_ W_ K_ R_ S_ P_ Q_ SH SW PH PW DH DW G_) into one cubin per problem:
//   conv_reference  the direct convolution, one thread per output; also the sum of the
//                   products' magnitudes, the scale a candidate's error is measured against
//   fill            deterministic pseudo-random data in [-1, 1)
//   compare         the largest |out - ref| / magnitude over an output (NaN counts as infinite)

#ifndef TUNA_EXTERN_C
#define TUNA_EXTERN_C extern "C"
#endif

constexpr int CG = C_ / G_;
constexpr int KG = K_ / G_;

TUNA_EXTERN_C __global__ void conv_reference(const float* __restrict__ in,
                                             const float* __restrict__ wei,
                                             float* __restrict__ ref, float* __restrict__ mag) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)N_ * K_ * P_ * Q_) return;
    const int q = i % Q_, p = (i / Q_) % P_;
    const int k = (i / ((long long)P_ * Q_)) % K_;
    const int n = i / ((long long)K_ * P_ * Q_);
    const int g = k / KG;
    double sum = 0.0, size = 0.0;
    for (int c = 0; c < CG; ++c) {
        for (int r = 0; r < R_; ++r) {
            const int h = p * SH - PH + r * DH;
            if (h < 0 || h >= H_) continue;
            for (int s = 0; s < S_; ++s) {
                const int w = q * SW - PW + s * DW;
                if (w < 0 || w >= W_) continue;
                const double x = in[(((long long)n * C_ + g * CG + c) * H_ + h) * W_ + w];
                const double y = wei[(((long long)k * CG + c) * R_ + r) * S_ + s];
                sum += x * y;
                size += fabs(x * y);
            }
        }
    }
    ref[i] = (float)sum;
    mag[i] = (float)size;
}

TUNA_EXTERN_C __global__ void fill(float* __restrict__ p, long long n, unsigned seed) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed;
        x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
        p[i] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

TUNA_EXTERN_C __global__ void compare(const float* __restrict__ out, const float* __restrict__ ref,
                                      const float* __restrict__ mag, long long n,
                                      unsigned* __restrict__ worst) {
    float err = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float e = fabsf(out[i] - ref[i]) / (mag[i] + 1e-30f);
        if (!(e <= 3.0e38f)) e = __int_as_float(0x7f800000);  // NaN or infinite
        err = fmaxf(err, e);
    }
    atomicMax(worst, __float_as_uint(err));  // non-negative floats order as their bits do
}
