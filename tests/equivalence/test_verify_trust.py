"""Trust on any kernel: each test is a way a verifier can wrongly say
"equal" (or crash) on a pair it must not call equal, or a class of
launches it must exercise. Kernels are hand-written PTX."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from ptxopt.cli.verify import verify_cmd
from ptxopt.interp import run_kernel
from ptxopt.ptx.parser import parse
from ptxopt.equivalence.interpret import Geometry, verify

HEAD = ".version 7.8\n.target sm_80\n.address_size 64\n\n"


def cli(tmp_path, a: str, b: str, *extra):
    pa, pb = tmp_path / "a.ptx", tmp_path / "b.ptx"
    pa.write_text(a)
    pb.write_text(b)
    return CliRunner().invoke(verify_cmd, [str(pa), str(pb), *extra])


# --------------------------------------------------------------------------
# 1. .global variables are outputs too
# --------------------------------------------------------------------------

GLOBAL_VAR = HEAD + """.global .u32 gflag;
.global .align 4 .b8 out[64];

.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .global .u32 inner;
  ld.param.u64 %rd1, [p];
  ld.global.u32 %r1, [%rd1];
  add.u32 %r2, %r1, FLAG;
  st.global.u32 [gflag], %r2;
  mov.u32 %r3, %tid.x;
  shl.b32 %r4, %r3, 2;
  cvt.u64.u32 %rd2, %r4;
  mov.u64 %rd3, out;
  add.s64 %rd4, %rd3, %rd2;
  add.u32 %r5, %r1, OUT;
  st.global.u32 [%rd4], %r5;
  add.u32 %r6, %r1, INNER;
  st.global.u32 [inner], %r6;
  ret;
}
"""


def _gv(flag=1, out=2, inner=3):
    return GLOBAL_VAR.replace("FLAG", str(flag)).replace("OUT", str(out)).replace("INNER", str(inner))


@pytest.mark.parametrize("kw, name", [({"flag": 5}, "gflag"), ({"out": 7}, "out"), ({"inner": 9}, "inner")])
def test_a_wrong_value_in_a_global_variable_is_a_mismatch(kw, name):
    geo = Geometry((1, 1, 1), (16, 1, 1), buffer_bytes=256)
    r = verify(parse(_gv()), parse(_gv(**kw)), geometry=geo)
    assert r.status == "mismatch", r
    assert r.mismatch.buffer == name and r.mismatch.where == "global variable"
    assert verify(parse(_gv()), parse(_gv()), geometry=geo).equal


def test_cli_names_the_global_variable(tmp_path):
    r = cli(tmp_path, _gv(), _gv(flag=5), "--grid", "1", "--block", "16", "--buffer-bytes", "256", "--no-ptxas")
    assert r.exit_code == 1, r.output
    assert "global variable gflag[0]" in r.output
    r = cli(tmp_path, _gv(), _gv(flag=5), "--grid", "1", "--block", "16", "--buffer-bytes", "256", "--no-ptxas",
            "--json")
    d = json.loads(r.output)
    assert d["mismatch"]["buffer"] == "gflag" and d["mismatch"]["where"] == "global variable"


def test_launch_result_holds_global_variables():
    m = parse(_gv())
    res = run_kernel(m, "k", 1, 16, [np.arange(4, dtype=np.uint32)])
    assert set(res.globals) == {"gflag", "out", "inner"}
    assert res.globals["gflag"].view(np.uint32)[0] == 1
    assert list(res.globals["out"].view(np.uint32)) == [2] * 16


# --------------------------------------------------------------------------
# 2. many threads storing to one symbol address
# --------------------------------------------------------------------------

SYMBOL_STORE = HEAD + """.global .u32 gflag;

.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>;
  .shared .u32 sm;
  mov.u32 %r1, %tid.x;
  st.global.u32 [gflag], %r1;
  st.shared.u32 [sm], %r1;
  bar.sync 0;
  ld.shared.u32 %r2, [sm];
  st.global.u32 [gflag+0], %r2;
  ret;
}
"""


def test_stores_from_many_threads_to_one_symbol(tmp_path):
    r = cli(tmp_path, SYMBOL_STORE, SYMBOL_STORE, "--grid", "1", "--block", "2,1,1")
    assert r.exit_code == 0, r.output
    r = cli(tmp_path, SYMBOL_STORE, SYMBOL_STORE, "--grid", "2", "--block", "64", "--no-ptxas")
    assert r.exit_code == 0, r.output
    res = run_kernel(parse(SYMBOL_STORE), "k", 1, 64, [np.zeros(4, np.float32)])
    assert res.globals["gflag"].view(np.uint32)[0] == 63  # one value wins: the last thread's
    assert verify(parse(SYMBOL_STORE), parse(SYMBOL_STORE), geometry=Geometry((1, 1, 1), (2, 1, 1))).equal


# --------------------------------------------------------------------------
# 3. default integer scalars exercise masked kernels; the contract is reported
# --------------------------------------------------------------------------

# Triton-style: program p covers 1024 elements; thread t handles 4 at
# p*1024 + 4t and 4 more at p*1024 + 512 + 4t, each masked by i < n.
MASKED = HEAD + """.visible .entry gelu(.param .u64 x_ptr, .param .u64 y_ptr, .param .u32 n_elements)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x_ptr];
  ld.param.u64 %rd2, [y_ptr];
  ld.param.u32 %r1, [n_elements];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %tid.x;
  shl.b32 %r4, %r2, 10;
  shl.b32 %r5, %r3, 2;
  add.u32 %r6, %r4, %r5;
  mov.u32 %r7, 0;
LOOP:
  setp.lt.u32 %p1, %r7, 4;
  selp.u32 %r8, 0, 508, %p1;
  add.u32 %r9, %r6, %r7;
  add.u32 %r9, %r9, %r8;
  setp.ge.u32 %p2, %r9, %r1;
  @%p2 bra NEXT;
  mul.wide.u32 %rd3, %r9, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  selp.f32 %f2, 0f3D372713, C2, %p1;
  mul.f32 %f3, %f1, %f1;
  fma.rn.f32 %f4, %f3, %f2, 0f3F800000;
  mul.f32 %f5, %f1, %f4;
  mul.f32 %f6, %f5, 0f3F000000;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f6;
NEXT:
  add.u32 %r7, %r7, 1;
  setp.lt.u32 %p3, %r7, 8;
  @%p3 bra LOOP;
  ret;
}
"""
GOOD, BAD = MASKED.replace("C2", "0f3D372713"), MASKED.replace("C2", "0f3D372714")


def test_masked_kernel_mutant_is_caught_with_default_scalars(tmp_path):
    geo = Geometry((2, 1, 1), (128, 1, 1))
    r = verify(parse(GOOD), parse(BAD), geometry=geo)
    assert r.status == "mismatch" and r.mismatch.buffer == "y_ptr", r
    assert r.launches[0]["scalars"] == {"n_elements": 16384}
    assert verify(parse(GOOD), parse(GOOD), geometry=geo).equal
    # what the old default (n = the thread count) could not see
    assert verify(parse(GOOD), parse(BAD), geometry=Geometry((2, 1, 1), (128, 1, 1), int_scalar=256)).equal
    r = cli(tmp_path, GOOD, BAD, "--grid", "2,1,1", "--block", "128,1,1", "--no-ptxas")
    assert r.exit_code == 1, r.output


def test_contract_is_reported_in_text_and_json(tmp_path):
    r = cli(tmp_path, GOOD, GOOD, "--grid", "2,1,1", "--block", "128,1,1", "--no-ptxas")
    assert r.exit_code == 0, r.output
    assert "contract: grid 2,1,1, block 128,1,1, 0 dynamic shared bytes" in r.output
    for v in ("n_elements=16384", "n_elements=256", "n_elements=171"):
        assert v in r.output
    r = cli(tmp_path, GOOD, GOOD, "--grid", "2,1,1", "--block", "128,1,1", "--no-ptxas", "--json",
            "--scalar", "n_elements=100")
    d = json.loads(r.output)
    assert d["grid"] == [2, 1, 1] and d["block"] == [128, 1, 1] and d["shared_bytes"] == 0
    assert all(la["scalars"] == {"n_elements": 100} for la in d["launches"])
    assert {"threads", "output_bytes", "branches"} <= set(d["coverage"])


def test_huge_loop_bound_does_not_hang():
    """A kernel looping n times per thread with n = the element count stays
    within the step budget, or the launch is skipped and said."""
    loop = HEAD + """.visible .entry k(.param .u64 y, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [y];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
L:
  add.u32 %r3, %r3, %r2;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra L;
  st.global.u32 [%rd1], %r3;
  ret;
}
"""
    r = verify(parse(loop), parse(loop), geometry=Geometry((1, 1, 1), (32, 1, 1)), max_steps=20000,
               layouts=False)
    assert r.equal
    assert "step" in r.launches[0]["skipped"]


# --------------------------------------------------------------------------
# 4. aliasing, overlapping and less-aligned buffers
# --------------------------------------------------------------------------

FOUR = HEAD + """.visible .entry k(.param .u64 x, .param .u64 y)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 32;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
LOADS
  add.f32 %f5, %f1, %f2;
  add.f32 %f6, %f3, %f4;
  st.global.f32 [%rd5], %f5;
  st.global.f32 [%rd5+4], %f6;
  ret;
}
"""
SCALAR_LOADS = "\n".join(f"  ld.global.f32 %f{i + 1}, [%rd4+{4 * i}];" for i in range(4))
VECTOR_LOAD = "  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4];"


def test_vector_load_assuming_alignment_faults_on_a_less_aligned_base():
    geo = Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=1024)
    a, b = parse(FOUR.replace("LOADS", SCALAR_LOADS)), parse(FOUR.replace("LOADS", VECTOR_LOAD))
    assert verify(a, b, geometry=geo, layouts=False).equal  # 256-aligned buffers cannot tell
    r = verify(a, b, geometry=geo)
    assert r.status == "error" and r.error_kind == "fault" and "unaligned" in r.error, r
    # declared alignment makes the vector load legal: no less-aligned launch
    decl = ".param .u64 .ptr .global .align 16 x"
    a2, b2 = (parse(FOUR.replace("LOADS", t).replace(".param .u64 x", decl)) for t in (SCALAR_LOADS, VECTOR_LOAD))
    r = verify(a2, b2, geometry=geo)
    assert r.equal, r
    # an original that itself needs alignment: the launch is skipped, and said
    r = verify(b, b, geometry=geo)
    assert r.equal and "original fails" in r.launches[-1]["skipped"]


def test_less_aligned_inputs_when_the_original_stores_vectors():
    geo = Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=1024)
    vst = ("  st.global.f32 [%rd5], %f5;\n  st.global.f32 [%rd5+4], %f6;", "  st.global.v2.f32 [%rd5], {%f5, %f6};")
    a, b = (parse(FOUR.replace("LOADS", t).replace(*vst)) for t in (SCALAR_LOADS, VECTOR_LOAD))
    r = verify(a, b, geometry=geo)
    assert r.status == "error" and "unaligned-inputs" in r.error, r
    assert "skipped" in r.launches[-2] and r.launches[-2]["layout"] == "unaligned"
    assert r.launches[-1]["buffers"] == {"x": "4 bytes past an aligned base"}
    r = verify(a, a, geometry=geo)
    assert r.equal and [la["layout"] for la in r.launches][-2:] == ["unaligned", "unaligned-inputs"]
    # when every buffer can be less aligned, no second launch
    a = parse(FOUR.replace("LOADS", SCALAR_LOADS))
    assert [la["layout"] for la in verify(a, a, geometry=geo).launches][-1] == "unaligned"


HOIST = HEAD + """.visible .entry k(.param .u64 x, .param .u64 y)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 32;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
BODY
  ret;
}
"""
IN_ORDER = """  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, %f1;
  st.global.f32 [%rd5], %f2;
  ld.global.f32 %f3, [%rd4+16];
  add.f32 %f4, %f3, %f3;
  st.global.f32 [%rd5+16], %f4;"""
HOISTED = """  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f3, [%rd4+16];
  add.f32 %f2, %f1, %f1;
  st.global.f32 [%rd5], %f2;
  add.f32 %f4, %f3, %f3;
  st.global.f32 [%rd5+16], %f4;"""


def test_load_hoisted_above_a_possibly_aliasing_store_is_caught():
    geo = Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=1024)
    a, b = parse(HOIST.replace("BODY", IN_ORDER)), parse(HOIST.replace("BODY", HOISTED))
    assert verify(a, b, geometry=geo, layouts=False).equal  # separate buffers cannot tell
    r = verify(a, b, geometry=geo)
    assert r.status == "mismatch" and r.mismatch.layout == "overlap", r
    assert r.launches[-1]["layout"] == "overlap" and r.launches[-1]["buffers"] == {"y": "alias of x +16 bytes"}
    # .noalias on the parameters promises they do not overlap: no aliasing launch
    na = HOIST.replace(".param .u64 x", ".param .u64 .ptr .noalias x").replace(
        ".param .u64 y", ".param .u64 .ptr .noalias y")
    r = verify(parse(na.replace("BODY", IN_ORDER)), parse(na.replace("BODY", HOISTED)), geometry=geo)
    assert r.equal and "not applicable" in r.launches[-3]["skipped"]


def test_placed_and_aliased_arguments_in_the_interpreter():
    from ptxopt.interp.launcher import Alias, Placed

    m = parse(HOIST.replace("BODY", IN_ORDER))
    x = np.arange(256, dtype=np.float32)
    res = run_kernel(m, "k", 1, 32, [Placed(x, 4), Alias(0, 0)])
    assert res.buffers[1] is None
    out = res.buffers[0]
    assert out[0] == 0 and out[8] == 16 and out[4] == 8  # y == x: in place
    res = run_kernel(m, "k", 1, 32, [x, Placed(np.zeros(256, np.float32), 8)])
    assert res.buffers[1][8] == 16


# --------------------------------------------------------------------------
# 5. ptxas on both sides
# --------------------------------------------------------------------------


def test_a_module_ptxas_rejects_is_never_equal(tmp_path):
    bad = SYMBOL_STORE.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.x;\n  .reg .b64 %q;\n  add.u32 %r3, %q, 1;")
    r = cli(tmp_path, SYMBOL_STORE, bad, "--grid", "1", "--block", "2")
    assert r.exit_code == 2, r.output
    assert "rejected by ptxas" in r.output and "sm_80" in r.output
    r = cli(tmp_path, SYMBOL_STORE, bad, "--grid", "1", "--block", "2", "--json")
    d = json.loads(r.output)
    assert d["status"] == "error" and d["error_kind"] == "ptxas" and d["arch"] == "sm_80"
    r = verify(parse(SYMBOL_STORE), parse(bad), geometry=Geometry((1, 1, 1), (2, 1, 1)), assemble=True,
               arch="sm_89")
    assert r.status == "error" and r.arch == "sm_89"
    # without assembling, the interpreter alone cannot tell
    r = cli(tmp_path, SYMBOL_STORE, bad, "--grid", "1", "--block", "2", "--no-ptxas")
    assert r.exit_code == 0, r.output


def test_arch_option_overrides_the_target(tmp_path):
    r = cli(tmp_path, SYMBOL_STORE, SYMBOL_STORE, "--grid", "1", "--block", "2", "--arch", "sm_90", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["arch"] == "sm_90"


# --------------------------------------------------------------------------
# 7. coverage
# --------------------------------------------------------------------------


STRIDED = HEAD + """.visible .entry k(.param .u64 y, .param .u32 per_thread)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [y];
  ld.param.u32 %r1, [per_thread];
  mov.u32 %r2, %tid.x;
  shl.b32 %r3, %r2, 3;
  mov.u32 %r4, 0;
L:
  setp.ge.u32 %p1, %r4, %r1;
  setp.ge.u32 %p2, %r4, 8;
  or.pred %p3, %p1, %p2;
  @%p3 bra DONE;
  add.u32 %r5, %r3, %r4;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  add.u32 %r4, %r4, 1;
  bra L;
DONE:
  ret;
}
"""


def test_coverage_and_inconclusive(tmp_path):
    # 2 of every 8 elements written: the rest of the buffer is never exercised
    few = ["--grid", "1", "--block", "64", "--no-ptxas", "--scalar", "per_thread=2", "--no-layouts"]
    r = cli(tmp_path, STRIDED, STRIDED, *few, "--json")
    d = json.loads(r.output)
    assert r.exit_code == 4 and d["status"] == "inconclusive", r.output
    assert "below" not in d["error"] and "stored only" in d["error"]
    c = d["coverage"]
    # a guessed buffer counts up to the last byte stored (its true size is unknown)
    assert c["written_bytes"] == 64 * 2 * 4 and c["output_size"] == (63 * 8 + 2) * 4
    assert c["threads"] == 1.0 and c["branch_directions"] == 2
    r = cli(tmp_path, STRIDED, STRIDED, *few, "--min-coverage", "0")
    assert r.exit_code == 0, r.output
    r = cli(tmp_path, STRIDED, STRIDED, *few[:-3])  # default scalars: 8 per thread is reached
    assert r.exit_code == 0, r.output
    # the library never says inconclusive unless asked
    geo = Geometry((1, 1, 1), (64, 1, 1), scalars={"per_thread": 2})
    assert verify(parse(STRIDED), parse(STRIDED), geometry=geo).equal
    assert verify(parse(STRIDED), parse(STRIDED), geometry=geo, min_coverage=0.5).status == "inconclusive"
    r = verify(parse(GOOD), parse(GOOD), geometry=Geometry((2, 1, 1), (128, 1, 1)))
    c = r.coverage
    assert r.equal and c.output_bytes == 1.0 and c.threads == 1.0 and c.branches == 1.0


# --------------------------------------------------------------------------
# 6. mma with .tf32 inputs; unsupported opcodes
# --------------------------------------------------------------------------

MMA_TF32 = HEAD + """.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
  .reg .f32 %f<16>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u64 %rd4, [pd];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd5, %r1, 16;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd6];
  mul.wide.u32 %rd7, %r1, 8;
  add.s64 %rd8, %rd2, %rd7;
  ld.global.v2.f32 {%f5, %f6}, [%rd8];
  add.s64 %rd9, %rd3, %rd5;
  ld.global.v4.f32 {%f7, %f8, %f9, %f10}, [%rd9];
  mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f11, %f12, %f13, %f14}, {%f1, %f2, %f3, %f4}, {%f5, %f6}, {%f7, %f8, %f9, %f10};
  add.s64 %rd10, %rd4, %rd5;
  st.global.v4.f32 [%rd10], {%f11, %f12, %f13, %f14};
  ret;
}
"""


def _tf32(x):
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


def test_mma_tf32_m16n8k8():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((16, 8)).astype(np.float32)
    B = rng.standard_normal((8, 8)).astype(np.float32)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    afr = np.stack([A[g, t], A[g + 8, t], A[g, t + 4], A[g + 8, t + 4]], 1)
    bfr = np.stack([B[t, g], B[t + 4, g]], 1)
    cfr = np.stack([C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]], 1)
    res = run_kernel(parse(MMA_TF32), "k", 1, 32, [afr, bfr, cfr, np.zeros((32, 4), np.float32)])
    d = res.buffers[3]
    D = np.zeros((16, 8), np.float32)
    D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1] = d[:, 0], d[:, 1], d[:, 2], d[:, 3]
    want = (_tf32(A) @ _tf32(B) + C.astype(np.float64)).astype(np.float32)
    assert np.array_equal(D, want)
    # the low 13 mantissa bits of the inputs are ignored
    noisy = (afr.view(np.uint32) ^ np.uint32(0x1FFF)).view(np.float32)
    res2 = run_kernel(parse(MMA_TF32), "k", 1, 32, [noisy, bfr, cfr, np.zeros((32, 4), np.float32)])
    assert np.array_equal(res2.buffers[3], d)
    # and a changed accumulate is seen by verify
    m = parse(MMA_TF32)
    assert verify(m, m, geometry=Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=512)).equal


def test_mma_tf32_m16n8k4():
    k4 = (MMA_TF32.replace("m16n8k8", "m16n8k4")
          .replace("{%f1, %f2, %f3, %f4}, {%f5, %f6}, {%f7", "{%f1, %f2}, {%f5}, {%f7"))
    rng = np.random.default_rng(2)
    A = rng.standard_normal((16, 4)).astype(np.float32)
    B = rng.standard_normal((4, 8)).astype(np.float32)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    afr = np.stack([A[g, t], A[g + 8, t], np.zeros(32), np.zeros(32)], 1).astype(np.float32)
    bfr = np.stack([B[t, g], np.zeros(32)], 1).astype(np.float32)
    zeros = np.zeros((32, 4), np.float32)
    res = run_kernel(parse(k4), "k", 1, 32, [afr, bfr, zeros, zeros.copy()])
    d = res.buffers[3]
    D = np.zeros((16, 8), np.float32)
    D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1] = d[:, 0], d[:, 1], d[:, 2], d[:, 3]
    assert np.array_equal(D, (_tf32(A) @ _tf32(B)).astype(np.float32))


def test_unsupported_opcode_is_a_clear_error(tmp_path):
    from ptxopt.interp import UnsupportedInstruction

    k = SYMBOL_STORE.replace("mov.u32 %r1, %tid.x;", "mov.u32 %r1, %tid.x;\n  xyzzy.b32 %r3, %r1;")
    with pytest.raises(UnsupportedInstruction, match="unsupported opcode xyzzy"):
        run_kernel(parse(k), "k", 1, 2, [np.zeros(4, np.float32)])
    r = cli(tmp_path, SYMBOL_STORE, k, "--grid", "1", "--block", "2", "--no-ptxas")
    assert r.exit_code == 2 and "unsupported opcode xyzzy" in r.output and "Traceback" not in r.output
    # an unimplemented mma shape names itself
    k2 = MMA_TF32.replace("m16n8k8", "m16n8k16")
    with pytest.raises(UnsupportedInstruction, match="mma"):
        run_kernel(parse(k2), "k", 1, 32, [np.zeros(128, np.float32)] * 4)


def test_an_interpreter_crash_is_an_error_not_a_traceback(monkeypatch):
    from ptxopt.interp import UnsupportedInstruction, device_memory as memory

    def broken(self, *a, **k):
        raise ValueError("simulated")

    monkeypatch.setattr(memory.Memory, "store", broken)
    with pytest.raises(UnsupportedInstruction, match=r"st\.global\.u32 \[gflag\].*ValueError: simulated"):
        run_kernel(parse(SYMBOL_STORE), "k", 1, 2, [np.zeros(4, np.float32)])


def test_verdict_vocabulary_is_the_evaluator_s():
    from ptxopt.equivalence.interpret import VerifyResult

    assert VerifyResult("k", "mismatch", 1).verdict == "differ"
    assert VerifyResult("k", "error", 1).verdict == "differ"
    assert VerifyResult("k", "equal", 4).verdict == "equal"
    assert VerifyResult("k", "inconclusive", 4).to_json()["verdict"] == "inconclusive"
