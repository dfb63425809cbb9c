// sm_90a features: thread block clusters (__cluster_dims__ ->
// .reqnctapercluster, %cluster_* special registers, barrier.cluster,
// mapa / ld.shared::cluster distributed shared memory), mbarrier with
// expect_tx, TMA bulk copies (cp.async.bulk.shared::cluster.global
// .mbarrier::complete_tx::bytes and cp.async.bulk.tensor.2d via a
// __grid_constant__ CUtensorMap), fence.proxy.async, elect.sync,
// setmaxnreg and wgmma.mma_async through inline PTX, stmatrix.
// @variant sm90a -arch=sm_90a -O3
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda.h>
namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) dsmem_kernel(float *out, const float *in)
{
    __shared__ float tile[128];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned rank = cluster.block_rank();
    tile[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x] + rank;
    cluster.sync();
    float *peer = cluster.map_shared_rank(tile, rank ^ 1);
    float v = peer[127 - threadIdx.x];
    cluster.sync();
    out[blockIdx.x * 128 + threadIdx.x] = v + cluster.num_blocks() + cluster.dim_blocks().x;
}

__global__ void __launch_bounds__(384, 1) tma_kernel(const __grid_constant__ CUtensorMap tmap, float *out,
                                                    const float *src, int n)
{
    __shared__ alignas(128) float tile[64 * 64];
    __shared__ alignas(128) float flat[1024];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ alignas(8) unsigned long long bar;
    unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned tile_addr = (unsigned)__cvta_generic_to_shared(tile);
    unsigned flat_addr = (unsigned)__cvta_generic_to_shared(flat);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar_addr), "r"(1));
        asm volatile("fence.proxy.async.shared::cta;");
    }
    __syncthreads();
    unsigned is_leader;
    asm volatile("{\n\t.reg .pred P1;\n\telect.sync _|P1, 0xffffffff;\n\tselp.u32 %0, 1, 0, P1;\n\t}"
                 : "=r"(is_leader));
    if (threadIdx.x < 32 && is_leader) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr),
                     "r"((unsigned)(sizeof(tile) + sizeof(flat))));
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];" ::"r"(tile_addr),
                     "l"(&tmap), "r"(blockIdx.x * 64), "r"(0), "r"(bar_addr)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(flat_addr), "l"(src), "r"((unsigned)sizeof(flat)), "r"(bar_addr)
                     : "memory");
    }
    asm volatile("{\n\t"
                 ".reg .pred done;\n"
                 "WAIT_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT_%=;\n\t"
                 "}" ::"r"(bar_addr), "r"(0));
    if (threadIdx.x >= 256)
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    else
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int t = threadIdx.x;
    if (t < n)
        out[t] = tile[t] + flat[t & 1023];
}

__global__ void wgmma_kernel(float *out, unsigned long long desc_a, unsigned long long desc_b)
{
    float d[8] = {0};
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.ne.b32 p, %10, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 1;\n\t"
                 "}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(desc_a), "l"(desc_b), "r"(1));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    for (int k = 0; k < 8; ++k)
        out[threadIdx.x * 8 + k] = d[k];
}

__global__ void stmatrix_kernel(unsigned *out)
{
    __shared__ __align__(16) unsigned short tile[16 * 16];
    unsigned addr = (unsigned)__cvta_generic_to_shared(&tile[(threadIdx.x & 15) * 16]);
    unsigned r0 = threadIdx.x, r1 = threadIdx.x * 3u;
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(r0), "r"(r1));
    __syncwarp();
    out[threadIdx.x] = tile[threadIdx.x];
}
