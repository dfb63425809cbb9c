// Module-scope data: __constant__ arrays with initialisers (scalars,
// floats, doubles, structs, 2-D), __device__ globals with initialisers,
// zero-initialised and uninitialised globals, pointers initialised with
// addresses of other globals (generic(sym)+off), and __managed__.
// @variant sm89 -arch=sm_89 -O3

struct Coeff {
    float a;
    int b;
    double c;
    char tag[3];
};

__constant__ float c_poly[8] = {1.0f, -0.5f, 0.25f, -0.125f, 3.0e-8f, 1.0e30f, -0.0f, 0.1f};
__constant__ double c_dbl[3] = {3.141592653589793, -2.718281828459045e-300, 1.0e300};
__constant__ int c_mat[3][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {-9, -10, 0x7fffffff, (int)0x80000000}};
__constant__ Coeff c_coeff[2] = {{1.5f, 7, 2.25, {'a', 'b', 'c'}}, {-1.5f, -7, -2.25, {1, 2, 3}}};
__constant__ unsigned char c_bytes[5] = {0, 127, 128, 255, 42};
__constant__ long long c_i64 = -1234567890123LL;
__constant__ float c_uninit[16];

__device__ int g_counts[4] = {10, 20, 30, 40};
__device__ int g_zero[100];
__device__ int *g_ptr = &g_counts[2];
__device__ const float *g_cptr = &c_poly[3];
__device__ short g_shorts[6] = {1, -1, 300, -300, 0, 32767};
__device__ unsigned long long g_u64[2] = {0xffffffffffffffffULL, 0x123456789abcdefULL};
__device__ float2 g_f2 = {1.0f, 2.0f};
__managed__ int m_flag = 3;
__managed__ float m_arr[4];

__global__ void data_kernel(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = (float)i;
    float p = 0.0f;
#pragma unroll
    for (int k = 7; k >= 0; --k)
        p = p * x + c_poly[k];
    p += (float)c_dbl[i % 3] + c_mat[i % 3][i & 3] + c_coeff[i & 1].a + c_coeff[i & 1].tag[i % 3];
    p += c_bytes[i % 5] + (float)c_i64 + c_uninit[i & 15];
    p += *g_ptr + g_zero[i % 100] + *g_cptr + g_shorts[i % 6] + (float)g_u64[i & 1] + g_f2.y;
    p += m_flag + m_arr[i & 3];
    atomicAdd(&g_counts[i & 3], 1);
    out[i] = p;
}
