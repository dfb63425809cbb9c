// Grid-stride sum with a warp shuffle reduction; one atomic per warp.
// No __restrict__: plain ld.global, as a user often writes it (nvcc then emits no ld.global.nc).
extern "C" __global__ void warp_reduce(const float* in, float* out, int n) {
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += in[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
