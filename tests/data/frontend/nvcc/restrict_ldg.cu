// Load/store cache hints: __restrict__ const -> ld.global.nc, __ldg on
// vectors, __ldcg/__ldca/__ldcs/__ldlu/__ldcv, __stcg/__stcs/__stwt/
// __stwb, L2 eviction-priority hints (ld.global.L1::no_allocate, L2::
// cache_hint via createpolicy), prefetch, __builtin_assume_aligned
// v4 accesses.
// @variant sm89 -arch=sm_89 -O3

__global__ void hints_kernel(float4 *__restrict__ out, const float4 *__restrict__ in,
                             const float *__restrict__ s, float *t, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 a = in[i];
    float4 b = __ldg(&in[n + i]);
    float c = __ldcg(&s[i]) + __ldca(&s[n + i]) + __ldcs(&s[2 * n + i]) + __ldlu(&s[3 * n + i]) + __ldcv(&t[i]);
    float2 d = __ldg((const float2 *)s + i);
    __stcg(&t[i], c);
    __stcs(&t[n + i], c * 2.0f);
    __stwt(&t[2 * n + i], c * 3.0f);
    __stwb(&t[3 * n + i], c * 4.0f);
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    float e;
    asm volatile("ld.global.L1::no_allocate.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(e) : "l"(s + i), "l"(policy));
    asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(s + 4 * n + i));
    asm volatile("prefetch.global.L1 [%0];" ::"l"(s + 5 * n + i));
    const float4 *al = (const float4 *)__builtin_assume_aligned(t + 8 * n, 16);
    float4 f = al[i];
    out[i] = make_float4(a.x + b.y + f.z, a.y + c + e, a.z + d.x, a.w + d.y + f.w);
}
