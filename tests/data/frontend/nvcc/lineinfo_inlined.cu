// -lineinfo at -O3: .file, .loc with function_name/inlined_at for inlined
// device functions, and .pragma "nounroll" from #pragma unroll 1.
// @variant sm89 -arch=sm_89 -O3 -lineinfo

__device__ __forceinline__ float inner(float x)
{
    return x * x + 1.0f;
}

__device__ __forceinline__ float middle(float x, int k)
{
    float s = 0.0f;
#pragma unroll 1
    for (int j = 0; j < k; ++j)
        s += inner(x + j);
    return s;
}

__global__ void lineinfo_kernel(float *out, const float *in, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = middle(in[i], k) + inner(in[i]);
}
