/*
 * relu: out[i] = max(x[i], 0), one element per thread.
 *
 * @corpus family elementwise
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param x   input  f32 1024
 * @corpus param out output f32 1024
 * @corpus param n   scalar s32 1024
 * @corpus shape n=1024
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 x=16777216 out=16777216
 * @corpus problem 2^24 f32 elements, one per thread
 */
extern "C" __global__ void relu(const float* __restrict__ x,
                                float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = fmaxf(x[i], 0.0f);
    }
}
