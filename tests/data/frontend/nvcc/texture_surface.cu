// Texture and surface objects: tex.2d / tex.1d / tex.3d and tld4 with
// .v4 results and vector coordinates, tex.level, surface loads and
// stores (suld/sust .b .trap/.zero), txq/suq queries.
// @variant sm89 -arch=sm_89 -O3

__global__ void tex_kernel(float4 *out, cudaTextureObject_t t2, cudaTextureObject_t t1,
                           cudaTextureObject_t t3, cudaSurfaceObject_t s2, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    float u = (x + 0.5f) / w, v = (y + 0.5f) / h;
    float4 a = tex2D<float4>(t2, u, v);
    float b = tex1Dfetch<float>(t1, x);
    float4 c = tex3D<float4>(t3, u, v, 0.5f);
    float4 d = tex2DLod<float4>(t2, u, v, 1.5f);
    float4 g = tex2Dgather<float4>(t2, u, v, 1);
    int4 e = tex2D<int4>(t3, u, v);
    float1 s = surf2Dread<float1>(s2, x * 4, y, cudaBoundaryModeZero);
    surf2Dwrite(make_float1(a.x + b), s2, x * 4, y, cudaBoundaryModeTrap);
    surf2Dwrite(make_uchar4(1, 2, 3, 4), s2, x * 4, y, cudaBoundaryModeClamp);
    out[y * w + x] = make_float4(a.x + c.y + d.z + g.w, b + e.x, s.x, (float)e.w);
}
