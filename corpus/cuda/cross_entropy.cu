/*
 * cross_entropy: per-row softmax cross-entropy loss from logits,
 *   loss[r] = logsumexp(logits[r, :]) - logits[r, label[r]],
 * one warp per row, 4 rows per 128-thread CTA.
 *
 * 32 rows x 100 classes: 100 is not a multiple of 32, so the strided loops
 * have a ragged tail.  Labels are int32 in [0, 100).
 *
 * @corpus family loss
 * @corpus launch grid=8,1,1 block=128,1,1 shared=0
 * @corpus param logits  input  f32 3200
 * @corpus param labels  input  s32 32 range=0,100
 * @corpus param loss    output f32 32
 * @corpus param rows    scalar s32 32
 * @corpus param classes scalar s32 100
 * @corpus shape rows=32 classes=100
 * @corpus tags warp-shuffle,multi-warp
 * @corpus performance grid=1024,1,1 block=128,1,1 shared=0 rows=4096 classes=32000 logits=131072000 labels=4096 loss=4096
 * @corpus problem 4096 tokens x 32000-class vocabulary (f32 logits, 500 MiB), one warp per row, 4 rows per block
 */
extern "C" __global__ void cross_entropy(const float* __restrict__ logits,
                                         const int* __restrict__ labels,
                                         float* __restrict__ loss,
                                         int rows, int classes)
{
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* z = logits + row * classes;

    float m = -INFINITY;
    for (int c = lane; c < classes; c += 32) m = fmaxf(m, z[c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));

    float s = 0.0f;
    for (int c = lane; c < classes; c += 32) s += expf(z[c] - m);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);

    if (lane == 0) {
        loss[row] = logf(s) + m - z[labels[row]];
    }
}
