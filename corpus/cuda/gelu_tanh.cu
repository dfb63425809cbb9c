/*
 * gelu_tanh: the tanh approximation of GELU used by GPT-2 / BERT,
 *   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 *
 * tanhf expands inline (no libdevice call survives in the PTX), so the
 * kernel is a realistic mix of FMA chains, ex2.approx and a select.
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
extern "C" __global__ void gelu_tanh(const float* __restrict__ x,
                                     float* __restrict__ out, int n)
{
    const float kSqrt2OverPi = 0.7978845608028654f;
    const float kCoeff = 0.044715f;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = kSqrt2OverPi * (v + kCoeff * v * v * v);
        out[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
