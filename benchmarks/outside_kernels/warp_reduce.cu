// A user's warp reduction: each warp sums 32 x 8 floats (grid-stride), shuffles, lane 0 adds atomically.
// Performance launch: n = 2^24, grid 8192, block 256 (64 MiB read).
extern "C" __global__ void warp_reduce(const float *x, float *sum, int n) {
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += x[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}
