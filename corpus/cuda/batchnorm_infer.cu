/*
 * batchnorm_infer: BatchNorm2d in inference mode over an NCHW tensor.
 *
 * N=2, C=8, H*W=64 (1024 elements).  Each thread finds its channel from
 * the flat index and applies the folded per-channel affine transform
 * y = (x - running_mean[c]) * rsqrt(running_var[c] + eps) * gamma[c] + beta[c].
 * The per-channel loads are small, heavily reused gathers.
 *
 * @corpus family normalization
 * @corpus launch grid=4,1,1 block=256,1,1 shared=0
 * @corpus param x            input  f32 1024
 * @corpus param y            output f32 1024
 * @corpus param running_mean input  f32 8
 * @corpus param running_var  input  f32 8 range=0.5,2
 * @corpus param gamma        input  f32 8
 * @corpus param beta         input  f32 8
 * @corpus param total        scalar s32 1024
 * @corpus param channels     scalar s32 8
 * @corpus param hw           scalar s32 64
 * @corpus param eps          scalar f32 9.999999747378752e-06
 * @corpus shape n=2 c=8 hw=64
 * @corpus performance grid=65536,1,1 block=256,1,1 shared=0 total=16777216 channels=64 hw=4096 eps=9.999999747378752e-06 x=16777216 y=16777216 running_mean=64 running_var=64 gamma=64 beta=64
 * @corpus problem N=64, C=64, H=W=64: 2^24 f32 elements, one per thread
 */
extern "C" __global__ void batchnorm_infer(const float* __restrict__ x,
                                           float* __restrict__ y,
                                           const float* __restrict__ running_mean,
                                           const float* __restrict__ running_var,
                                           const float* __restrict__ gamma,
                                           const float* __restrict__ beta,
                                           int total, int channels, int hw,
                                           float eps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int c = (i / hw) % channels;
    float scale = gamma[c] * rsqrtf(running_var[c] + eps);
    y[i] = (x[i] - running_mean[c]) * scale + beta[c];
}
