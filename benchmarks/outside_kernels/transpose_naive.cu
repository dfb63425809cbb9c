// A user's naive transpose: each thread reads one row-wise element and writes it column-wise, so a
// warp's 32 stores land 8192 x 4 B apart (32 sectors on 32 lines, not 4 sectors on one line).
// Performance launch: n = 8192, grid 256x1024, block 32x8 (512 MiB moved: 256 MiB read + 256 MiB written).
extern "C" __global__ void transpose_naive(float *out, const float *in, int n) {
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 8 + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[y * n + x];
}
