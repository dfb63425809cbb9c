// Asynchronous copies (sm_80+): cp.async.ca/.cg.shared.global with
// src-size operands, cp.async.commit_group / wait_group / wait_all,
// cp.async.mbarrier.arrive, mbarrier.* (cuda::barrier), the pipeline
// primitives and cooperative_groups::memcpy_async.
// @variant sm89 -arch=sm_89 -O3
// @variant sm90 -arch=sm_90 -O3
#include <cuda_pipeline.h>
#include <cuda/barrier>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;

__global__ void pipeline_kernel(float *out, const float *in, int n)
{
    __shared__ __align__(16) float buf[2][256];
    int t = threadIdx.x;
    int stages = n / 256;
    __pipeline_memcpy_async(&buf[0][t], &in[t], sizeof(float));
    __pipeline_commit();
    float acc = 0.0f;
    for (int s = 0; s < stages; ++s) {
        if (s + 1 < stages)
            __pipeline_memcpy_async(&buf[(s + 1) & 1][t], &in[(s + 1) * 256 + t], sizeof(float), 0);
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        acc += buf[s & 1][(t + 1) & 255];
        __syncthreads();
    }
    if (t < n)
        out[blockIdx.x * 256 + t] = acc;
}

__global__ void vec_copy_kernel(float4 *out, const float4 *in, int n)
{
    __shared__ __align__(16) float4 tile[128];
    int t = threadIdx.x;
    // 16-byte cp.async.cg with a zero-fill source size
    __pipeline_memcpy_async(&tile[t], &in[blockIdx.x * 128 + t], sizeof(float4), t < n ? 0 : 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    out[blockIdx.x * 128 + t] = tile[127 - t];
}

__global__ void barrier_kernel(float *out, const float *in, int n)
{
    __shared__ float tile[256];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0)
        init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, tile, in + blockIdx.x * 256, sizeof(float) * 256, bar);
    bar.arrive_and_wait();
    int t = threadIdx.x;
    if (t < n)
        out[blockIdx.x * 256 + t] = tile[255 - t] * 2.0f;
}

__global__ void cg_memcpy_kernel(float *out, const float *in, int n)
{
    __shared__ float tile[512];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, tile, in + blockIdx.x * 512, sizeof(float) * 512);
    cg::wait(block);
    int t = threadIdx.x;
    if (t < n)
        out[blockIdx.x * 512 + t] = tile[511 - t];
}
