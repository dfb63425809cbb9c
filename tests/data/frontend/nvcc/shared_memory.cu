// Shared memory: extern __shared__ (dynamic, .extern .shared with [] and
// an .align), several static __shared__ arrays of different types and
// alignments, a shared struct, volatile shared, and shared atomics.
// @variant sm89 -arch=sm_89 -O3

struct __align__(16) Slot {
    float v[3];
    int key;
};

extern __shared__ float dyn_smem[];

__global__ void shared_kernel(float *out, const float *in, int n)
{
    __shared__ double s_dbl[32];
    __shared__ Slot s_slots[8];
    __shared__ unsigned char s_bytes[37];
    __shared__ int s_count;
    volatile __shared__ int s_flag;

    int t = threadIdx.x;
    if (t == 0) {
        s_count = 0;
        s_flag = 1;
    }
    dyn_smem[t] = in[blockIdx.x * blockDim.x + t];
    s_dbl[t & 31] = (double)t;
    s_bytes[t % 37] = (unsigned char)t;
    if (t < 8) {
        s_slots[t].v[0] = 1.0f;
        s_slots[t].key = t;
    }
    __syncthreads();
    atomicAdd(&s_count, 1);
    atomicMax((int *)&dyn_smem[0], t);
    __syncthreads();
    float r = dyn_smem[(t + 1) % blockDim.x] + (float)s_dbl[(t + 3) & 31] + s_bytes[(t + 5) % 37];
    r += s_slots[t & 7].v[0] + s_slots[t & 7].key + s_count + s_flag;
    int i = blockIdx.x * blockDim.x + t;
    if (i < n)
        out[i] = r;
}
