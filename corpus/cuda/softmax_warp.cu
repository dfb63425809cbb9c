/*
 * softmax_warp: row-wise softmax with one warp per row (multi-warp CTA).
 *
 * 16 rows x 128 columns; a 128-thread CTA holds 4 warps = 4 rows, and each
 * lane keeps its 4 columns in registers, so the row is read from global
 * memory once.  Max and sum are butterfly reductions with __shfl_xor_sync;
 * no shared memory and no __syncthreads.
 *
 * @corpus family softmax
 * @corpus launch grid=4,1,1 block=128,1,1 shared=0
 * @corpus param x    input  f32 2048
 * @corpus param y    output f32 2048
 * @corpus param rows scalar s32 16
 * @corpus shape rows=16 cols=128
 * @corpus tags warp-shuffle,multi-warp
 * @corpus performance grid=32768,1,1 block=128,1,1 shared=0 rows=131072 x=16777216 y=16777216
 * @corpus problem 131072 rows x 128 cols f32 (COLS=128 compiled in; 2^24 elements), one warp per row, 4 rows per block
 */
#define COLS 128
#define PER_LANE (COLS / 32)

extern "C" __global__ void softmax_warp(const float* __restrict__ x,
                                        float* __restrict__ y, int rows)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* in = x + row * COLS;

    float v[PER_LANE];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        v[j] = in[lane + 32 * j];
        m = fmaxf(m, v[j]);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));

    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) {
        v[j] = __expf(v[j] - m);
        sum += v[j];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);

    float inv = __frcp_rn(sum);
#pragma unroll
    for (int j = 0; j < PER_LANE; ++j) y[row * COLS + lane + 32 * j] = v[j] * inv;
}
