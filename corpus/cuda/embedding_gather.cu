/*
 * embedding_gather: out[t, :] = table[ids[t], :] (nn.Embedding forward).
 *
 * Vocabulary 128 x dim 32 (a 16 KiB table), 32 tokens.  The 2D block is
 * 32 lanes (one per embedding column, so each row copy is coalesced) by 8
 * tokens; 4 CTAs cover the 32 tokens.  ids are int32 in [0, 128).
 *
 * @corpus family gather
 * @corpus launch grid=4,1,1 block=32,8,1 shared=0
 * @corpus param table  input  f32 4096
 * @corpus param ids    input  s32 32 range=0,128
 * @corpus param out    output f32 1024
 * @corpus param tokens scalar s32 32
 * @corpus param dim    scalar s32 32
 * @corpus shape vocab=128 dim=32 tokens=32
 * @corpus performance grid=1024,1,1 block=32,8,1 shared=0 tokens=8192 dim=4096 table=131072000 ids=8192 out=33554432
 * @corpus problem 8192 tokens (batch 4 x seq 2048) of a 32000 x 4096 f32 embedding table, 8 tokens per block
 */
extern "C" __global__ void embedding_gather(const float* __restrict__ table,
                                            const int* __restrict__ ids,
                                            float* __restrict__ out,
                                            int tokens, int dim)
{
    int t = blockIdx.x * blockDim.y + threadIdx.y;
    if (t >= tokens) return;
    const float* src = table + (size_t)ids[t] * dim;
    float* dst = out + (size_t)t * dim;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
        dst[c] = src[c];
    }
}
