// Integer and SIMD-within-a-register ops: dp4a/dp2a, the __v*4/__v*2
// video intrinsics (vadd4, vabsdiff4, vset2 ...), __sad/__usad, bfe/bfi
// patterns, __hadd/__rhadd, __mulhi/__umul24, sat adds, min/max with
// .relu, and integer division by constants.
// @variant sm89 -arch=sm_89 -O3

__global__ void video_kernel(unsigned *out, const unsigned *a, const unsigned *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = a[i], y = b[i];
    int r = __dp4a((int)x, (int)y, 7) + __dp2a_lo((int)x, (int)y, 3) + __dp2a_hi(x, y, 5u);
    unsigned v = __vadd4(x, y) ^ __vabsdiffu4(x, y) ^ __vsub2(x, y) ^ __vmaxs4(x, y) ^ __vcmpgtu2(x, y)
                 ^ __vsetgeu4(x, y) ^ __vavgu2(x, y) ^ __vhaddu4(x, y) ^ __vabsss4(x) ^ __vneg2(y);
    unsigned s = __sad((int)x, (int)y, 1u) + __usad(x, y, 2u) + __hadd((int)x, (int)y) + __rhadd((int)x, (int)y)
                 + __mulhi((int)x, (int)y) + __umul24(x, y) + (unsigned)__mul24((int)x, 3);
    unsigned f = ((x >> 5) & 0x3ffu) | ((y & 0xfu) << 12);
    unsigned q = x / 10u + (unsigned)((int)y / -7) + x % 13u;
    unsigned m = (unsigned)max((int)x, 0) + umin(x, y) + (unsigned)abs((int)y);
    out[i] = (unsigned)r + v + s + f + q + m;
}
