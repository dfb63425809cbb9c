/*
 * scan_block: block-level inclusive prefix sum (Hillis-Steele) in shared
 * memory with double buffering.
 *
 * Each 256-thread block scans its own 256 elements in log2(256) = 8 steps,
 * ping-ponging between two shared buffers so each step needs a single
 * __syncthreads().  The block's total goes to block_sums[blockIdx.x], the
 * input for the second level of a multi-block scan.
 *
 * @corpus family scan
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param in         input  f32 1024
 * @corpus param out        output f32 1024
 * @corpus param block_sums output f32 4
 * @corpus param n          scalar s32 1024
 * @corpus shape n=1024
 * @corpus tags shared-memory,syncthreads
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 in=16777216 out=16777216 block_sums=65536
 * @corpus problem block-wise inclusive scan of 2^24 f32 elements, 256 per block (BLOCK=256 compiled in)
 */
#define BLOCK 256

extern "C" __global__ void scan_block(const float* __restrict__ in,
                                      float* __restrict__ out,
                                      float* __restrict__ block_sums, int n)
{
    __shared__ float buf[2][BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;

    int cur = 0;
    buf[cur][tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();

    for (int off = 1; off < BLOCK; off <<= 1) {
        float v = buf[cur][tid];
        if (tid >= off) v += buf[cur][tid - off];
        buf[cur ^ 1][tid] = v;
        cur ^= 1;
        __syncthreads();
    }
    if (i < n) out[i] = buf[cur][tid];
    if (tid == BLOCK - 1) block_sums[blockIdx.x] = buf[cur][tid];
}
