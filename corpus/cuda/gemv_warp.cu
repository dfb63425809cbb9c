/*
 * gemv_warp: y = A @ x, one warp per row, 8 warps per CTA.
 *
 * A is 32 x 128 row-major.  Each lane reads 4 elements of its row as one
 * float4 (coalesced 512-byte row reads), multiplies by the matching
 * slice of x, and the warp sums with __shfl_down_sync.
 *
 * @corpus family matmul
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param A    input  f32 4096
 * @corpus param x    input  f32 128
 * @corpus param y    output f32 32
 * @corpus param rows scalar s32 32
 * @corpus shape rows=32 cols=128
 * @corpus tags warp-shuffle,multi-warp,vectorized
 * @corpus performance grid=16384,1,1 block=256,1,1 shared=0 rows=131072 A=16777216 x=128 y=131072
 * @corpus problem y = A x with A 131072 x 128 f32 (COLS=128 compiled in; 2^24 elements), one warp per row, 8 rows per block
 */
#define COLS 128

extern "C" __global__ void gemv_warp(const float* __restrict__ A,
                                     const float* __restrict__ x,
                                     float* __restrict__ y, int rows)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;

    float4 a = reinterpret_cast<const float4*>(A + row * COLS)[lane];
    float4 b = reinterpret_cast<const float4*>(x)[lane];
    float acc = a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[row] = acc;
}
