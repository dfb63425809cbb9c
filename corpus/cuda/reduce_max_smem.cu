/*
 * reduce_max_smem: per-block maximum with a shared-memory tree.
 *
 * Same skeleton as reduce_sum_smem but with fmaxf and -inf as the identity,
 * one element per thread, and the tree unrolled by the compiler (BLOCK is
 * a compile-time constant).
 *
 * @corpus family reduction
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param in      input  f32 1024
 * @corpus param partial output f32 4
 * @corpus param n       scalar s32 1024
 * @corpus shape n=1024
 * @corpus tags shared-memory,syncthreads
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 in=16777216 partial=65536
 * @corpus problem max of 2^24 f32 elements to 65536 partials, 256 per block (BLOCK=256 compiled in)
 */
#define BLOCK 256

extern "C" __global__ void reduce_max_smem(const float* __restrict__ in,
                                           float* __restrict__ partial, int n)
{
    __shared__ float smax[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    smax[tid] = (i < n) ? in[i] : -INFINITY;
    __syncthreads();

#pragma unroll
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            smax[tid] = fmaxf(smax[tid], smax[tid + s]);
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = smax[0];
    }
}
