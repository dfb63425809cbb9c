// A user's register-tiled SGEMM: 16x16 threads, each computing a 4x4 tile of C (64x64 per block),
// K loop over 8-wide slices through shared memory.  Performance launch: M = N = K = 2048,
// grid 32x32, block 16x16 (K/8 = 256 trips of the K loop).
#define BM 64
#define BN 64
#define BK 8
extern "C" __global__ void sgemm_reg(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int l = tid; l < BM * BK; l += 256) {
            int r = l / BK, c = l % BK;
            As[c][r] = A[(row0 + r) * K + k0 + c];
            int rb = l / BN, cb = l % BN;
            Bs[rb][cb] = B[(k0 + rb) * N + col0 + cb];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) { a[i] = As[k][ty * 4 + i]; b[i] = Bs[k][tx * 4 + i]; }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) C[(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}
