"""Functional verification: equal kernels pass, and deliberately broken
transformations are each caught (a verifier that never fails proves
nothing). Mutations are applied to the text of real corpus kernels."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from ptxopt.cli.verify import verify_cmd
from ptxopt.kernels.corpus import get
from ptxopt.ptx.parser import parse
from ptxopt.equivalence.interpret import Geometry, verify


def text(kid):
    return get(kid).ptx_text()


def check(kid, mutated: str, **kw):
    spec = get(kid)
    return verify(parse(spec.ptx_text()), parse(mutated), spec=spec, **kw)


def cli(tmp_path, original, mutated_text, *extra):
    p = tmp_path / "t.ptx"
    p.write_text(mutated_text)
    return CliRunner().invoke(verify_cmd, [original, str(p), *extra])


def replace_once(s: str, old: str, new: str) -> str:
    assert s.count(old) >= 1, old
    return s.replace(old, new, 1)


# --------------------------------------------------------------------------
# equivalent transformations pass
# --------------------------------------------------------------------------


def test_identical_and_harmless_changes_are_equal(tmp_path):
    t = text("gemm_tile_4x4x4")
    assert check("gemm_tile_4x4x4", t).equal
    hinted = t.replace("ld.global.f32", "ld.global.cg.f32").replace("st.global.f32", "st.global.cs.f32")
    assert check("gemm_tile_4x4x4", hinted).equal
    # the multiplicands of an fma commute exactly
    swapped = re.sub(r"fma\.rn\.f32\s+(%f\d+), (%f\d+), (%f\d+), ", r"fma.rn.f32 \1, \3, \2, ", t, count=5)
    assert swapped != t and check("gemm_tile_4x4x4", swapped).equal
    # two independent loads exchanged
    a, b = "\tld.global.f32 \t%f1, [%rd4];\n", "\tld.global.f32 \t%f2, [%rd4+4];\n"
    assert a + b in t
    assert check("gemm_tile_4x4x4", t.replace(a + b, b + a)).equal
    r = cli(tmp_path, "corpus:gemm_tile_4x4x4", hinted)
    assert r.exit_code == 0, r.output
    assert "equivalent" in r.output


# --------------------------------------------------------------------------
# broken transformations are caught
# --------------------------------------------------------------------------


def test_misaligned_vector_load_is_reported_as_fault(tmp_path):
    t = text("gemm_tile_4x4x4")
    bad = replace_once(t, "\tld.global.f32 \t%f2, [%rd4+4];\n\tld.global.f32 \t%f3, [%rd4+8];\n",
                       "\tld.global.v2.f32 \t{%f2, %f3}, [%rd4+4];\n")
    r = check("gemm_tile_4x4x4", bad)
    assert r.status == "error" and r.error_kind == "fault"
    assert "misaligned 8-byte access" in r.error
    res = cli(tmp_path, "corpus:gemm_tile_4x4x4", bad)
    assert res.exit_code == 2
    assert "transformed kernel faults" in res.output and "ld.global.v2.f32" in res.output


def test_load_moved_above_aliasing_store_is_caught(tmp_path):
    t = text("cuda_reduce_sum_smem")
    # the first tree step reads back sdata[tid] written before the barrier;
    # hoist that load above the store (and the barrier)
    load = "\tld.shared.f32 \t%f7, [%r5];\n"
    store = "\tst.shared.f32 \t[%r5], %f33;\n"
    bad = replace_once(t.replace(load, "", 1), store, load + store)
    r = check("cuda_reduce_sum_smem", bad)
    assert r.status == "mismatch" and r.mismatch.buffer == "partial"
    res = cli(tmp_path, "corpus:cuda_reduce_sum_smem", bad)
    assert res.exit_code == 1
    assert "first difference: partial[" in res.output


def test_dropped_fma_is_caught(tmp_path):
    t = text("gemm_tile_4x4x4")
    line = re.search(r"\tfma\.rn\.f32[^\n]*\n", t).group(0)
    bad = replace_once(t, line, "")
    r = check("gemm_tile_4x4x4", bad)
    assert r.status == "mismatch" and r.mismatch.buffer == "C"
    res = cli(tmp_path, "corpus:gemm_tile_4x4x4", bad, "--json")
    assert res.exit_code == 1
    d = json.loads(res.output)
    assert d["status"] == "mismatch" and d["mismatch"]["buffer"] == "C"
    assert d["mismatch"]["original"] != d["mismatch"]["transformed"]


def test_swapped_operands_are_caught():
    t = text("gemm_tile_4x4x4")
    # multiplicand <-> addend: a*b + c becomes c*b + a
    bad = re.sub(r"fma\.rn\.f32\s+(%f\d+), (%f\d+), (%f\d+), (%f\d+);", r"fma.rn.f32 \1, \4, \3, \2;", t,
                 count=1)
    assert bad != t
    assert check("gemm_tile_4x4x4", bad).status == "mismatch"
    # operands of a non-commutative integer op
    t = text("cuda_scan_warp_shuffle")
    m = re.search(r"sub\.s32\s+(%r\d+), (%r\d+), (%r\d+);", t)
    assert m
    bad = t.replace(m.group(0), f"sub.s32 {m.group(1)}, {m.group(3)}, {m.group(2)};", 1)
    assert check("cuda_scan_warp_shuffle", bad).status == "mismatch"


def test_wrong_v4_lane_order_is_caught():
    t = text("cuda_relu_vec4")
    bad = replace_once(t, "{%f1, %f2, %f3, %f4}, [%rd5]", "{%f2, %f1, %f3, %f4}, [%rd5]")
    r = check("cuda_relu_vec4", bad)
    assert r.status == "mismatch" and r.mismatch.buffer == "out"
    bad = replace_once(t, "{%f13, %f12, %f11, %f10}", "{%f13, %f12, %f10, %f11}")
    assert check("cuda_relu_vec4", bad).status == "mismatch"


def test_dropped_store_and_clobbered_input_are_caught():
    t = text("cuda_vector_add")
    st = re.search(r"\tst\.global\.f32[^\n]*\n", t).group(0)
    r = check("cuda_vector_add", t.replace(st, ""))
    assert r.status == "mismatch" and r.mismatch.buffer == "c"  # garbage in c differs from a + b
    # a store redirected into an input buffer
    m = re.search(r"st\.global\.f32\s+\[(%rd\d+)\]", t)
    loads = re.findall(r"ld\.global\.nc\.f32\s+%f\d+, \[(%rd\d+)\]", t)
    bad = t.replace(f"[{m.group(1)}]", f"[{loads[0]}]", 1)
    r = check("cuda_vector_add", bad)
    assert r.status == "mismatch"


def test_barrier_removal_is_caught_by_warp_serial_schedules():
    t = text("cuda_reduce_sum_smem")
    bad = t.replace("\tbar.sync \t0;\n", "", 1)
    # lockstep hides the race (the thread-serial launch is off)
    assert check("cuda_reduce_sum_smem", bad, trials=1, extra_launches=False).equal
    r = check("cuda_reduce_sum_smem", bad, extra_launches=False)
    assert r.status == "mismatch" and r.mismatch.schedule.startswith("warps")
    # a load hoisted above a barrier (below the stores) reads a slot of the
    # previous warp: only the descending warp order runs that warp too late
    t = text("cuda_scan_block")
    load = "\tld.shared.f32 \t%f29, [%r4+1016];\n"
    anchor = "\tst.shared.f32 \t[%r4+1024], %f39;\n"
    bad = replace_once(t.replace(load, "", 1), anchor, anchor + load)
    assert check("cuda_scan_block", bad, trials=2, extra_launches=False).equal
    r = check("cuda_scan_block", bad, extra_launches=False)
    assert r.status == "mismatch" and r.mismatch.schedule == "warps-reversed"


def test_edge_inputs_matter():
    # max -> max.ftz: differs only for subnormal inputs
    t = text("cuda_relu")
    bad = replace_once(t, "max.f32", "max.ftz.f32")
    assert check("cuda_relu", bad, trials=2, cap=False).equal  # plain random inputs cannot tell
    # ... so a changed precision form is never equal on sampled inputs alone
    r = check("cuda_relu", bad, trials=2)
    assert r.status == "inconclusive" and r.error.startswith("changes float precision") and "max.ftz.f32" in r.error
    r = check("cuda_relu", bad)
    assert r.status == "mismatch" and r.mismatch.flavour == "edge"


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------


def test_cli_errors_exit_2(tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.8\n.target sm_89\n.entry k()\n{\n\tadd.s32 %r1, %r2 %r3;\n}\n")
    r = CliRunner().invoke(verify_cmd, ["corpus:cuda_relu", str(bad)])
    assert r.exit_code == 2 and "bad.ptx:5" in r.output
    r = CliRunner().invoke(verify_cmd, ["corpus:nope", "corpus:cuda_relu"])
    assert r.exit_code == 2 and "ptxopt: error:" in r.output
    p = tmp_path / "k.ptx"
    p.write_text(text("cuda_relu"))
    r = CliRunner().invoke(verify_cmd, [str(p), str(p)])  # found in the manifest by signature
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(verify_cmd, [str(p), str(p), "--manifest-entry", "cuda_relu"])
    assert r.exit_code == 0, r.output
    q = tmp_path / "renamed.ptx"
    q.write_text(text("cuda_relu").replace("relu", "relu2"))
    r = CliRunner().invoke(verify_cmd, [str(q), str(q)])
    assert r.exit_code == 2 and "no launch geometry" in r.output
    r = CliRunner().invoke(verify_cmd, [str(q), str(q), "--grid", "4"])
    assert r.exit_code == 2 and "both --grid and --block" in r.output


def test_cli_geometry_outside_the_corpus(tmp_path):
    p = tmp_path / "k.ptx"
    p.write_text(text("cuda_relu"))
    q = tmp_path / "q.ptx"
    q.write_text(text("cuda_relu").replace("max.f32", "min.f32"))
    r = CliRunner().invoke(verify_cmd, [str(p), str(p), "--grid", "4", "--block", "256",
                                        "--scalar", "relu_param_2=1024"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(verify_cmd, [str(p), str(q), "--grid", "4", "--block", "256", "--json"])
    assert r.exit_code == 1
    assert json.loads(r.output)["grid"] == [4, 1, 1]


def test_geometry_defaults_and_original_faults():
    from ptxopt.interp import MemoryFault

    m = parse(text("cuda_relu"))
    r = verify(m, m, geometry=Geometry((4, 1, 1), (256, 1, 1), buffer_bytes=4096), layouts=False)
    assert r.equal and r.trials == 4 and len(r.launches) == 4
    # the default n varies by launch: element count, thread count, a small odd number
    assert [la["scalars"]["relu_param_2"] for la in r.launches] == [1024, 1024, 683, 1024]
    # scalars given explicitly: an original that faults raises
    with pytest.raises(MemoryFault, match="original kernel"):
        verify(m, m, geometry=Geometry((4, 1, 1), (256, 1, 1), buffer_bytes=1024, scalars={"relu_param_2": 1024}))
    # a defaulted scalar the original cannot run with: that launch is skipped, and said
    r = verify(m, m, geometry=Geometry((4, 1, 1), (256, 1, 1), buffer_bytes=1024), layouts=False)
    assert r.equal and r.trials == 3
    assert "relu_param_2" in r.launches[1]["skipped"] and "fault" in r.launches[1]["skipped"]
    r = verify(m, m, geometry=Geometry((4, 1, 1), (256, 1, 1), buffer_bytes=1024), layouts=False, min_coverage=0.5)
    assert r.status == "inconclusive" and "default scalars" in r.error
