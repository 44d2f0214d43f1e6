// What the evaluate phase needs besides the candidates, built with the same problem macros
// (N_ C_ H_ W_ K_ R_ S_ P_ Q_ SH SW PH PW DH DW G_ DIR_) into one cubin per problem:
//   conv_reference  the direct convolution in the problem's direction, one thread per element
//                   of what it computes (y forward, dx backward data, dw backward weights);
//                   also the sum of the products' magnitudes, the scale a candidate's error is
//                   measured against. It takes (src, mat) as the candidates do (kernels/conv.cu)
//   fill            deterministic pseudo-random data in [-1, 1)
//   compare         the largest |out - ref| / magnitude over an output (NaN counts as infinite)

#ifndef TUNA_EXTERN_C
#define TUNA_EXTERN_C extern "C"
#endif

constexpr int CG = C_ / G_;
constexpr int KG = K_ / G_;

// x, w and dy (or y) at their indices: the one definition of the layouts, NCHW and KCRS.
__device__ __forceinline__ long long x_at(int n, int c, int h, int w) {
    return (((long long)n * C_ + c) * H_ + h) * W_ + w;
}
__device__ __forceinline__ long long w_at(int k, int c, int r, int s) {
    return (((long long)k * CG + c) * R_ + r) * S_ + s;
}
__device__ __forceinline__ long long y_at(int n, int k, int p, int q) {
    return (((long long)n * K_ + k) * P_ + p) * Q_ + q;
}

#if DIR_ == 1
constexpr long long OUTPUTS = (long long)N_ * C_ * H_ * W_;
#elif DIR_ == 2
constexpr long long OUTPUTS = (long long)K_ * CG * R_ * S_;
#else
constexpr long long OUTPUTS = (long long)N_ * K_ * P_ * Q_;
#endif

TUNA_EXTERN_C __global__ void conv_reference(const float* __restrict__ src,
                                             const float* __restrict__ mat,
                                             float* __restrict__ ref, float* __restrict__ mag) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= OUTPUTS) return;
    double sum = 0.0, size = 0.0;
#if DIR_ == 1  // dx[n][c][h][w] = sum over k, r, s of dy[n][k][p][q] * w[k][c][r][s]
    const int w = i % W_, h = (i / W_) % H_;
    const int c = (i / ((long long)H_ * W_)) % C_;
    const int n = i / ((long long)C_ * H_ * W_);
    const int g = c / CG;
    for (int k = g * KG; k < (g + 1) * KG; ++k) {
        for (int r = 0; r < R_; ++r) {
            const int ph = h + PH - r * DH;
            if (ph < 0 || ph % SH || ph / SH >= P_) continue;
            for (int s = 0; s < S_; ++s) {
                const int qw = w + PW - s * DW;
                if (qw < 0 || qw % SW || qw / SW >= Q_) continue;
                const double a = src[y_at(n, k, ph / SH, qw / SW)];
                const double b = mat[w_at(k, c - g * CG, r, s)];
                sum += a * b;
                size += fabs(a * b);
            }
        }
    }
#elif DIR_ == 2  // dw[k][c][r][s] = sum over n, p, q of x[n][c][h][w] * dy[n][k][p][q]
    const int s = i % S_, r = (i / S_) % R_;
    const int c = (i / ((long long)R_ * S_)) % CG;
    const int k = i / ((long long)CG * R_ * S_);
    const int g = k / KG;
    for (int n = 0; n < N_; ++n) {
        for (int p = 0; p < P_; ++p) {
            const int h = p * SH - PH + r * DH;
            if (h < 0 || h >= H_) continue;
            for (int q = 0; q < Q_; ++q) {
                const int w = q * SW - PW + s * DW;
                if (w < 0 || w >= W_) continue;
                const double a = src[x_at(n, g * CG + c, h, w)];
                const double b = mat[y_at(n, k, p, q)];
                sum += a * b;
                size += fabs(a * b);
            }
        }
    }
#else  // y[n][k][p][q] = sum over c, r, s of x[n][c][h][w] * w[k][c][r][s]
    const int q = i % Q_, p = (i / Q_) % P_;
    const int k = (i / ((long long)P_ * Q_)) % K_;
    const int n = i / ((long long)K_ * P_ * Q_);
    const int g = k / KG;
    for (int c = 0; c < CG; ++c) {
        for (int r = 0; r < R_; ++r) {
            const int h = p * SH - PH + r * DH;
            if (h < 0 || h >= H_) continue;
            for (int s = 0; s < S_; ++s) {
                const int w = q * SW - PW + s * DW;
                if (w < 0 || w >= W_) continue;
                const double a = src[x_at(n, g * CG + c, h, w)];
                const double b = mat[w_at(k, c, r, s)];
                sum += a * b;
                size += fabs(a * b);
            }
        }
    }
#endif
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
