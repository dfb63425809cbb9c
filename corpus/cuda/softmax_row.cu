/*
 * softmax_row: numerically stable row-wise softmax, one block per row,
 * reductions through *dynamic* shared memory.
 *
 * 8 rows x 256 columns; 128 threads per row, each owning 2 columns.  The
 * row maximum and then the sum of exp(x - max) are tree-reduced in an
 * extern __shared__ buffer of blockDim.x floats (512 bytes, passed at
 * launch), the standard shape of a pre-fused softmax kernel.
 *
 * @corpus family softmax
 * @corpus launch grid=8,1,1 block=128,1,1 shared=512
 * @corpus param x    input  f32 2048
 * @corpus param y    output f32 2048
 * @corpus param cols scalar s32 256
 * @corpus shape rows=8 cols=256
 * @corpus tags shared-memory,dynamic-shared,syncthreads
 * @corpus performance grid=4096,1,1 block=256,1,1 shared=1024 cols=4096 x=16777216 y=16777216
 * @corpus problem 4096 rows x 4096 cols f32 (2^24 elements), one row per block of 256 threads, 256 floats of dynamic shared
 */
extern "C" __global__ void softmax_row(const float* __restrict__ x,
                                       float* __restrict__ y, int cols)
{
    extern __shared__ float red[];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    int tid = threadIdx.x;

    float m = -INFINITY;
    for (int c = tid; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) sum += __expf(row[c] - m);
    red[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    float inv = 1.0f / red[0];

    for (int c = tid; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) * inv;
}
