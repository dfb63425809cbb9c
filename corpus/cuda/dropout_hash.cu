/*
 * dropout_hash: inverted dropout with a stateless integer-hash RNG.
 *
 * Each element draws 32 random bits from hash(seed, i) (a murmur3-style
 * finaliser over the element index mixed with the seed), so the result
 * does not depend on the launch geometry and needs no RNG state.  An
 * element is kept when bits >= threshold (threshold = p * 2^32), kept
 * values are scaled by 1 / (1 - p), and the keep mask is stored as bytes.
 * The values below are p = 0.25: threshold = 2^30, scale = 4/3.
 *
 * @corpus family elementwise
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param x         input  f32 1024
 * @corpus param out       output f32 1024
 * @corpus param mask      output u8  1024
 * @corpus param n         scalar s32 1024
 * @corpus param seed      scalar u32 1234
 * @corpus param threshold scalar u32 1073741824
 * @corpus param scale     scalar f32 1.3333333730697632
 * @corpus shape n=1024
 * @corpus tags rng
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 n=16777216 seed=1234 threshold=1073741824 scale=1.3333333730697632 x=16777216 out=16777216 mask=16777216
 * @corpus problem 2^24 f32 elements (p=0.25), one per thread
 */
__device__ __forceinline__ unsigned int hash_u32(unsigned int x)
{
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

extern "C" __global__ void dropout_hash(const float* __restrict__ x,
                                        float* __restrict__ out,
                                        unsigned char* __restrict__ mask,
                                        int n, unsigned int seed,
                                        unsigned int threshold, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int bits = hash_u32((unsigned int)i * 0x9e3779b9u ^ hash_u32(seed));
        bool keep = bits >= threshold;
        out[i] = keep ? x[i] * scale : 0.0f;
        mask[i] = keep ? 1 : 0;
    }
}
