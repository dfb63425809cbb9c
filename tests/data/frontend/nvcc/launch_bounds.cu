// Per-kernel performance directives: __launch_bounds__ (.maxntid and
// .minnctapersm), __maxnreg__ (.maxnreg), __cluster_dims__
// (.reqnctapercluster, sm_90), .maxclusterrank from the third
// __launch_bounds__ argument, and .noreturn / .pragma hints.
// @variant sm89 -arch=sm_89 -O3
// @variant sm90 -arch=sm_90 -O3 -DSM90

__global__ void __launch_bounds__(256) lb_one(float *x)
{
    x[threadIdx.x] *= 2.0f;
}

__global__ void __launch_bounds__(128, 4) lb_two(float *x)
{
    x[threadIdx.x] += 1.0f;
}

__global__ void __maxnreg__(40) lb_maxnreg(float *x, int n)
{
    float acc = 0.0f;
    for (int k = 0; k < n; ++k)
        acc += x[k * blockDim.x + threadIdx.x] * k;
    x[threadIdx.x] = acc;
}

#ifdef SM90
__global__ void __launch_bounds__(128, 2, 4) lb_three(float *x)
{
    x[threadIdx.x] -= 1.0f;
}

__global__ void __cluster_dims__(2, 1, 1) cluster_kernel(float *x)
{
    x[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

__global__ void __cluster_dims__(2, 2, 1) __launch_bounds__(64) cluster_lb(float *x)
{
    x[blockIdx.x * blockDim.x + threadIdx.x] = 2.0f;
}
#endif
