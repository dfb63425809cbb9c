// Inline PTX: asm volatile blocks with { } scopes and local .reg
// declarations, predicates set and used inside the block, setp with a
// %p|%q pair, a memory clobber, vector operands, and asm that declares
// its own labels inside a scope.
// @variant sm89 -arch=sm_89 -O3
// @variant sm90 -arch=sm_90 -O3

__device__ __forceinline__ unsigned lane_id()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned add_carry(unsigned a, unsigned b, unsigned *carry)
{
    unsigned lo, c;
    asm("{\n\t"
        ".reg .u32 t;\n\t"
        "add.cc.u32 %0, %2, %3;\n\t"
        "addc.u32 %1, 0, 0;\n\t"
        "}"
        : "=r"(lo), "=r"(c)
        : "r"(a), "r"(b));
    *carry = c;
    return lo;
}

__device__ __forceinline__ int minmax_pair(int a, int b)
{
    int r;
    asm("{\n\t"
        ".reg .pred p, q;\n\t"
        "setp.lt.and.s32 p|q, %1, %2, 1;\n\t"
        "@p  mov.b32 %0, %1;\n\t"
        "@!p mov.b32 %0, %2;\n\t"
        "@q  add.s32 %0, %0, 1;\n\t"
        "}"
        : "=r"(r)
        : "r"(a), "r"(b));
    return r;
}

__device__ __forceinline__ float4 ld_v4(const float4 *p)
{
    float4 v;
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ unsigned count_down(unsigned n)
{
    unsigned r;
    asm volatile("{\n\t"
                 ".reg .u32 i;\n\t"
                 ".reg .pred done;\n\t"
                 "mov.u32 i, %1;\n\t"
                 "mov.u32 %0, 0;\n"
                 "LOOP_%=:\n\t"
                 "setp.eq.u32 done, i, 0;\n\t"
                 "@done bra.uni END_%=;\n\t"
                 "sub.u32 i, i, 1;\n\t"
                 "add.u32 %0, %0, 3;\n\t"
                 "bra.uni LOOP_%=;\n"
                 "END_%=:\n\t"
                 "}"
                 : "=r"(r)
                 : "r"(n));
    return r;
}

__global__ void inline_asm_kernel(unsigned *out, const float4 *vin, int n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (unsigned)n)
        return;
    unsigned carry;
    unsigned lo = add_carry(i, 0xfffffff0u, &carry);
    float4 v = ld_v4(vin + i);
    asm volatile("membar.gl;" ::: "memory");
    out[i] = lo + carry + lane_id() + minmax_pair((int)i, 17) + (unsigned)(v.x + v.w);
    out[n + i] = count_down(i & 15);
}
