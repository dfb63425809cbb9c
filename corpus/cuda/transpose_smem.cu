/*
 * transpose_smem: out = in^T for a 64 x 64 f32 matrix through a padded
 * shared-memory tile (the classic coalesced transpose).
 *
 * 32x32 tiles, 32x8 threads per CTA (each thread moves 4 elements), 2x2
 * grid.  The tile is [32][33]: the extra column staggers the banks so the
 * column-wise reads after __syncthreads() are conflict-free.
 *
 * @corpus family transpose
 * @corpus launch grid=2,2,1 block=32,8,1 shared=0
 * @corpus param in     input  f32 4096
 * @corpus param out    output f32 4096
 * @corpus param width  scalar s32 64
 * @corpus param height scalar s32 64
 * @corpus shape rows=64 cols=64
 * @corpus tags shared-memory,syncthreads
 * @corpus performance grid=128,128,1 block=32,8,1 shared=0 width=4096 height=4096 in=16777216 out=16777216
 * @corpus problem 4096 x 4096 f32 transpose, 32x32 tiles of a 32x8 block (TILE=32, ROWS=8 compiled in)
 */
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_smem(const float* __restrict__ in,
                                          float* __restrict__ out,
                                          int width, int height)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;

#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    }
    __syncthreads();

    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}
