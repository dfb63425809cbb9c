/*
 * relu_vec4: ReLU over float4, the hand-vectorised form of relu.cu.
 *
 * Each thread moves 16 bytes with one ld.global.v4.f32 / st.global.v4.f32,
 * which is what ptxopt's load-vectorisation pass aims to produce from
 * scalar code; keeping the two side by side gives a reference point.
 * n4 counts float4s (256 of them = 1024 floats); buffers must be 16-byte
 * aligned.
 *
 * @corpus family elementwise
 * @corpus launch grid=1,1,1 block=256,1,1 shared=0
 * @corpus param x   input  f32 1024
 * @corpus param out output f32 1024
 * @corpus param n4  scalar s32 256
 * @corpus shape n=1024
 * @corpus tags vectorized
 * @corpus performance grid=16384,1,1 block=256,1,1 shared=0 n4=4194304 x=16777216 out=16777216
 * @corpus problem 2^24 f32 elements as 2^22 float4, one float4 per thread
 */
extern "C" __global__ void relu_vec4(const float4* __restrict__ x,
                                     float4* __restrict__ out, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.0f);
        v.y = fmaxf(v.y, 0.0f);
        v.z = fmaxf(v.z, 0.0f);
        v.w = fmaxf(v.w, 0.0f);
        out[i] = v;
    }
}
