/*
 * saxpy: y = alpha * x + y with a grid-stride loop.
 *
 * 256 threads cover n = 1000 elements, so each thread runs the loop about
 * four times and the last trip is partial: the loop is the point here.
 * y is read and written (inout).
 *
 * @corpus family elementwise
 * @corpus launch grid=2,1,1 block=128,1,1 shared=0
 * @corpus param n     scalar s32 1000
 * @corpus param alpha scalar f32 2.5
 * @corpus param x     input  f32 1000
 * @corpus param y     inout  f32 1000
 * @corpus shape n=1000
 * @corpus tags grid-stride
 * @corpus performance grid=4096,1,1 block=256,1,1 shared=0 n=16777216 alpha=2.5 x=16777216 y=16777216
 * @corpus problem 2^24 f32 elements, grid-stride: 4096 blocks of 256 threads, 16 elements per thread
 */
extern "C" __global__ void saxpy(int n, float alpha,
                                 const float* __restrict__ x,
                                 float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x) {
        y[i] = alpha * x[i] + y[i];
    }
}
