// printf: the extern vprintf declaration, .global .align 1 .b8 $str[N]
// string initialisers, local-depot argument buffers; also assert
// (__assertfail) and __trap / __brkpt.
// @variant sm89 -arch=sm_89 -O3
#include <cstdio>
#include <cassert>

__global__ void printf_kernel(const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0)
        printf("hello from block %d thread %d\n", blockIdx.x, threadIdx.x);
    if (i < n && in[i] < 0.0f)
        printf("negative at %d: %f (%e) \"quoted\" \\ tab\t%s\n", i, (double)in[i], (double)in[i], "str");
    if (i == 1)
        printf("no args\n");
    if (i == 2)
        printf("%lld %llu %c %p\n", (long long)n, (unsigned long long)n * 3, 'x', in);
    assert(n > 0);
    if (n == 12345)
        __trap();
    if (n == 54321)
        __brkpt();
}
