// Local memory: per-thread arrays indexed dynamically (.local depot,
// __local_depot, %SP/%SPL, cvta.local), variable-length alloca
// (alloca / stacksave / stackrestore in PTX 7.3+), and a large
// by-value struct kernel parameter (.param .align .b8 p[N]) accessed
// through __grid_constant__ (cvta.param).
// @variant sm89 -arch=sm_89 -O3

struct Big {
    float w[64];
    int n;
};

__device__ __noinline__ float sum_ptr(const float *p, int n)
{
    float s = 0.0f;
    for (int k = 0; k < n; ++k)
        s += p[k];
    return s;
}

__global__ void local_kernel(float *out, const int *idx, Big by_value, const __grid_constant__ Big gc, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float scratch[32];
    for (int k = 0; k < 32; ++k)
        scratch[k] = (float)(k * i);
    float v = scratch[idx[i] & 31] + by_value.w[idx[i] & 63];
    int m = (i & 15) + 1;
    float *vla = (float *)alloca(m * sizeof(float));
    for (int k = 0; k < m; ++k)
        vla[k] = v + k;
    v += sum_ptr(vla, m);
    v += sum_ptr(gc.w, gc.n & 63);
    if (i < n)
        out[i] = v;
}
