/*
 * matmul_tiled_smem: C = A @ B with 16x16 tiles staged in shared memory.
 *
 * M = N = K = 32, row-major f32, 16x16 threads per CTA, 2x2 grid.  Each
 * K-step loads one tile of A and one of B cooperatively (one element per
 * thread, zero-padded at the edges), synchronises, does 16 unrolled FMAs
 * from shared memory, and synchronises again before the next load.
 *
 * @corpus family matmul
 * @corpus launch grid=2,2,1 block=16,16,1 shared=0
 * @corpus param A input  f32 1024
 * @corpus param B input  f32 1024
 * @corpus param C output f32 1024
 * @corpus param M scalar s32 32
 * @corpus param N scalar s32 32
 * @corpus param K scalar s32 32
 * @corpus shape m=32 n=32 k=32
 * @corpus tags shared-memory,syncthreads
 * @corpus performance grid=128,128,1 block=16,16,1 shared=0 M=2048 N=2048 K=2048 A=4194304 B=4194304 C=4194304
 * @corpus problem C = A B, 2048 x 2048 x 2048 f32, 16x16 tiles (TILE=16 compiled in: the block must be 16x16)
 */
#define TILE 16

extern "C" __global__ void matmul_tiled_smem(const float* __restrict__ A,
                                             const float* __restrict__ B,
                                             float* __restrict__ C,
                                             int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
