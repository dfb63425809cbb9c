/*
 * stencil2d: out = sum of w[k] * in at the points of a star or box stencil
 * of radius RADIUS around (x, y), edges clamped; the CUDA C 2D stencil template
 * of the generated families (gen_cuda_families.py draws the macros).
 *
 * KNAME  entry name     DTYPE float | double     RADIUS  radius 1 | 2
 * BOX_STENCIL    1: every point of the (2R+1)^2 box; 0: the 4R+1 points of the star
 * COEF   0: weights read from wts[]; 1: compiled-in weights (centre 0.5, others 0.5 / (NPTS - 1); wts unused)
 * UNROLL_N  #pragma unroll factor of the row loop (1 = none)
 * Each thread owns one column x and walks the rows y = blockIdx.y*blockDim.y
 * + threadIdx.y, stepping gridDim.y*blockDim.y while y < h: a runtime-bounded
 * loop (trip count ceil(h / (gridDim.y * blockDim.y))).
 */
#define NPTS (BOX_STENCIL ? (2 * RADIUS + 1) * (2 * RADIUS + 1) : 4 * RADIUS + 1)
#ifndef COEF
#define COEF 0
#endif
#ifndef UNROLL_N
#define UNROLL_N 1
#endif
#define DO_PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) DO_PRAGMA(unroll n)

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

typedef DTYPE T;

extern "C" __global__ void KNAME(const T* __restrict__ in, const T* __restrict__ wts, T* __restrict__ out,
                                 int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    T c[NPTS];
#pragma unroll
    for (int k = 0; k < NPTS; ++k) c[k] = COEF ? (k == NPTS / 2 ? (T)0.5 : (T)0.5 / (T)(NPTS - 1)) : wts[k];
    UNROLL_BY(UNROLL_N)
    for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        T acc = (T)0;
        int k = 0;
#pragma unroll
        for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
#pragma unroll
            for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
                if (BOX_STENCIL || dx == 0 || dy == 0) {
                    int yy = clampi(y + dy, 0, h - 1), xx = clampi(x + dx, 0, w - 1);
                    acc += c[k] * in[yy * w + xx];
                    ++k;
                }
            }
        }
        out[y * w + x] = acc;
    }
}
