// Bit manipulation per element: popcount, reverse, funnel shifts, xorshift rounds.
// No __restrict__: plain ld.global, as a user often writes it (nvcc then emits no ld.global.nc).
extern "C" __global__ void bitmix(const unsigned* in, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned v = in[i];
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
        v ^= v << 13; v ^= v >> 17; v ^= v << 5;
        v = __funnelshift_l(v, v, r + 7) + __popc(v) + __brev(v);
    }
    out[i] = v;
}
