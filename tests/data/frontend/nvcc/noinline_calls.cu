// Device functions that stay out of line: .func with return params,
// .param blocks at the call site, call.uni, recursion (stack frame),
// struct returns passed through .param .align .b8 arrays.
// @variant sm89 -arch=sm_89 -O3
// @variant sm90 -arch=sm_90 -O3

struct Pair3 {
    float x, y;
    int tag;
};

__device__ __noinline__ float scale_add(float a, float b, float s)
{
    return a * s + b;
}

__device__ __noinline__ Pair3 make_pair(float x, int i)
{
    Pair3 p;
    p.x = x;
    p.y = x * 0.5f + (float)i;
    p.tag = i ^ 0x55;
    return p;
}

__device__ __noinline__ void no_result(float *out, int i, double d)
{
    out[i] = (float)(d * 3.0);
}

__device__ __noinline__ unsigned long long fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ int many_args(int a, int b, int c, int d, int e, int f,
                                      long long g, float h, double i, char j, short k)
{
    return a + b * c - d + e * f + (int)g + (int)h + (int)i + j + k;
}

__global__ void noinline_kernel(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = scale_add(in[i], 1.0f, 2.0f);
    Pair3 p = make_pair(v, i);
    no_result(out, i, (double)p.y);
    out[n + i] = p.x + (float)p.tag;
    out[2 * n + i] = (float)fib(i & 7);
    out[3 * n + i] = (float)many_args(i, 1, 2, 3, 4, 5, 6LL, 7.0f, 8.0, 'a', (short)i);
}
