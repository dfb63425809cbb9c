// A user's matrix-vector product y = A x (A row-major rows x k): one warp per row, each lane walks
// the K loop with a stride of 32, a shuffle reduction, lane 0 writes.
// Performance launch: 8192 rows, k = 4096, grid 1024, block 256 (8 warps = 8 rows per block):
// 128 MiB of A, 16 KiB of x read, 32 KiB written.
extern "C" __global__ void gemv_k(const float *A, const float *x, float *y, int rows, int k) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float acc = 0.f;
    for (int j = lane; j < k; j += 32) acc += A[(size_t)row * k + j] * x[j];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}
