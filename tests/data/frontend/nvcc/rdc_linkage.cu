// Separate compilation (-rdc=true): .extern .func declarations of
// functions defined elsewhere, .extern .global / .extern .const data,
// .weak functions and data from templates and inline functions,
// .visible vs internal (static) linkage, and a __device__ function
// that is externally visible without any caller.
// @variant sm89 -arch=sm_89 -O3 -rdc=true
// @variant sm90 -arch=sm_90 -O3 -rdc=true

extern __device__ float ext_scale(float x);
extern __device__ int ext_table[];
extern __constant__ float ext_coeff[4];

template <typename T>
__device__ T tmpl_twice(T x)
{
    return x + x;
}

template <typename T>
__device__ T tvar = T(7);

__device__ inline int inline_sq(int x)
{
    return x * x;
}

static __device__ __noinline__ float internal_helper(float x)
{
    return x * 3.0f;
}

__device__ float exported_unused(float x)
{
    return x - 1.0f;
}

static __device__ int internal_counter;

__global__ void rdc_kernel(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = ext_scale((float)i) + ext_table[i & 7] + ext_coeff[i & 3];
    v += tmpl_twice(v) + (float)tmpl_twice(i) + (float)inline_sq(i) + internal_helper(v);
    v += tvar<float> + tvar<int>;
    atomicAdd(&internal_counter, 1);
    out[i] = v;
}
