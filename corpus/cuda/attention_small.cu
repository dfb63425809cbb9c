/*
 * attention_small: single-head scaled dot-product attention,
 *   out = softmax(Q K^T * scale) V,  L = 64 tokens, head dim D = 16,
 * in one CTA of 64 threads (2 warps), one query row per thread.
 *
 * K and V (4 KiB each) are staged in shared memory; each thread keeps its
 * query and output row in registers and streams over the 64 keys with the
 * online-softmax recurrence (running max m, running denominator l,
 * rescaling the accumulator when m grows), i.e. the FlashAttention inner
 * loop without the tiling.  scale = 1/sqrt(16) = 0.25.
 *
 * @corpus family attention
 * @corpus launch grid=1,1,1 block=64,1,1 shared=0
 * @corpus param Q     input  f32 1024
 * @corpus param K     input  f32 1024
 * @corpus param V     input  f32 1024
 * @corpus param out   output f32 1024
 * @corpus param scale scalar f32 0.25
 * @corpus shape seq=64 head_dim=16
 * @corpus tags shared-memory,syncthreads,multi-warp,online-softmax
 * @corpus performance grid=1,1,1 block=64,1,1 shared=0 scale=0.25 Q=1024 K=1024 V=1024 out=1024
 * @corpus problem one head: seq 64 x head_dim 16, the sizes compiled in (L, D); the kernel has no batch or head index, so one block is the whole problem
 */
#define L 64
#define D 16

extern "C" __global__ void attention_small(const float* __restrict__ Q,
                                           const float* __restrict__ K,
                                           const float* __restrict__ V,
                                           float* __restrict__ out, float scale)
{
    __shared__ float Ks[L][D];
    __shared__ float Vs[L][D];
    int t = threadIdx.x;

    for (int i = t; i < L * D; i += blockDim.x) {
        Ks[i / D][i % D] = K[i];
        Vs[i / D][i % D] = V[i];
    }
    __syncthreads();

    float q[D], acc[D];
#pragma unroll
    for (int d = 0; d < D; ++d) {
        q[d] = Q[t * D + d] * scale;
        acc[d] = 0.0f;
    }

    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < L; ++j) {
        float s = 0.0f;
#pragma unroll
        for (int d = 0; d < D; ++d) s += q[d] * Ks[j][d];
        float m_new = fmaxf(m, s);
        float corr = __expf(m - m_new);
        float p = __expf(s - m_new);
        l = l * corr + p;
#pragma unroll
        for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * Vs[j][d];
        m = m_new;
    }

    float inv = 1.0f / l;
#pragma unroll
    for (int d = 0; d < D; ++d) out[t * D + d] = acc[d] * inv;
}
