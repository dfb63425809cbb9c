// Warp-level primitives: shfl.sync (idx/up/down/bfly, with a clamp
// operand and a predicate result), vote.sync (ballot/any/all/uni),
// match.sync, redux.sync (sm_80), activemask, __syncwarp with a mask,
// __nanosleep, bit tricks (popc, clz, brev, bfind, prmt, funnel shifts).
// @variant sm89 -arch=sm_89 -O3

__global__ void warp_kernel(unsigned *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    unsigned full = 0xffffffffu;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(full, v, off);
    float b = __shfl_sync(full, v, 0);
    float u = __shfl_up_sync(full, v, 1, 16);
    float x = __shfl_xor_sync(0x0000ffffu, v, 3, 8);
    unsigned ballot = __ballot_sync(full, v > 0.0f);
    int any = __any_sync(full, v < -1.0f);
    int all = __all_sync(full, v == b);
    int uni = __uni_sync(full, i & 1);
    unsigned match = __match_any_sync(full, (unsigned)i >> 3);
    int pred;
    unsigned match_all = __match_all_sync(full, (unsigned long long)i >> 5, &pred);
    unsigned red = __reduce_add_sync(full, (unsigned)i);
    unsigned rmax = __reduce_max_sync(full, (unsigned)i);
    unsigned rand_ = __reduce_and_sync(full, (unsigned)i);
    unsigned act = __activemask();
    __syncwarp(0x0f0f0f0fu & act);
    __nanosleep(100);
    unsigned bits = __popc(ballot) + __clz(match) + __brev(red) + __ffs(rmax) + __byte_perm(i, rand_, 0x3210)
                    + __funnelshift_l(i, ballot, 5) + __funnelshift_r(match, i, 7) + __popcll(0x123456789ull * i);
    if (i < n)
        out[i] = bits + (unsigned)(b + u + x) + any + all + uni + match_all + pred;
}
