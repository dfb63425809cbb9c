"""Tests for ptxopt.toolchain: locating ptxas/nvdisasm, compiling, decoding SASS.

These run the real ptxas/nvdisasm from the NVIDIA wheels (no GPU, no nvcc).
Every PTX kernel is written inline so the expected values can be derived from
the source (declared shared size, the line we broke, ...), not copied from a
previous run.
"""

from __future__ import annotations

import os
import re

import pytest

from ptxopt import toolchain as tc
from ptxopt.toolchain import locate
from ptxopt.toolchain.tables import CONTROL_FIELDS, CONTROL_SHIFT_IN_HIGH_WORD, NO_BARRIER

# --------------------------------------------------------------------------
# PTX sources
# --------------------------------------------------------------------------


def _module(body: str, version: str = "8.8", target: str = "sm_89") -> str:
    return f".version {version}\n.target {target}\n.address_size 64\n\n{body.strip()}\n"


# A single-thread kernel: three global loads, a dependent FMA chain, one store.
FMA_BODY = """
.visible .entry fma_chain(
    .param .u64 fma_chain_x,
    .param .u64 fma_chain_y
)
{
    .reg .f32 %f<8>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [fma_chain_x];
    ld.param.u64 %rd2, [fma_chain_y];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    ld.global.f32 %f1, [%rd3];
    ld.global.f32 %f2, [%rd3+4];
    ld.global.f32 %f3, [%rd3+8];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    fma.rn.f32 %f5, %f4, %f1, %f2;
    fma.rn.f32 %f6, %f5, %f4, %f3;
    st.global.f32 [%rd4], %f6;
    ret;
}
"""
FMA_PTX = _module(FMA_BODY)

# A local array filled by a loop and read at a run-time index: ptxas cannot
# scalar-replace it (it does so for arrays written at constant offsets, even
# large ones), so it must live in a stack frame.
LOCAL_ARRAY_WORDS = 64
LOCAL_ARRAY_PTX = _module(
    f"""
.visible .entry local_array(
    .param .u64 local_array_in,
    .param .u64 local_array_out,
    .param .u32 local_array_n,
    .param .u32 local_array_k
)
{{
    .local .align 4 .b8 buf[{4 * LOCAL_ARRAY_WORDS}];
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [local_array_in];
    ld.param.u64 %rd2, [local_array_out];
    ld.param.u32 %r1, [local_array_n];
    ld.param.u32 %r2, [local_array_k];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u64 %rd5, buf;
    mov.u32 %r3, 0;
fill:
    setp.ge.u32 %p1, %r3, %r1;
    @%p1 bra filled;
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd3, %rd6;
    ld.global.f32 %f1, [%rd7];
    add.s64 %rd8, %rd5, %rd6;
    st.local.f32 [%rd8], %f1;
    add.u32 %r3, %r3, 1;
    bra fill;
filled:
    and.b32 %r4, %r2, {LOCAL_ARRAY_WORDS - 1};
    mul.wide.u32 %rd6, %r4, 4;
    add.s64 %rd9, %rd5, %rd6;
    ld.local.f32 %f2, [%rd9];
    st.global.f32 [%rd4], %f2;
    ret;
}}
"""
)


def pressure_ptx(values: int, maxnreg: int | None) -> str:
    """Load ``values`` floats, reduce them to s, then store every v_i * s.

    All v_i stay live until s is known, so with ``.maxnreg`` below ``values``
    ptxas must spill.
    """
    directive = f".maxnreg {maxnreg}\n" if maxnreg else ""
    lines = [
        ".visible .entry pressure(",
        "    .param .u64 pressure_in,",
        "    .param .u64 pressure_out",
        f"){directive}",
        "{",
        f"    .reg .f32 %v<{values}>;",
        f"    .reg .f32 %s<{values + 1}>;",
        "    .reg .b64 %rd<5>;",
        "    ld.param.u64 %rd1, [pressure_in];",
        "    ld.param.u64 %rd2, [pressure_out];",
        "    cvta.to.global.u64 %rd3, %rd1;",
        "    cvta.to.global.u64 %rd4, %rd2;",
    ]
    lines += [f"    ld.global.f32 %v{i}, [%rd3+{4 * i}];" for i in range(values)]
    lines.append("    mov.f32 %s0, 0f00000000;")
    lines += [f"    fma.rn.f32 %s{i + 1}, %v{i}, %v{values - 1 - i}, %s{i};" for i in range(values)]
    lines += [f"    mul.f32 %v{i}, %v{i}, %s{values};" for i in range(values)]
    lines += [f"    st.global.f32 [%rd4+{4 * i}], %v{i};" for i in range(values)]
    lines += ["    ret;", "}"]
    return _module("\n".join(lines))


SHARED_BYTES = 1024
SHARED_PTX = _module(
    f"""
.visible .entry smem_reverse(
    .param .u64 smem_reverse_p
)
{{
    .shared .align 4 .b8 tile[{SHARED_BYTES}];
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [smem_reverse_p];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u32 %r2, tile;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    st.shared.f32 [%r4], %f1;
    bar.sync 0;
    sub.s32 %r5, {SHARED_BYTES - 4}, %r3;
    add.s32 %r5, %r2, %r5;
    ld.shared.f32 %f2, [%r5];
    st.global.f32 [%rd4], %f2;
    ret;
}}
"""
)

# An entry calling a non-inlined .func: ptxas reports the callee separately.
CALL_PTX = _module(
    """
.func (.param .b32 addone_ret) addone(
    .param .b32 addone_a
)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [addone_a];
    add.s32 %r2, %r1, 1;
    st.param.b32 [addone_ret], %r2;
    ret;
}

.visible .entry caller(
    .param .u64 caller_p
)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [caller_p];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.u32 %r1, [%rd2];
    {
    .param .b32 arg0;
    .param .b32 ret0;
    st.param.b32 [arg0], %r1;
    call.uni (ret0), addone, (arg0);
    ld.param.b32 %r2, [ret0];
    }
    st.global.u32 [%rd2], %r2;
    ret;
}
"""
)


def outer_product_ptx(n: int = 4) -> str:
    """c[i][j] = a[i] * b[j] + c[i][j]: every a[i]/b[j] feeds n FMAs (operand reuse)."""
    lines = [
        ".visible .entry outer(",
        "    .param .u64 outer_a,",
        "    .param .u64 outer_b,",
        "    .param .u64 outer_c",
        ")",
        "{",
        f"    .reg .f32 %a<{n}>;",
        f"    .reg .f32 %b<{n}>;",
        f"    .reg .f32 %c<{n * n}>;",
        "    .reg .b64 %rd<7>;",
        "    ld.param.u64 %rd1, [outer_a];",
        "    ld.param.u64 %rd2, [outer_b];",
        "    ld.param.u64 %rd3, [outer_c];",
        "    cvta.to.global.u64 %rd4, %rd1;",
        "    cvta.to.global.u64 %rd5, %rd2;",
        "    cvta.to.global.u64 %rd6, %rd3;",
    ]
    lines += [f"    ld.global.f32 %a{i}, [%rd4+{4 * i}];" for i in range(n)]
    lines += [f"    ld.global.f32 %b{i}, [%rd5+{4 * i}];" for i in range(n)]
    lines += [f"    ld.global.f32 %c{k}, [%rd6+{4 * k}];" for k in range(n * n)]
    lines += [f"    fma.rn.f32 %c{i * n + j}, %a{i}, %b{j}, %c{i * n + j};" for i in range(n) for j in range(n)]
    lines += [f"    st.global.f32 [%rd6+{4 * k}], %c{k};" for k in range(n * n)]
    lines += ["    ret;", "}"]
    return _module("\n".join(lines))


@pytest.fixture(scope="module")
def ptxas_tools() -> tuple[tc.Ptxas, ...]:
    return tc.installed_ptxas()


@pytest.fixture(scope="module")
def fma_result() -> tc.CompileResult:
    return tc.compile_ptx(FMA_PTX, "sm_89")


# --------------------------------------------------------------------------
# locating the tools
# --------------------------------------------------------------------------


def test_finds_ptxas_from_both_wheels(ptxas_tools):
    majors = {t.release[0] for t in ptxas_tools}
    assert {12, 13} <= majors, ptxas_tools
    roots = [p.resolve() for p in locate._namespace_roots()]
    for tool in ptxas_tools:
        assert tool.path.is_file() and os.access(tool.path, os.X_OK)
        assert any(root in tool.path.resolve().parents for root in roots), "must come from the nvidia wheels"
        assert re.fullmatch(r"\d+\.\d+", tool.version)
        assert tool.full_version.startswith(tool.version + ".")
    assert [t.release for t in ptxas_tools] == sorted(t.release for t in ptxas_tools)


def test_release_table_matches_what_each_ptxas_accepts(ptxas_tools):
    for tool in ptxas_tools:
        assert locate.probe_max_ptx_isa(tool) == tool.max_ptx_isa
        newest = _module("", version=locate.format_version(tool.max_ptx_isa), target="sm_75")
        tc.compile_ptx(newest, "sm_75", ptxas=tool)  # accepted
        major, minor = tool.max_ptx_isa
        too_new = _module("", version=f"{major}.{minor + 1}", target="sm_75")
        with pytest.raises(tc.PtxasError, match=r"Unsupported \.version"):
            tc.compile_ptx(too_new, "sm_75", ptxas=tool)


def test_find_nvdisasm():
    tool = tc.find_nvdisasm()
    assert tool.name == "nvdisasm" and tool.path.is_file()
    assert tool.release >= (13, 0)


def test_toolchain_versions(ptxas_tools):
    versions = tc.toolchain_versions()
    assert set(versions["ptxas"]) == {t.version for t in ptxas_tools}
    assert versions["nvdisasm"] == tc.find_nvdisasm().full_version


def test_selects_oldest_ptxas_accepting_the_version(ptxas_tools):
    assert tc.select_ptxas((8, 8)).release[0] == 12
    assert tc.select_ptxas((9, 0)).release[0] == 13
    assert tc.select_ptxas(None) == ptxas_tools[0]
    for version in [(7, 0), (8, 5), (8, 8), (9, 0)]:
        chosen = tc.select_ptxas(version)
        assert chosen.accepts(version)
        assert all(not t.accepts(version) for t in ptxas_tools if t.release < chosen.release)


def test_too_new_ptx_version_is_a_clear_error(ptxas_tools):
    with pytest.raises(tc.UnsupportedPTXVersion) as err:
        tc.select_ptxas((99, 0))
    message = str(err.value)
    assert "PTX .version 99.0 is newer than any installed ptxas supports" in message
    for tool in ptxas_tools:
        assert f"ptxas {tool.version} accepts <= {locate.format_version(tool.max_ptx_isa)}" in message
    with pytest.raises(tc.UnsupportedPTXVersion):
        tc.compile_ptx(FMA_PTX.replace(".version 8.8", ".version 99.0"))


def test_unknown_arch_is_a_clear_error():
    with pytest.raises(tc.UnsupportedArch, match="sm_8'"):
        tc.compile_ptx(FMA_PTX, "sm_8")


def test_ptxas_override_env(monkeypatch, ptxas_tools):
    newest = ptxas_tools[-1]
    monkeypatch.setenv("PTXOPT_PTXAS", str(newest.path))
    assert tc.installed_ptxas() == (newest,)
    assert tc.compile_ptx(FMA_PTX).ptxas_path == newest.path
    monkeypatch.setenv("PTXOPT_PTXAS", "/nonexistent/ptxas")
    with pytest.raises(tc.ToolNotFound, match="PTXOPT_PTXAS"):
        tc.select_ptxas((8, 8))


def test_nvdisasm_override_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PTXOPT_NVDISASM", str(tc.find_nvdisasm().path))
    assert tc.find_nvdisasm().name == "nvdisasm"
    monkeypatch.setenv("PTXOPT_NVDISASM", str(tmp_path / "nvdisasm"))
    with pytest.raises(tc.ToolNotFound, match="PTXOPT_NVDISASM"):
        tc.find_nvdisasm()


def test_missing_wheels_are_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("PTXOPT_PTXAS", raising=False)
    monkeypatch.delenv("PTXOPT_NVDISASM", raising=False)
    monkeypatch.setattr(locate, "_namespace_roots", lambda: [tmp_path])
    with pytest.raises(tc.ToolNotFound, match="pip install nvidia-cuda-nvcc-cu12"):
        tc.select_ptxas((8, 8))
    with pytest.raises(tc.ToolNotFound, match="nvidia-cuda-nvdisasm"):
        tc.find_nvdisasm()


# --------------------------------------------------------------------------
# compiling
# --------------------------------------------------------------------------


def test_compile_small_kernel(fma_result):
    r = fma_result
    assert r.arch == "sm_89"
    assert r.ptxas_version == tc.select_ptxas((8, 8)).version
    assert r.ptx_version == (8, 8)
    assert r.cubin[:4] == b"\x7fELF"
    assert list(r.kernels) == ["fma_chain"]
    assert r.registers > 0 and r.kernel.registers == r.registers
    assert r.spill_bytes == 0 and r.stack_frame_bytes == 0
    assert r.kernel.barriers == 0 and r.kernel.shared_bytes == 0
    assert r.wall_time_s > 0
    assert "Compiling entry function 'fma_chain'" in r.log


def test_compile_newer_ptx_version_uses_newer_ptxas():
    r = tc.compile_ptx(_module(FMA_BODY, version="9.0"), "sm_90")
    assert r.ptxas_version == tc.select_ptxas((9, 0)).version
    assert r.ptxas_version.startswith("13.")
    assert r.registers > 0


def test_local_array_needs_a_stack_frame():
    r = tc.compile_ptx(LOCAL_ARRAY_PTX)
    assert r.stack_frame_bytes >= 4 * LOCAL_ARRAY_WORDS
    assert r.kernel.cumulative_stack_bytes >= r.stack_frame_bytes
    assert r.spill_bytes == 0  # a local array is not a spill


@pytest.mark.parametrize("version", ["8.8", "9.0"])
def test_register_pressure_spills_under_maxnreg(version):
    values, cap = 48, 32
    free = tc.compile_ptx(pressure_ptx(values, None).replace(".version 8.8", f".version {version}"))
    capped = tc.compile_ptx(pressure_ptx(values, cap).replace(".version 8.8", f".version {version}"))
    assert free.spill_bytes == 0 and free.registers > cap
    assert capped.registers <= cap
    assert capped.spill_store_bytes > 0 and capped.spill_load_bytes > 0
    assert capped.stack_frame_bytes >= capped.spill_store_bytes // 2 > 0


def test_shared_memory_and_barriers_are_reported():
    r = tc.compile_ptx(SHARED_PTX)
    assert r.kernel.shared_bytes == SHARED_BYTES
    assert r.kernel.barriers == 1


def test_func_callees_are_reported_separately():
    r = tc.compile_ptx(CALL_PTX)
    assert list(r.kernels) == ["caller"]
    assert r.kernels["caller"].is_entry and r.kernels["caller"].registers > 0
    callee = r.functions["addone"]
    assert not callee.is_entry and callee.registers is None and callee.barriers is None


def test_kernels_follow_ptx_source_order():
    second = FMA_BODY.replace("fma_chain", "second_kernel")
    r = tc.compile_ptx(_module(second + "\n" + FMA_BODY))
    assert list(r.kernels) == ["second_kernel", "fma_chain"]
    assert r.kernels["second_kernel"].registers == r.kernels["fma_chain"].registers


def test_syntax_error_reports_the_ptx_line():
    lines = FMA_PTX.splitlines()
    broken_index = next(i for i, line in enumerate(lines) if "fma.rn.f32 %f5" in line)
    lines[broken_index] = "    fmaa.rn.f32 %f5, %f4, %f1, %f2;"
    with pytest.raises(tc.PtxasError) as err:
        tc.compile_ptx("\n".join(lines) + "\n")
    e = err.value
    assert e.line == broken_index + 1
    assert "fmaa" in e.message
    assert str(e).startswith(f"line {broken_index + 1}: error: ")
    assert "/tmp" not in e.message and "/tmp" not in e.log
    assert any(d.line == e.line for d in e.diagnostics)
    assert isinstance(e, tc.ToolchainError)


def test_undeclared_register_reports_its_line():
    lines = FMA_PTX.splitlines()
    index = next(i for i, line in enumerate(lines) if "st.global.f32" in line)
    lines[index] = "    st.global.f32 [%rd4], %f99;"
    with pytest.raises(tc.PtxasError) as err:
        tc.compile_ptx("\n".join(lines))
    e = err.value
    assert e.line == index + 1
    assert any("%f99" in d.message and d.line == index + 1 for d in e.diagnostics)


def test_timeout_raises_toolchain_timeout():
    with pytest.raises(tc.ToolchainTimeout) as err:
        tc.compile_ptx(FMA_PTX, timeout=1e-4, memo=False)  # a memo hit runs nothing to time out
    assert isinstance(err.value, tc.ToolchainError)
    assert "ptxas" in str(err.value)


def test_ptx_isa_version_parsing():
    assert tc.ptx_isa_version(FMA_PTX) == (8, 8)
    assert tc.ptx_isa_version("// .version 1.0\n  .version 9.1\n") == (9, 1)
    assert tc.ptx_isa_version(".target sm_89\n") is None


# --------------------------------------------------------------------------
# SASS
# --------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sm_89", "sm_90"])
def outer_listing(request) -> tc.SassListing:
    return tc.disassemble(tc.compile_ptx(outer_product_ptx(), request.param).cubin)


def test_disassembly_structure(outer_listing):
    listing = outer_listing
    assert listing.arch in ("sm_89", "sm_90")
    assert list(listing.functions) == ["outer"]
    body = listing.functions["outer"]
    assert listing.count == len(body) == len(listing.instructions) > 0
    offsets = [ins.offset for ins in body]
    assert offsets == list(range(0, 16 * len(body), 16))
    ops = listing.opcode_counts()
    assert ops["FFMA"] == 16 and ops["STG"] + ops["LDG"] > 0 and ops["EXIT"] >= 1
    assert all(ins.opcode.startswith(ins.base_opcode) for ins in body)
    assert any(ins.guard is None for ins in body)


def test_control_fields_in_range(outer_listing):
    used_bits = 0
    for _, offset, width in CONTROL_FIELDS:
        used_bits |= ((1 << width) - 1) << (offset + CONTROL_SHIFT_IN_HIGH_WORD)
    for ins in outer_listing:
        c = ins.control
        assert 0 <= c.stall <= 15 and c.yield_flag in (0, 1)
        assert 0 <= c.write_barrier <= 7 and 0 <= c.read_barrier <= 7
        assert 0 <= c.wait_mask < 64 and 0 <= c.reuse < 16
        assert c.write_barrier in range(6) or c.write_barrier == NO_BARRIER
        assert ins.high >> 62 == 0, "bits above the control field are unused"
        assert c.to_high_word_bits() == ins.high & used_bits


def test_control_decoding_is_remembered_by_its_bits():
    from ptxopt.toolchain.control_bits import Control

    a = (0b0110_101_011_0_0011 << CONTROL_SHIFT_IN_HIGH_WORD) | 0x1234  # the same control bits,
    b = (0b0110_101_011_0_0011 << CONTROL_SHIFT_IN_HIGH_WORD) | 0x9876  # other opcode bits
    c = (0b0110_101_011_0_0100 << CONTROL_SHIFT_IN_HIGH_WORD) | 0x1234
    assert Control.from_high_word(a) is Control.from_high_word(b)
    assert Control.from_high_word(a) == Control._decode(a >> CONTROL_SHIFT_IN_HIGH_WORD)
    assert Control.from_high_word(c).stall == 4 and Control.from_high_word(a).stall == 3


def test_reuse_bits_match_reuse_flags(outer_listing):
    with_reuse = 0
    for ins in outer_listing:
        flagged = ins.operands.count(".reuse")
        assert bin(ins.control.reuse).count("1") == flagged, ins.text
        with_reuse += flagged > 0
    assert with_reuse > 0, "the outer product should make ptxas use the reuse cache"


def test_loaded_register_is_waited_on_before_use(outer_listing):
    """The scoreboard an LDG sets is waited on no later than the first reader of its result."""
    body = outer_listing.functions["outer"]
    checked = 0
    for i, ld in enumerate(body):
        if ld.base_opcode != "LDG":
            continue
        barrier = ld.control.writes
        assert barrier is not None, f"{ld.text} sets no write barrier"
        dest = ld.operand_list[0]
        reads = re.compile(rf"(?<![\w.]){re.escape(dest)}(?![\w])")
        waited = False
        for user in body[i + 1 :]:
            waited = waited or barrier in user.control.waits_on
            sources = user.operand_list if user.base_opcode == "STG" else user.operand_list[1:]
            if any(reads.search(op) for op in sources):
                assert waited, f"{user.text} reads {dest} before waiting on SB{barrier}"
                checked += 1
                break
    assert checked >= 4


def test_sass_text_is_stable_and_normalised():
    cubin = tc.compile_ptx(FMA_PTX).cubin
    text = tc.sass_text(cubin)
    assert text == tc.sass_text(tc.compile_ptx(FMA_PTX).cubin)
    assert "/*" not in text and "0x0000" not in text and ".section" not in text
    assert "fma_chain:" in text and "FFMA" in text
    with_control = tc.sass_text(cubin, control=True)
    assert with_control != text and "[B" in with_control
    # A real change in the PTX shows up as a different listing.
    changed = FMA_PTX.replace("fma.rn.f32 %f6, %f5, %f4, %f3", "mul.f32 %f6, %f5, %f4")
    assert tc.sass_text(tc.compile_ptx(changed).cubin) != text


def test_sass_text_ignores_kernel_order():
    a = FMA_BODY.replace("fma_chain", "kernel_a")
    b = SHARED_PTX.split(".address_size 64", 1)[1]
    one = tc.compile_ptx(_module(a + "\n" + b)).cubin
    two = tc.compile_ptx(_module(b + "\n" + a)).cubin
    assert tc.sass_text(one) == tc.sass_text(two)


def test_disassembling_garbage_is_a_clear_error():
    with pytest.raises(tc.NvdisasmError):
        tc.disassemble(b"definitely not an ELF file")
    with pytest.raises(tc.NvdisasmError):
        tc.disassemble(b"")
