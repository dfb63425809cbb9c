/*
 * matmul_naive: C = A @ B, one output element per thread, straight from
 * global memory.
 *
 * M = N = K = 32, row-major f32.  16x16 threads per CTA, a 2x2 grid.  The
 * inner loop reads a row of A (broadcast across threadIdx.x) and a column
 * of B (coalesced across threadIdx.x); the baseline for matmul_tiled_smem.
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
 * @corpus performance grid=128,128,1 block=16,16,1 shared=0 M=2048 N=2048 K=2048 A=4194304 B=4194304 C=4194304
 * @corpus problem C = A B, 2048 x 2048 x 2048 f32, one output per thread, 16x16 outputs per block
 */
extern "C" __global__ void matmul_naive(const float* __restrict__ A,
                                        const float* __restrict__ B,
                                        float* __restrict__ C,
                                        int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = acc;
}
