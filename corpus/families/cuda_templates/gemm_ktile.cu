/*
 * gemm_ktile: C = alpha * A B (+ beta * C) with TILE_SZ x TILE_SZ tiles of A and B
 * staged in shared memory and a runtime K loop; the CUDA C tiled-GEMM
 * template of the generated families (gen_cuda_families.py draws the macros).
 *
 * KNAME  entry name   DTYPE float | double   TILE_SZ  8 | 16 | 32
 * TM_ROWS     rows of C per thread (1, 2 or 4): the block is TILE_SZ x (TILE_SZ / TM_ROWS) threads
 * WITH_BETA   1: read C and add beta * C (C is inout); 0: C is written only
 * SMEM_PAD    1: pad the shared rows by one element (bank conflicts), 0: none
 * Row-major A (M x K), B (K x N), C (M x N); edges zero-padded.  The K loop
 * runs ceil(K / TILE_SZ) times, two barriers per trip.
 */
typedef DTYPE T;

extern "C" __global__ void KNAME(const T* __restrict__ A, const T* __restrict__ B, T* C,
                                 int M, int N, int K, T alpha, T beta)
{
    __shared__ T As[TILE_SZ][TILE_SZ + SMEM_PAD];
    __shared__ T Bs[TILE_SZ][TILE_SZ + SMEM_PAD];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE_SZ + tx;
    int row0 = blockIdx.y * TILE_SZ;
    T acc[TM_ROWS];
#pragma unroll
    for (int r = 0; r < TM_ROWS; ++r) acc[r] = (T)0;
    for (int k0 = 0; k0 < K; k0 += TILE_SZ) {
#pragma unroll
        for (int r = 0; r < TM_ROWS; ++r) {
            int ly = ty + r * (TILE_SZ / TM_ROWS);
            int row = row0 + ly;
            As[ly][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : (T)0;
            Bs[ly][tx] = (k0 + ly < K && col < N) ? B[(k0 + ly) * N + col] : (T)0;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE_SZ; ++k) {
            T bv = Bs[k][tx];
#pragma unroll
            for (int r = 0; r < TM_ROWS; ++r) acc[r] += As[ty + r * (TILE_SZ / TM_ROWS)][k] * bv;
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM_ROWS; ++r) {
        int row = row0 + ty + r * (TILE_SZ / TM_ROWS);
        if (row < M && col < N) {
#if WITH_BETA
            C[row * N + col] = alpha * acc[r] + beta * C[row * N + col];
#else
            C[row * N + col] = alpha * acc[r];
#endif
        }
    }
}
