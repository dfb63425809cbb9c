// -G debug build: .file, .loc, .section .debug_* blocks with @ labels and
// .b8/.b32/.b64 data, no optimisation (.local depots, many movs), and a
// #pragma unroll 1 loop (.pragma "nounroll").
// @variant sm89G -arch=sm_89 -G
// @variant sm90G -arch=sm_90 -G

__device__ float helper(float x, int k)
{
    float acc = 0.0f;
#pragma unroll 1
    for (int j = 0; j < k; ++j)
        acc += x * j;
    return acc;
}

struct Acc {
    float sum;
    int count;
};

__global__ void debug_kernel(float *out, const float *in, int n)
{
    __shared__ float tile[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Acc a = {0.0f, 0};
    if (i < n) {
        tile[threadIdx.x & 63] = in[i];
        __syncthreads();
        a.sum = helper(tile[(threadIdx.x + 1) & 63], i & 3);
        a.count = i;
        switch (i & 3) {
        case 0: a.sum += 1.0f; break;
        case 1: a.sum *= 2.0f; break;
        default: a.sum -= 3.0f; break;
        }
        out[i] = a.sum + a.count;
    }
}
