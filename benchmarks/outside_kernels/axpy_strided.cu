// A user's strided axpy: y[i * incy] += a * x[i * incx] (BLAS-style increments), one element per thread.
// Performance launch: n = 2^22, incx = 2, incy = 1, grid 16384, block 256: x is read every other float
// (each 32-byte sector is still moved whole: 32 MiB of x sectors), y read and written (16 MiB each way).
extern "C" __global__ void axpy_strided(int n, float a, const float *x, int incx, float *y, int incy) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[(size_t)i * incy] += a * x[(size_t)i * incx];
}
