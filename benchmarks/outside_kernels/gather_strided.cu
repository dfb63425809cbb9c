// A user's strided gather: out[i] = in[i * stride] + in[i * stride + 1], stride 8 floats (32 B), so a
// warp's two loads each touch 32 sectors where a coalesced load touches 4; the second load's sectors
// are the first's (an L1 hit).  Performance launch: n = 2^22, stride 8, grid 16384, block 256.
extern "C" __global__ void gather_strided(float *out, const float *in, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[(long long)i * stride] + in[(long long)i * stride + 1];
}
