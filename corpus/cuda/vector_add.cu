/*
 * vector_add: c[i] = a[i] + b[i], one element per thread.
 *
 * The "hello world" of CUDA: a bounds check against n and three scalar
 * global accesses per thread, all through __restrict__ pointers.
 *
 * @corpus family elementwise
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param a input  f32 1024
 * @corpus param b input  f32 1024
 * @corpus param c output f32 1024
 * @corpus param n scalar u32 1024
 * @corpus shape n=1024
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 a=16777216 b=16777216 c=16777216
 * @corpus problem 2^24 f32 elements, one per thread
 */
extern "C" __global__ void vector_add(const float* __restrict__ a,
                                      const float* __restrict__ b,
                                      float* __restrict__ c,
                                      unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
