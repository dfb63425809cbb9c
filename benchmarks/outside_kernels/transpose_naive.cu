// Naive out-of-place transpose of an n x n float matrix: one thread per element.
// No __restrict__: plain ld.global, as a user often writes it (nvcc then emits no ld.global.nc).
extern "C" __global__ void transpose_naive(const float* in, float* out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[y * n + x];
}
