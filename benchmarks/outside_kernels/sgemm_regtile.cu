// Register-tiled SGEMM, C = A B (row-major n x n, K = k): a 16x16 block computes a 128x128 tile of C,
// each thread an 8x8 register tile; the K loop steps 8 at a time through shared-memory tiles of A and B
// (k / 8 trips: 256 at k = 2048).
#define BM 128
#define BN 128
#define BK 8
extern "C" __global__ void sgemm_regtile(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int n, int k) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < k; k0 += BK) {
        #pragma unroll
        for (int i = 0; i < 4; ++i) {  // 256 threads load 1024 elements of each tile
            int e = tid + 256 * i;
            As[e % BK][e / BK] = A[(row0 + e / BK) * k + k0 + e % BK];
            Bs[e / BN][e % BN] = B[(k0 + e / BN) * n + col0 + e % BN];
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[8], b[8];
            #pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = As[kk][ty * 8 + i];
            #pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = Bs[kk][tx * 8 + j];
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) C[(row0 + ty * 8 + i) * n + col0 + tx * 8 + j] = acc[i][j];
}
