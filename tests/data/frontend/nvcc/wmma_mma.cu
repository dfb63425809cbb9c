// Tensor cores through nvcuda::wmma: wmma.load/mma/store with .sync
// .aligned .row/.col layouts and shapes, 8-element vector operands, for
// f16 (f32 accumulate), bf16, tf32, s8 and u4/b1 fragments.
// @variant sm89 -arch=sm_89 -O3
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

__global__ void wmma_f16(const half *a, const half *b, float *c, int ld)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < ld; k += 16) {
        wmma::load_matrix_sync(fa, a + k, ld);
        wmma::load_matrix_sync(fb, b + k, ld);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c, fc, ld, wmma::mem_row_major);
}

__global__ void wmma_m32n8k16(const half *a, const half *b, half *c, int ld)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, half> fc;
    wmma::load_matrix_sync(fa, a, ld);
    wmma::load_matrix_sync(fb, b, ld);
    wmma::load_matrix_sync(fc, c, ld, wmma::mem_col_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, ld, wmma::mem_col_major);
}

__global__ void wmma_bf16_tf32(const __nv_bfloat16 *a, const __nv_bfloat16 *b, const float *ta,
                               const float *tb, float *c, int ld)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 1.0f);
    wmma::load_matrix_sync(fa, a, ld);
    wmma::load_matrix_sync(fb, b, ld);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> ta_f;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> tb_f;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> tc;
    wmma::load_matrix_sync(ta_f, ta, ld);
    wmma::load_matrix_sync(tb_f, tb, ld);
    for (int t = 0; t < ta_f.num_elements; t++)
        ta_f.x[t] = wmma::__float_to_tf32(ta_f.x[t]);
    wmma::fill_fragment(tc, 0.0f);
    wmma::mma_sync(tc, ta_f, tb_f, tc);
    for (int t = 0; t < tc.num_elements; t++)
        tc.x[t] += fc.x[t];
    wmma::store_matrix_sync(c, tc, ld, wmma::mem_row_major);
}

__global__ void wmma_int(const signed char *a, const signed char *b, int *c, const unsigned *a4,
                         const unsigned *b4, const unsigned *a1, const unsigned *b1, int ld)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, ld);
    wmma::load_matrix_sync(fb, b, ld);
    wmma::mma_sync(fc, fa, fb, fc, true);
    wmma::fragment<wmma::matrix_a, 8, 8, 32, wmma::experimental::precision::u4, wmma::row_major> f4a;
    wmma::fragment<wmma::matrix_b, 8, 8, 32, wmma::experimental::precision::u4, wmma::col_major> f4b;
    wmma::fragment<wmma::accumulator, 8, 8, 32, int> f4c;
    wmma::load_matrix_sync(f4a, a4, 32);
    wmma::load_matrix_sync(f4b, b4, 32);
    wmma::fill_fragment(f4c, 0);
    wmma::mma_sync(f4c, f4a, f4b, f4c);
    wmma::fragment<wmma::matrix_a, 8, 8, 128, wmma::experimental::precision::b1, wmma::row_major> f1a;
    wmma::fragment<wmma::matrix_b, 8, 8, 128, wmma::experimental::precision::b1, wmma::col_major> f1b;
    wmma::fragment<wmma::accumulator, 8, 8, 128, int> f1c;
    wmma::load_matrix_sync(f1a, a1, 128);
    wmma::load_matrix_sync(f1b, b1, 128);
    wmma::fill_fragment(f1c, 0);
    wmma::bmma_sync(f1c, f1a, f1b, f1c, wmma::experimental::bmmaBitOpAND);
    wmma::store_matrix_sync(c, fc, ld, wmma::mem_row_major);
    wmma::store_matrix_sync(c + 256, f4c, 8, wmma::mem_row_major);
    wmma::store_matrix_sync(c + 512, f1c, 8, wmma::mem_col_major);
}

__global__ void mma_ptx(const unsigned *a, const unsigned *b, float *c)
{
    // mma.sync and ldmatrix written directly (nvcc passes them through)
    __shared__ unsigned short tile[16 * 16];
    unsigned lane = threadIdx.x & 31;
    for (int k = lane; k < 256; k += 32)
        tile[k] = (unsigned short)a[k];
    __syncwarp();
    unsigned r0, r1, r2, r3;
    unsigned addr = (unsigned)__cvta_generic_to_shared(&tile[(lane & 15) * 16]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b[lane]), "r"(b[lane + 32]));
    int i0 = 0, i1 = 1, i2 = 2, i3 = 3;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+r"(i0), "+r"(i1), "+r"(i2), "+r"(i3)
                 : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(b[lane]), "r"(b[lane + 64]));
    d0 += i0 + i1;
    d1 += i2 - i3;
    c[lane * 4 + 0] = d0;
    c[lane * 4 + 1] = d1;
    c[lane * 4 + 2] = d2;
    c[lane * 4 + 3] = d3;
}
