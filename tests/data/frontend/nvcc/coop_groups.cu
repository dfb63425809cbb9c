// Cooperative groups: grid.sync() (the cudaCGGetIntrinsicHandle-free
// grid barrier in PTX: atomics on a global word plus a spin loop with
// ld.acquire/nanosleep), tiled_partition reductions, coalesced groups,
// cluster-free block/warp sync.
// @variant sm89 -arch=sm_89 -O3 -rdc=true
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void coop_kernel(float *data, float *partial, int n)
{
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eight = cg::tiled_partition<8>(warp);
    unsigned i = grid.thread_rank();
    float v = i < (unsigned)n ? data[i] : 0.0f;
    float s = cg::reduce(warp, v, cg::plus<float>());
    float m = cg::reduce(eight, v, cg::greater<float>());
    if (warp.thread_rank() == 0)
        partial[i / 32] = s;
    grid.sync();
    if (v > 0.0f) {
        cg::coalesced_group active = cg::coalesced_threads();
        float t = active.shfl(v, 0);
        v += t * active.size() + active.thread_rank();
    }
    if (i < (unsigned)n)
        data[i] = v + partial[(i / 32 + 1) % (grid.size() / 32)] + m;
}
