/*
 * gelu_erf: exact GELU, gelu(x) = 0.5 x (1 + erf(x / sqrt(2))).
 *
 * erff is inlined by nvcc as a piecewise polynomial, giving a branchy,
 * FMA-heavy elementwise kernel.
 *
 * @corpus family elementwise
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param x   input  f32 1024
 * @corpus param out output f32 1024
 * @corpus param n   scalar s32 1024
 * @corpus shape n=1024
 * @corpus tags activation
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 x=16777216 out=16777216
 * @corpus problem 2^24 f32 elements, one per thread
 */
extern "C" __global__ void gelu_erf(const float* __restrict__ x,
                                    float* __restrict__ out, int n)
{
    const float kInvSqrt2 = 0.7071067811865476f;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + erff(v * kInvSqrt2));
    }
}
