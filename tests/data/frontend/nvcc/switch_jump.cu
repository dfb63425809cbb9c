// Control flow: dense switch statements (jump tables: brx.idx with a
// .branchtargets list if nvcc makes one), sparse switches (compare
// chains), goto loops, early returns, unreachable/exit and
// __builtin_assume / __builtin_unreachable. The sm89O0 build is
// unoptimised NVVM output (-Xcicc -O0): [reg+0] addresses, dead movs.
// @variant sm89 -arch=sm_89 -O3
// @variant sm89O0 -arch=sm_89 -Xcicc -O0

__device__ __noinline__ float dispatch(int op, float a, float b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return fminf(a, b);
    case 5: return fmaxf(a, b);
    case 6: return sqrtf(a);
    case 7: return a * a + b;
    case 8: return __expf(a);
    case 9: return __logf(b);
    case 10: return __sinf(a);
    case 11: return __cosf(b);
    default: return 0.0f;
    }
}

__global__ void switch_kernel(float *out, const int *ops, const float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int op = ops[i];
    float r = dispatch(op, a[i], a[i + 1]);
    switch (op * 1000) {  // sparse
    case 3000: r += 1; break;
    case 17000: r *= 3; break;
    case 1000000: r = -r; break;
    }
    int k = 0;
again:
    r = r * 0.5f + 1.0f;
    if (++k < (op & 7))
        goto again;
    __builtin_assume(n > 0);
    if (op < 0)
        __builtin_unreachable();
    out[i] = r;
}
