// 2D convolution, NCHW, FP32, in each direction, as an implicit GEMM; forward and backward data
// with a 1x1 filter, stride 1 and no padding also as one GEMM per image (ONE_BY_ONE).
//
// y[n][k][p][q] = sum over c, r, s of w[k][c][r][s] * x[n][c][p*SH-PH+r*DH][q*SW-PW+s*DW]
//
// The kernel takes (src, mat, out): the tensor gathered on the fly into the GEMM's B, the one
// read as its A, and the one computed (the order of cpuconv's kernels):
//
//   DIR_  direction                   src  mat  out  GEMM_M  GEMM_N        GEMM_K (reduction)
//   0     forward (F)                 x    w    y    K/G     N*P*Q         C/G*R*S
//   1     backward data (B)           dy   w    dx   C/G     N*H*W         K/G*R*S
//   2     backward weights (W)        x    dy   dw   K/G     C/G*R*S       N*P*Q
//
// A (M x GEMM_K) is read VW floats at a time along its rows, where they are contiguous: the
// weights' rows forward, dy's rows of P*Q positions for backward weights; backward data reads
// the weights transposed, one float at a time (A_VW is 1). B is gathered one float at a time,
// except by the 1x1 solvers, which read its contiguous rows (x's, dy's) VW floats at a time.
// Backward data gathers dy at the positions p = (h + PH - r*DH) / SH where that divides;
// elsewhere zero.
//
// A block computes a BM x BN tile of the output in steps of BK along the reduction, each of its
// (BM/TM) * (BN/TN) threads a TM x TN tile in registers; the A and B tiles of a step go through
// shared memory (rows padded by PAD floats; two buffers when DB is 1, so that the next step's
// loads overlap this step's arithmetic). blockIdx.z is the group (the 1x1 solvers:
// n * G_ + g).
//
// Everything is a compile-time constant, one cubin per candidate and problem:
//   problem  N_ C_ H_ W_ K_ R_ S_ P_ Q_ SH SW PH PW DH DW G_ DIR_
//   tile     BM BN BK TM TN VW PAD DB
//   solver   ONE_BY_ONE (0: implicit GEMM, 1: batched GEMM; forward and backward data)
// The same source compiles as host C++ (kernels/host.h: a GPU thread is a host thread), which
// is how its correctness is tested without a GPU.

#ifndef TUNA_EXTERN_C
#define TUNA_EXTERN_C extern "C"
#endif

constexpr int CG = C_ / G_;
constexpr int KG = K_ / G_;
constexpr int PQ = P_ * Q_;
constexpr int HW = H_ * W_;
constexpr int RS = R_ * S_;
#if DIR_ == 1
constexpr int GEMM_M = CG;
constexpr int GEMM_K = KG * RS;
#if ONE_BY_ONE
constexpr int GEMM_N = HW;  // per image: blockIdx.z is n * G_ + g
#else
constexpr int GEMM_N = N_ * HW;
#endif
#elif DIR_ == 2
constexpr int GEMM_M = KG;
constexpr int GEMM_K = N_ * PQ;
constexpr int GEMM_N = CG * RS;
#else
constexpr int GEMM_M = KG;
constexpr int GEMM_K = CG * R_ * S_;
#if ONE_BY_ONE
constexpr int GEMM_N = PQ;  // per image: blockIdx.z is n * G_ + g
#else
constexpr int GEMM_N = N_ * PQ;  // every image: blockIdx.z is g
#endif
#endif
constexpr int THREADS_N = BN / TN;
constexpr int THREADS = (BM / TM) * THREADS_N;
#if DIR_ == 1
constexpr int A_VW = 1;  // the weights transposed: no contiguous run along A's rows
#else
constexpr int A_VW = VW;
#endif
constexpr int A_VECS = BM * BK / A_VW;  // vectors of A_VW floats in an A tile
constexpr int A_LOADS = (A_VECS + THREADS - 1) / THREADS;
#if ONE_BY_ONE
constexpr int B_VW = VW;
#else
constexpr int B_VW = 1;  // a gather: one float at a time
#endif
constexpr int B_VECS = BK * BN / B_VW;
constexpr int B_LOADS = (B_VECS + THREADS - 1) / THREADS;
constexpr int TILES_K = (GEMM_K + BK - 1) / BK;

// VW floats from global memory; p is VW-aligned.
template <int V>
__device__ __forceinline__ void load_vec(const float* __restrict__ p, float* v) {
    if constexpr (V == 4) {
        float4 t = *reinterpret_cast<const float4*>(p);
        v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
    } else if constexpr (V == 2) {
        float2 t = *reinterpret_cast<const float2*>(p);
        v[0] = t.x; v[1] = t.y;
    } else {
        v[0] = *p;
    }
}

// Step t's A tile (rows m0.., reduction k0..) into registers: zero outside the matrix.
__device__ __forceinline__ void load_a(const float* __restrict__ mat, int g, int m0, int k0,
                                       float (&ra)[A_LOADS][A_VW]) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        const int e = threadIdx.x + i * THREADS;
        const int m = e / (BK / A_VW), kv = (e % (BK / A_VW)) * A_VW;
        const int row = m0 + m, col = k0 + kv;
        if (e < A_VECS && row < GEMM_M && col < GEMM_K) {
#if DIR_ == 1  // w[k][c][r][s] read as A[c][k * RS + rs]
            const int k = col / RS, rs = col % RS;
            ra[i][0] = mat[((long long)(g * KG + k) * CG + row) * RS + rs];
#elif DIR_ == 2  // dy[n][k][pq] as A[k][n * PQ + pq]: VW divides PQ, a vector stays in an image
            const int n = col / PQ, pq = col % PQ;
            load_vec<A_VW>(mat + ((long long)n * K_ + g * KG + row) * PQ + pq, ra[i]);
#else
            load_vec<A_VW>(mat + (long long)(g * KG + row) * GEMM_K + col, ra[i]);
#endif
        } else {
#pragma unroll
            for (int j = 0; j < A_VW; ++j) ra[i][j] = 0.0f;
        }
    }
}

// Step t's B tile (reduction k0.., columns n0..) into registers: zero outside the matrix
// and in the padding.
__device__ __forceinline__ void load_b(const float* __restrict__ src, int img, int g, int n0,
                                       int k0, float (&rb)[B_LOADS][B_VW]) {
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        const int e = threadIdx.x + i * THREADS;
        const int kk = e / (BN / B_VW), nv = (e % (BN / B_VW)) * B_VW;
        const int row = k0 + kk, col = n0 + nv;
#if ONE_BY_ONE
        if (e < B_VECS && row < GEMM_K && col < GEMM_N) {
#if DIR_ == 1  // dy's rows: a 1x1 filter, stride 1 and no padding make P x Q = H x W
            load_vec<B_VW>(src + ((long long)img * K_ + g * KG + row) * PQ + col, rb[i]);
#else
            load_vec<B_VW>(src + ((long long)img * C_ + g * CG + row) * PQ + col, rb[i]);
#endif
        } else {
#pragma unroll
            for (int j = 0; j < B_VW; ++j) rb[i][j] = 0.0f;
        }
#else
        (void)img;
        float v = 0.0f;
        if (e < B_VECS && row < GEMM_K && col < GEMM_N) {
#if DIR_ == 1  // dy[n][k][p][q] as B[k * RS + rs][n * HW + hw], zero where no p or q hits
            const int k = row / RS, rs = row % RS;
            const int r = rs / S_, s = rs % S_;
            const int n = col / HW, hw = col % HW;
            const int hp = hw / W_ + PH - r * DH;
            const int wq = hw % W_ + PW - s * DW;
            if (hp >= 0 && wq >= 0 && hp % SH == 0 && wq % SW == 0 && hp / SH < P_ &&
                wq / SW < Q_) {
                v = src[(((long long)n * K_ + g * KG + k) * P_ + hp / SH) * Q_ + wq / SW];
            }
#else  // x[n][c][h][w] as B[c * RS + rs][n * PQ + pq] (backward weights: transposed)
#if DIR_ == 2
            const int n = row / PQ, pq = row % PQ;
            const int c = col / RS, rs = col % RS;
#else
            const int c = row / RS, rs = row % RS;
            const int n = col / PQ, pq = col % PQ;
#endif
            const int r = rs / S_, s = rs % S_;
            const int p = pq / Q_, q = pq % Q_;
            const int h = p * SH - PH + r * DH;
            const int w = q * SW - PW + s * DW;
            if (h >= 0 && h < H_ && w >= 0 && w < W_) {
                v = src[(((long long)n * C_ + g * CG + c) * H_ + h) * W_ + w];
            }
#endif
        }
        rb[i][0] = v;
#endif
    }
}

__device__ __forceinline__ void store_a(float (*as)[BM + PAD],
                                        const float (&ra)[A_LOADS][A_VW]) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        const int e = threadIdx.x + i * THREADS;
        if (e < A_VECS) {
            const int m = e / (BK / A_VW), kv = (e % (BK / A_VW)) * A_VW;
#pragma unroll
            for (int j = 0; j < A_VW; ++j) as[kv + j][m] = ra[i][j];
        }
    }
}

__device__ __forceinline__ void store_b(float (*bs)[BN + PAD], const float (&rb)[B_LOADS][B_VW]) {
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        const int e = threadIdx.x + i * THREADS;
        if (e < B_VECS) {
            const int kk = e / (BN / B_VW), nv = (e % (BN / B_VW)) * B_VW;
#pragma unroll
            for (int j = 0; j < B_VW; ++j) bs[kk][nv + j] = rb[i][j];
        }
    }
}

TUNA_EXTERN_C __global__ void conv(const float* __restrict__ src, const float* __restrict__ mat,
                                   float* __restrict__ out) {
    __shared__ float as[1 + DB][BK][BM + PAD];
    __shared__ float bs[1 + DB][BK][BN + PAD];
#if ONE_BY_ONE
    const int img = blockIdx.z / G_, g = blockIdx.z % G_;
#else
    const int img = 0, g = blockIdx.z;
#endif
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    // A thread's rows are ty, ty + BM/TM, ...; its columns tx, tx + BN/TN, ...: neighbouring
    // threads read neighbouring shared-memory words and write neighbouring outputs.
    const int tx = threadIdx.x % THREADS_N, ty = threadIdx.x / THREADS_N;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    float ra[A_LOADS][A_VW];
    float rb[B_LOADS][B_VW];
    load_a(mat, g, m0, 0, ra);
    load_b(src, img, g, n0, 0, rb);
    store_a(as[0], ra);
    store_b(bs[0], rb);
    __syncthreads();

    for (int t = 0; t < TILES_K; ++t) {
        const int cur = DB ? (t & 1) : 0;
        const bool more = t + 1 < TILES_K;
        if (DB && more) {  // the next step's loads are in flight during this step's FMAs
            load_a(mat, g, m0, (t + 1) * BK, ra);
            load_b(src, img, g, n0, (t + 1) * BK, rb);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = as[cur][kk][ty + i * (BM / TM)];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = bs[cur][kk][tx + j * THREADS_N];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (DB) {
            if (more) {
                store_a(as[cur ^ 1], ra);
                store_b(bs[cur ^ 1], rb);
                __syncthreads();
            }
        } else if (more) {
            __syncthreads();  // everyone is done with the tile before it is overwritten
            load_a(mat, g, m0, (t + 1) * BK, ra);
            load_b(src, img, g, n0, (t + 1) * BK, rb);
            store_a(as[0], ra);
            store_b(bs[0], rb);
            __syncthreads();
        }
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + ty + i * (BM / TM);
        if (row >= GEMM_M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tx + j * THREADS_N;
            if (col >= GEMM_N) continue;
#if DIR_ == 1 && ONE_BY_ONE
            out[((long long)img * C_ + g * CG + row) * HW + col] = acc[i][j];
#elif DIR_ == 1
            const int n = col / HW, hw = col % HW;
            out[((long long)n * C_ + g * CG + row) * HW + hw] = acc[i][j];
#elif DIR_ == 2
            out[(long long)(g * KG + row) * GEMM_N + col] = acc[i][j];
#elif ONE_BY_ONE
            out[((long long)img * K_ + g * KG + row) * PQ + col] = acc[i][j];
#else
            const int n = col / PQ, pq = col % PQ;
            out[((long long)n * K_ + g * KG + row) * PQ + pq] = acc[i][j];
#endif
        }
    }
}
