/*
 * scan_warp_shuffle: block-level exclusive prefix sum of int32 built from
 * warp-shuffle scans (multi-warp).
 *
 * Step 1: each warp does an inclusive scan with __shfl_up_sync.
 * Step 2: the 8 warp totals go through shared memory and warp 0 scans them.
 * Step 3: every thread adds its warp's offset and subtracts its own input
 *         to make the result exclusive.
 *
 * @corpus family scan
 * @corpus launch grid=2,1,1 block=256,1,1 shared=0
 * @corpus param in  input  s32 512 range=0,100
 * @corpus param out output s32 512
 * @corpus param n   scalar s32 512
 * @corpus shape n=512
 * @corpus tags warp-shuffle,multi-warp
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 in=16777216 out=16777216
 * @corpus problem block-wise exclusive scan of 2^24 s32 elements, 256 per block (BLOCK=256 compiled in)
 */
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ int warp_inclusive_scan(int v, int lane)
{
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += up;
    }
    return v;
}

extern "C" __global__ void scan_warp_shuffle(const int* __restrict__ in,
                                             int* __restrict__ out, int n)
{
    __shared__ int warp_totals[WARPS];
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    int i = blockIdx.x * BLOCK + threadIdx.x;

    int x = (i < n) ? in[i] : 0;
    int incl = warp_inclusive_scan(x, lane);
    if (lane == 31) warp_totals[warp] = incl;
    __syncthreads();

    if (warp == 0) {
        int t = (lane < WARPS) ? warp_totals[lane] : 0;
        t = warp_inclusive_scan(t, lane);
        if (lane < WARPS) warp_totals[lane] = t;
    }
    __syncthreads();

    int offset = (warp > 0) ? warp_totals[warp - 1] : 0;
    if (i < n) out[i] = offset + incl - x;
}
