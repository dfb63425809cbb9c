// Atomics and reductions: atom.global.add.f32/.f64/.u64, atom.cas
// (32/64-bit, a CAS loop for a float max), atom.exch, min/max/and/or/xor,
// inc/dec, block/system scopes (atom.*.cta/.sys), red.* when the result is
// unused, half2/bf16x2 atomics, shared-memory atomics, fences.
// @variant sm89 -arch=sm_89 -O3
// @variant sm90 -arch=sm_90 -O3
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ float atomic_max_float(float *addr, float val)
{
    int *ia = (int *)addr;
    int old = *ia, assumed;
    do {
        assumed = old;
        old = atomicCAS(ia, assumed, __float_as_int(fmaxf(val, __int_as_float(assumed))));
    } while (assumed != old);
    return __int_as_float(old);
}

__global__ void atomics_kernel(float *f, double *d, int *iv, unsigned *uv,
                               unsigned long long *u64, __half2 *h2, __nv_bfloat162 *b2,
                               int *ret, int n)
{
    __shared__ int s_hist[16];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 16)
        s_hist[threadIdx.x] = 0;
    __syncthreads();
    if (i >= n)
        return;
    float x = (float)i;
    atomicAdd(&f[0], x);                      // red.global.add.f32
    ret[i] = (int)atomicAdd(&f[1], x);        // atom.global.add.f32
    atomicAdd(&d[0], (double)x);              // red/atom .f64
    ret[n + i] = atomicCAS(&iv[0], i, i + 1);
    ret[2 * n + i] = atomicExch(&iv[1], i);
    atomicMin(&iv[2], i);
    atomicMax(&iv[3], -i);
    atomicAnd(&uv[0], ~(1u << (i & 31)));
    atomicOr(&uv[1], 1u << (i & 31));
    ret[3 * n + i] = atomicXor(&uv[2], (unsigned)i);
    ret[4 * n + i] = atomicInc(&uv[3], 100u);
    atomicDec(&uv[4], 100u);
    atomicAdd(&u64[0], 1ull);
    ret[5 * n + i] = (int)atomicCAS(&u64[1], (unsigned long long)i, 7ull);
    atomicMax(&u64[2], (unsigned long long)i);
    atomicAdd_block(&iv[4], 1);
    ret[6 * n + i] = atomicAdd_system(&iv[5], 2);
    atomicExch(&f[2], x);
    atomicAdd(&h2[0], __floats2half2_rn(x, -x));
    atomicAdd(&b2[0], __floats2bfloat162_rn(x, 2.0f));
    atomicAdd(&s_hist[i & 15], 1);
    __threadfence();
    __threadfence_block();
    __threadfence_system();
    atomic_max_float(&f[3], x);
    __syncthreads();
    if (threadIdx.x < 16)
        atomicAdd(&iv[8 + threadIdx.x], s_hist[threadIdx.x]);
}
