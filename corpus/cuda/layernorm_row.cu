/*
 * layernorm_row: LayerNorm forward over the last dimension, one block per
 * row, with the per-row mean and rstd saved for the backward pass.
 *
 * 8 rows x 512 columns, 256 threads (8 warps) per row, two columns per
 * thread.  Mean and variance use a two-pass (x - mean)^2 formulation; each
 * block-wide sum is a warp shuffle reduction followed by a shared-memory
 * exchange of the 8 warp totals.  y = (x - mean) * rstd * gamma + beta.
 *
 * @corpus family normalization
 * @corpus launch grid=8,1,1 block=256,1,1 shared=0
 * @corpus param x     input  f32 4096
 * @corpus param gamma input  f32 512
 * @corpus param beta  input  f32 512
 * @corpus param y     output f32 4096
 * @corpus param mean  output f32 8
 * @corpus param rstd  output f32 8
 * @corpus param cols  scalar s32 512
 * @corpus param eps   scalar f32 9.999999747378752e-06
 * @corpus shape rows=8 cols=512
 * @corpus tags warp-shuffle,shared-memory,multi-warp
 * @corpus performance grid=4096,1,1 block=256,1,1 shared=0 cols=4096 eps=9.999999747378752e-06 x=16777216 gamma=4096 beta=4096 y=16777216 mean=4096 rstd=4096
 * @corpus problem 4096 rows x 4096 cols f32 (2^24 elements), one row per block of BLOCK=256 threads (compiled in)
 */
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ float block_sum(float v, float* scratch)
{
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < WARPS) ? scratch[lane] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    __syncthreads();  /* scratch is reused by the next call */
    return v;
}

extern "C" __global__ void layernorm_row(const float* __restrict__ x,
                                         const float* __restrict__ gamma,
                                         const float* __restrict__ beta,
                                         float* __restrict__ y,
                                         float* __restrict__ mean,
                                         float* __restrict__ rstd,
                                         int cols, float eps)
{
    __shared__ float scratch[WARPS];
    const float* in = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) s += in[c];
    float mu = block_sum(s, scratch) / cols;

    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float d = in[c] - mu;
        sq += d * d;
    }
    float r = rsqrtf(block_sum(sq, scratch) / cols + eps);

    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        out[c] = (in[c] - mu) * r * gamma[c] + beta[c];
    }
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = mu;
        rstd[blockIdx.x] = r;
    }
}
