/*
 * saxpy_chain: grid-stride y = chain(a * x + y), the CUDA C elementwise template
 * of the generated families (gen_cuda_families.py draws the macros below).
 *
 * KNAME   entry name            DTYPE  float | double
 * VEC_W     4: float4 main loop over n/4 plus a scalar tail loop (float only)
 * N_OPS    fused ops after the axpy, OP_1..OP_3 each one of:
 *         0 w*b + x   1 max(w, 0)   2 min(w, b)   3 w*w*b   4 |w| + x   5 w / (1 + |w|)
 * UNROLL_N #pragma unroll factor of the grid-stride loop (1 = none)
 *
 * The grid-stride loop's trip count is a runtime quantity: ceil(n / (gridDim.x * blockDim.x)).
 */
#ifndef VEC_W
#define VEC_W 1
#endif
#ifndef UNROLL_N
#define UNROLL_N 1
#endif

typedef DTYPE T;

#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) DO_PRAGMA(unroll n)

#define OPX(k, w, v, b) \
    ((k) == 0 ? (w) * (b) + (v) : (k) == 1 ? ((w) > (T)0 ? (w) : (T)0) : (k) == 2 ? ((w) < (b) ? (w) : (b)) \
     : (k) == 3 ? (w) * (w) * (b) : (k) == 4 ? ((w) < (T)0 ? -(w) : (w)) + (v) : (w) / ((T)1 + ((w) < (T)0 ? -(w) : (w))))

__device__ __forceinline__ T chain(T w, T v, T b)
{
#if N_OPS >= 1
    w = OPX(OP_1, w, v, b);
#endif
#if N_OPS >= 2
    w = OPX(OP_2, w, v, b);
#endif
#if N_OPS >= 3
    w = OPX(OP_3, w, v, b);
#endif
    return w;
}

extern "C" __global__ void KNAME(const T* __restrict__ x, T* __restrict__ y, T a, T b, int n)
{
    int stride = blockDim.x * gridDim.x;
    int start = blockIdx.x * blockDim.x + threadIdx.x;
#if VEC_W == 4
    int n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
UNROLL_BY(UNROLL_N)
    for (int i = start; i < n4; i += stride) {
        float4 v = x4[i], w = y4[i];
        w.x = chain(a * v.x + w.x, v.x, b);
        w.y = chain(a * v.y + w.y, v.y, b);
        w.z = chain(a * v.z + w.z, v.z, b);
        w.w = chain(a * v.w + w.w, v.w, b);
        y4[i] = w;
    }
    for (int i = 4 * n4 + start; i < n; i += stride) y[i] = chain(a * x[i] + y[i], x[i], b);
#else
UNROLL_BY(UNROLL_N)
    for (int i = start; i < n; i += stride) {
        T v = x[i];
        y[i] = chain(a * v + y[i], v, b);
    }
#endif
}
