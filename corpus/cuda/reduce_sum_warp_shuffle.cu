/*
 * reduce_sum_warp_shuffle: full sum in one pass with warp shuffles and a
 * global atomic.
 *
 * Grid-stride accumulation into a register, a butterfly of
 * __shfl_down_sync inside each warp, warp totals through 8 floats of
 * shared memory, a final shuffle reduction by warp 0, and one atomicAdd
 * per block into *out (which must be zeroed before the launch).
 *
 * @corpus family reduction
 * @corpus launch grid=2,1,1 block=256,1,1 shared=0
 * @corpus param in  input f32 4096
 * @corpus param out inout f32 1 init=zero
 * @corpus param n   scalar s32 4096
 * @corpus shape n=4096
 * @corpus tags warp-shuffle,atomics,multi-warp,grid-stride
 * @corpus performance grid=4096,1,1 block=256,1,1 shared=0 n=16777216 in=16777216 out=1
 * @corpus problem sum of 2^24 f32 elements, grid-stride: 4096 blocks of BLOCK=256 threads (compiled in), 16 per thread, one atomic per block
 */
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

extern "C" __global__ void reduce_sum_warp_shuffle(const float* __restrict__ in,
                                                   float* out, int n)
{
    __shared__ float warp_totals[WARPS];
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;

    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) {
        v += in[i];
    }
    v = warp_sum(v);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();

    if (warp == 0) {
        v = (lane < WARPS) ? warp_totals[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}
