/*
 * vector_add_half2: fp16 vector add, two halves per thread via __half2.
 *
 * Exercises the packed f16x2 path (add.f16x2 on a .b32 register) and
 * 4-byte accesses of 2-byte data.  Buffers hold 1024 halves = 512 __half2;
 * n2 counts __half2 elements.
 *
 * @corpus family elementwise
 * @corpus launch grid=2,1,1 block=256,1,1 shared=0
 * @corpus param a   input  f16 1024
 * @corpus param b   input  f16 1024
 * @corpus param c   output f16 1024
 * @corpus param n2  scalar s32 512
 * @corpus shape n=1024
 * @corpus tags fp16
 * @corpus performance grid=32768,1,1 block=256,1,1 shared=0 n2=8388608 a=16777216 b=16777216 c=16777216
 * @corpus problem 2^24 f16 elements as 2^23 half2, one half2 per thread
 */
#include <cuda_fp16.h>

extern "C" __global__ void vector_add_half2(const __half2* __restrict__ a,
                                            const __half2* __restrict__ b,
                                            __half2* __restrict__ c, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        c[i] = __hadd2(a[i], b[i]);
    }
}
