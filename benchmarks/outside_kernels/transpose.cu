// A user's tiled transpose: 32x32 tiles through shared memory, 32x8 threads, 4 rows per thread.
// Performance launch: n = 8192, grid 256x256, block 32x8 (512 MiB moved: 256 MiB read + 256 MiB written).
#define TILE 32
#define ROWS 8
extern "C" __global__ void transpose(float *out, const float *in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < n && y + j < n) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < n && y + j < n) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
