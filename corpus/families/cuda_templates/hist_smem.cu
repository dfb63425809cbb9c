/*
 * hist_smem: histogram of integer keys into N_BINS counters with privatised
 * shared-memory bins and shared-memory atomics; the CUDA C histogram
 * template of the generated families (gen_cuda_families.py draws the macros).
 *
 * KNAME  entry name   KEY_T  key type: unsigned char | unsigned short | int
 * N_BINS   counters (power of two); keys are in [0, N_BINS)
 * N_PRIV   shared copies per block: 1, or one per warp (blockDim.x / 32), merged before the flush
 * Grid-stride over n keys: a runtime loop, trip count ceil(n / (gridDim.x * blockDim.x)).
 * bins must be zeroed before the launch (global atomics accumulate into it).
 */
extern "C" __global__ void KNAME(const KEY_T* __restrict__ keys, unsigned int* bins, int n)
{
    __shared__ unsigned int local[N_PRIV * N_BINS];
    for (int b = threadIdx.x; b < N_PRIV * N_BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    unsigned int* mine = local + (N_PRIV > 1 ? (threadIdx.x / 32) % N_PRIV : 0) * N_BINS;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&mine[(unsigned int)keys[i] & (N_BINS - 1)], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < N_BINS; b += blockDim.x) {
        unsigned int c = 0;
#pragma unroll
        for (int p = 0; p < N_PRIV; ++p) c += local[p * N_BINS + b];
        if (c) atomicAdd(&bins[b], c);
    }
}
