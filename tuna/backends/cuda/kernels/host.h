// The CUDA dialect the kernels use, for the host: a kernel's source compiled as C++ runs each
// GPU thread as a host thread (std::thread), one block at a time, __syncthreads() a
// std::barrier, __shared__ memory a static shared by the block's threads. Only for checking
// the kernels' results without a GPU (tuna.backends.cuda.hostcheck): slow, and no timing.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};

namespace tuna_host {
inline thread_local dim3 thread_idx, block_idx;
inline dim3 block_dim, grid_dim;
inline std::barrier<>* block_barrier = nullptr;

// Run kernel() as the grid's blocks in turn, each as `threads` host threads.
template <class Kernel>
void launch(dim3 grid, unsigned threads, Kernel kernel) {
    grid_dim = grid;
    block_dim = dim3{threads, 1, 1};
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                std::barrier<> barrier(threads);
                block_barrier = &barrier;
                std::vector<std::thread> pool;
                pool.reserve(threads);
                for (unsigned t = 0; t < threads; ++t)
                    pool.emplace_back([&, t] {
                        thread_idx = dim3{t, 0, 0};
                        block_idx = dim3{x, y, z};
                        kernel();
                    });
                for (auto& th : pool) th.join();
            }
}

inline unsigned float_as_uint(float f) {
    unsigned u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}
}  // namespace tuna_host

#define threadIdx (tuna_host::thread_idx)
#define blockIdx (tuna_host::block_idx)
#define blockDim (tuna_host::block_dim)
#define gridDim (tuna_host::grid_dim)
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __syncthreads() (tuna_host::block_barrier->arrive_and_wait())
#define __float_as_uint tuna_host::float_as_uint
#define __int_as_float tuna_host::int_as_float
#define TUNA_EXTERN_C
