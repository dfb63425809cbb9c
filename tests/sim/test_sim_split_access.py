"""Splitting a thread's vector load into scalar loads of the same bytes (``split_ld``) moves the same bytes
between L1 and L2; merging them (``vec_ld``) likewise.  ESTIMATES of the model.

Where no lane strides are known (no grid: a Triton kernel's performance launch), the walk takes the
warp's lanes as coalesced, and must charge the same bytes whatever the access width.  Charged per
access, one 16-byte load at lane stride 16 would be 16 B per thread, but four 4-byte loads of the same
bytes 4 B (the first, taken as lanes 4 B apart) and three L1 hits -- a quarter of the transfers, which
would make ``unroll_2,split_ld`` on the Triton tutorial's layernorm look 71% faster under throughput.  A table
over widths and lane counts, each kernel in both forms, and with the lane strides known (the grid
given) the same figures.
"""

from __future__ import annotations

import pytest

#: vector width (elements of 4 bytes) x loads in a row from the same base, lanes known (grid given) or not;
#: the fast tier keeps the layernorm's case (one v4 load, no grid), the rest are slow (two ptxas runs each)
CASES = [pytest.param(4, 1, None, id="4x1-lanes-unknown")] + [
    pytest.param(w, r, g, id=f"{w}x{r}-lanes-{'known' if g else 'unknown'}", marks=pytest.mark.slow)
    for w, r in [(2, 1), (4, 1), (4, 2), (2, 3)] for g in (None, (64, 1, 1)) if (w, r, g) != (4, 1, None)]


def _kernel(width: int, rows: int, split: bool) -> str:
    """Each thread reads ``rows`` vectors of ``width`` floats at in + (tid.x * width + r * 32 * width) * 4
    (lane stride = its vector), sums them and stores one float per thread."""
    loads, acc = [], []
    n = 0
    for r in range(rows):
        off = r * 32 * width * 4
        regs = [f"%f{n + i + 1}" for i in range(width)]
        n += width
        if split:
            loads += [f"ld.global.f32 {reg}, [%rd3+{off + 4 * i}];" for i, reg in enumerate(regs)]
        else:
            loads.append(f"ld.global.v{width}.f32 {{{', '.join(regs)}}}, [%rd3+{off}];")
        acc += regs
    adds = [f"add.f32 %f0, %f0, {reg};" for reg in acc]
    body = "\n    ".join(loads + adds)
    return f"""
.version 8.0
.target sm_89
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{{
    .reg .b32 %r<2>;
    .reg .f32 %f<{n + 2}>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [k_param_0];
    ld.param.u64 %rd5, [k_param_1];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd5, %rd5;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, {4 * width};
    add.s64 %rd3, %rd1, %rd2;
    mov.f32 %f0, 0f00000000;
    {body}
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd5, %rd6;
    st.global.f32 [%rd7], %f0;
    ret;
}}
"""


def _l2_bytes(text: str, grid) -> int:
    from types import SimpleNamespace

    from ptxopt.sim import decode, simulate
    from ptxopt.sim.coalescing import lane_charges
    from ptxopt.toolchain import compile_ptx, disassemble

    compiled = compile_ptx(text, "sm_89")
    program = decode(disassemble(compiled.cubin), "k")
    launch = SimpleNamespace(grid=grid, block=(128, 1, 1), scalars={})
    lanes = lane_charges(text, "k", launch) if grid is not None else None
    r = simulate(program, compiled, launch=(grid or (1, 1, 1), (128, 1, 1), 0), l2="cold", lanes=lanes)
    return r.l2_bytes


@pytest.mark.parametrize("width,rows,grid", CASES)
def test_split_vector_loads_move_the_vector_s_bytes(width, rows, grid):
    vector = _l2_bytes(_kernel(width, rows, split=False), grid)
    scalar = _l2_bytes(_kernel(width, rows, split=True), grid)
    # per thread: its own vectors (lane stride = the vector: nothing shared with a neighbour) + its store
    assert vector == rows * width * 4 + 4
    assert scalar == vector
