// Register-tiled SGEMM: each thread of a 16x16 block computes a 4x4 tile of C (row-major n x n),
// reading A and B from global memory directly in a K loop of k iterations (K given as a scalar).
extern "C" __global__ void sgemm_regtile(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int n, int k) {
    int row = (blockIdx.y * 16 + threadIdx.y) * 4;
    int col = (blockIdx.x * 16 + threadIdx.x) * 4;
    float acc[4][4] = {};
    for (int p = 0; p < k; ++p) {
        float a[4], b[4];
        #pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = A[(row + i) * k + p];
        #pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = B[p * n + col + j];
        #pragma unroll
        for (int i = 0; i < 4; ++i)
            #pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) C[(row + i) * n + col + j] = acc[i][j];
}
