// __half / __half2 / __nv_bfloat16 / fp8 arithmetic: .f16/.f16x2/.bf16/
// .bf16x2 registers (as .b16/.b32), fma.rn.f16x2, hmax/hmin with .NaN,
// cvt.rn.f16.f32, cvt.rn.bf16x2.f32, cvt.rn.satfinite.e4m3x2.f32 (sm_89),
// half comparisons producing predicates, ex2.approx.f16.
// @variant sm89 -arch=sm_89 -O3
// @variant sm90 -arch=sm_90 -O3
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__global__ void half_kernel(__half2 *h, __nv_bfloat162 *b, __nv_fp8x2_e4m3 *f8,
                            __nv_fp8_e5m2 *f8b, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half2 x = h[i];
    __half2 y = __hfma2(x, x, __float2half2_rn(0.5f));
    y = __hmax2_nan(y, __hneg2(x));
    y = h2exp2(y);
    __half s = __hadd(__low2half(y), __high2half(y));
    s = __hmul_sat(s, __float2half(1.25f));
    bool lt = __hlt(s, __ushort_as_half((unsigned short)0x3c00));
    __nv_bfloat162 bv = b[i];
    __nv_bfloat162 bw = __hfma2(bv, bv, __floats2bfloat162_rn(1.0f, -1.0f));
    bw = __hmin2(bw, bv);
    __nv_bfloat16 bs = __hadd(__low2bfloat16(bw), __high2bfloat16(bw));
    float2 fx = __half22float2(y);
    f8[i] = __nv_fp8x2_e4m3(make_float2(fx.x, __bfloat162float(bs)));
    f8b[i] = __nv_fp8_e5m2(fx.y);
    float back = (float)__nv_fp8_e4m3(fx.x);
    h[n + i] = __floats2half2_rn(__half2float(s), lt ? 1.0f : 2.0f);
    out[i] = __half2float(s) + __bfloat162float(bs) + back + __half2float(__hdiv(s, __float2half(3.0f)));
}
