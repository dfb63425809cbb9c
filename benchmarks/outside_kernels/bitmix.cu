// A user's bit-manipulation kernel: popcount, bit reversal and a rotate per 32-bit word.
// Performance launch: n = 2^25, grid 131072, block 256 (256 MiB: 128 MiB read + 128 MiB written).
extern "C" __global__ void bitmix(const unsigned *in, unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = in[i];
        unsigned r = __brev(v) ^ (unsigned)__popc(v);
        out[i] = (r << 7) | (r >> 25);
    }
}
