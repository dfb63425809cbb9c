/*
 * histogram_atomic: 256-bin byte histogram with privatised shared-memory
 * bins.
 *
 * Each CTA zeroes 256 shared counters, counts its slice of the input with
 * shared-memory atomicAdd (grid-stride over 4096 bytes), then merges its
 * non-zero bins into the global histogram with global atomicAdd.  bins must
 * be zeroed before the launch.
 *
 * @corpus family histogram
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param data input u8  4096
 * @corpus param bins inout u32 256 init=zero
 * @corpus param n    scalar s32 4096
 * @corpus shape n=4096 bins=256
 * @corpus tags atomics,shared-memory,syncthreads,grid-stride
 * @corpus performance grid=4096,1,1 block=256,1,1 shared=0 n=16777216 data=16777216 bins=256
 * @corpus problem 2^24 u8 values into 256 bins, grid-stride: 4096 blocks of 256 threads, 16 values per thread
 */
#define BINS 256

extern "C" __global__ void histogram_atomic(const unsigned char* __restrict__ data,
                                            unsigned int* bins, int n)
{
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();

    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int c = local[b];
        if (c) atomicAdd(&bins[b], c);
    }
}
