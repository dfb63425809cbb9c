/*
 * reduce_sum_smem: per-block sum with a shared-memory tree (CUDA samples
 * "reduce #4" style).
 *
 * Each thread adds two elements while loading (blockDim * 2 elements per
 * block), then the block halves the active range with a __syncthreads()
 * after every step.  Thread 0 writes the block's partial sum to
 * partial[blockIdx.x]; a second launch (or the host) adds the 4 partials.
 *
 * @corpus family reduction
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param in      input  f32 2048
 * @corpus param partial output f32 4
 * @corpus param n       scalar u32 2048
 * @corpus shape n=2048
 * @corpus tags shared-memory,syncthreads
 * @corpus performance grid=32768,1,1 block=256,1,1 shared=0 n=16777216 in=16777216 partial=32768
 * @corpus problem sum of 2^24 f32 elements to 32768 partials, 512 per block of BLOCK=256 threads (compiled in)
 */
#define BLOCK 256

extern "C" __global__ void reduce_sum_smem(const float* __restrict__ in,
                                           float* __restrict__ partial,
                                           unsigned int n)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (BLOCK * 2) + tid;

    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v += in[i + BLOCK];
    sdata[tid] = v;
    __syncthreads();

    for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
