// Indirect calls through function pointers: .callprototype, call with a
// register target and a prototype label, a __device__ table of function
// addresses (initialiser of function symbols), a virtual call.
// @variant sm89 -arch=sm_89 -O3

typedef float (*unary_fn)(float);

__device__ float op_neg(float x) { return -x; }
__device__ float op_sq(float x) { return x * x; }
__device__ float op_half(float x) { return x * 0.5f; }

__device__ unary_fn table[3] = {op_neg, op_sq, op_half};

typedef int (*binary_fn)(int, int, int *);

__device__ int bop_add(int a, int b, int *c) { *c += 1; return a + b; }
__device__ int bop_mul(int a, int b, int *c) { *c += 2; return a * b; }

struct Shape {
    __device__ virtual float area(float s) const { return s; }
};
struct Square : Shape {
    __device__ float area(float s) const override { return s * s; }
};

__global__ void fnptr_kernel(float *out, const float *in, const int *sel, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unary_fn f = table[sel[i] % 3];
    out[i] = f(in[i]);
    binary_fn g = (sel[i] & 4) ? bop_add : bop_mul;
    int counter = 0;
    out[n + i] = (float)g(i, sel[i], &counter) + counter;
}

__global__ void virtual_kernel(float *out, int n)
{
    Square sq;
    Shape base;
    Shape *s = (threadIdx.x & 1) ? (Shape *)&sq : &base;
    if (threadIdx.x < n)
        out[threadIdx.x] = s->area((float)threadIdx.x);
}
