"""The %clock64 instrumentation (ptxopt.gpu.clock_instrument), checked on the CPU:
ptxas accepts the instrumented corpus, the printed PTX round-trips, and the
interpreter runs every instrumented kernel to the same outputs as the
original plus a plausible duration for every thread."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.kernels.corpus import load_manifest
from ptxopt.ptx.emit import emit
from ptxopt.gpu.clock_instrument import (
    CLOCK_PARAM,
    SENTINEL,
    AlreadyInstrumented,
    InstrumentError,
    exit_sequence,
    exit_sites,
    instrument,
    instrument_ptx,
    instrument_sites,
    is_instrumented,
)
from ptxopt.interp import make_args, run_kernel
from ptxopt.ptx.ir import Instruction
from ptxopt.ptx.parser import parse
from ptxopt.toolchain import compile_ptx

SPECS = load_manifest()
BIG = {"gemm_tile_10x10x10", "gemm_tile_12x12x12", "gemm_tile_14x14x14", "gemm_tile_16x16x16"}
FAST = [s for s in SPECS if s.id not in BIG]
ids = [s.id for s in SPECS]

# Four ways out of a kernel: a guarded ret, an exit inside a nested scope, a
# plain ret, and falling off the end of the body (a label right before `}`).
EXITS_PTX = """
.version 8.0
.target sm_89
.address_size 64

.visible .entry exits(
	.param .u64 exits_param_0,
	.param .u32 exits_param_1
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [exits_param_0];
	ld.param.u32 	%r1, [exits_param_1];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r2;
	and.b32 	%r3, %r2, 3;
	setp.eq.u32 	%p1, %r3, 0;
	@%p1 ret;
	setp.eq.u32 	%p2, %r3, 1;
	@!%p2 bra 	$L_two;
	{
	add.u32 	%r4, %r2, %r1;
	st.global.u32 	[%rd4], %r4;
	exit;
	}
$L_two:
	setp.eq.u32 	%p3, %r3, 2;
	@!%p3 bra 	$L_end;
	add.u32 	%r5, %r2, 100;
	st.global.u32 	[%rd4], %r5;
	ret;
$L_end:
}
"""

NO_RET_PTX = """
.version 8.0
.target sm_89
.address_size 64

.visible .entry noret(
	.param .u64 noret_param_0
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [noret_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	st.global.u32 	[%rd2], %r1;
}
"""


def _instructions(block):
    from ptxopt.ptx.ir import Block

    for s in block.items:
        if type(s) is Instruction:
            yield s
        elif type(s) is Block:
            yield from _instructions(s)


def _run_pair(spec):
    """Original and instrumented kernels on the same inputs: (original, instrumented) results."""
    m = parse(spec.ptx_text(), f"corpus:{spec.id}")
    mi = instrument(m, spec.entry)
    args = make_args(spec, 0)
    copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    clk = np.full(spec.launch.threads, SENTINEL, dtype=np.uint64)
    g, b, sh = spec.launch.grid, spec.launch.block, spec.launch.shared_bytes
    ro = run_kernel(m, spec.entry, g, b, args, sh, seed=0)
    ri = run_kernel(mi, spec.entry, g, b, copy + [clk], sh, seed=0)
    return ro, ri


# ---------------------------------------------------------------------------
# the whole corpus
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", FAST, ids=[s.id for s in FAST])
def test_ptxas_accepts_instrumented_corpus(spec):
    text = instrument_ptx(spec.ptx_text(), spec.entry)
    res = compile_ptx(text, "sm_89")
    assert spec.entry in res.kernels
    assert res.kernels[spec.entry].registers >= 1


@pytest.mark.parametrize("spec", FAST[::6], ids=[s.id for s in FAST[::6]])
def test_ptxas_accepts_instrumented_corpus_sm90(spec):
    # the H100/H200 measurement machines are sm_90: the committed sm_89 PTX is compiled for them
    compile_ptx(instrument_ptx(spec.ptx_text(), spec.entry), "sm_90")


@pytest.mark.slow
@pytest.mark.parametrize("spec", [s for s in SPECS if s.id in BIG], ids=sorted(BIG))
def test_ptxas_accepts_instrumented_big_gemm_tiles(spec):
    for arch in ("sm_89", "sm_90"):
        compile_ptx(instrument_ptx(spec.ptx_text(), spec.entry), arch)


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_round_trip(spec):
    m = parse(spec.ptx_text(), f"corpus:{spec.id}")
    mi = instrument(m, spec.entry)
    text = emit(mi)
    again = parse(text)
    assert again == mi
    assert emit(again) == text
    assert is_instrumented(again) and not is_instrumented(m)
    # the original module is untouched
    assert emit(m) == emit(parse(spec.ptx_text()))


@pytest.mark.parametrize("spec", SPECS, ids=ids)
def test_interpreter_same_outputs_plus_durations(spec):
    ro, ri = _run_pair(spec)
    assert len(ri.buffers) == len(ro.buffers) + 1
    for name, a, b in zip(ro.names, ro.buffers, ri.buffers):
        if a is None:
            assert b is None
            continue
        assert a.tobytes() == b.tobytes(), f"{spec.id}: buffer {name} differs after instrumentation"
    clk = ri.buffers[-1]
    assert ri.names[-1] == CLOCK_PARAM
    assert not (clk == SENTINEL).any(), "a thread recorded no duration"
    # the interpreter's %clock64 counts issued instructions of the launch: every duration is
    # positive and no longer than the instrumented launch itself
    assert (clk > 0).all()
    assert int(clk.max()) <= ri.steps
    # single-thread kernels: the duration is at least the original kernel's instruction count minus
    # the loads before the first read and the ret (all of them are inside the interval here)
    if spec.launch.threads == 1:
        assert int(clk[0]) >= ro.steps - 1


def test_corpus_kernels_have_one_exit():
    # what the corpus looks like today (every kernel returns once); the synthetic
    # kernels below cover the other shapes
    for spec in SPECS:
        assert exit_sites(parse(spec.ptx_text()), spec.entry) == 1, spec.id


# ---------------------------------------------------------------------------
# exits
# ---------------------------------------------------------------------------


def test_every_exit_is_instrumented_with_its_guard():
    m = parse(EXITS_PTX)
    mi = instrument(m)
    fn = mi.entries[0]
    ins = list(_instructions(fn.body))
    seq = exit_sequence()
    n = len(seq)
    exits = [i for i, x in enumerate(ins) if x.opcode in ("ret", "exit")]
    # 3 written exits + the fall-through epilogue's ret
    assert len(exits) == 4
    for i in exits:
        before = ins[i - n:i]
        assert [(b.opcode, b.modifiers, b.operands) for b in before] == [(s.opcode, s.modifiers, s.operands)
                                                                           for s in seq]
        assert all(b.guard == ins[i].guard and b.guard_neg == ins[i].guard_neg for b in before)
        assert before[-1].full_opcode == "st.global.u64"
    assert ins[exits[0]].guard == "%p1"  # @%p1 ret kept its guard
    # the start read is the first instruction, after the declarations
    first = next(s for s in fn.body.items if type(s) is Instruction)
    assert first.full_opcode == "mov.u64" and str(first.operands[1]) == "%clock64"
    # the clock buffer is the last parameter; the others did not move
    assert [p.name for p in fn.params] == ["exits_param_0", "exits_param_1", CLOCK_PARAM]


def test_every_exit_records_on_the_interpreter_and_ptxas_accepts_it():
    m = parse(EXITS_PTX)
    mi = instrument(m)
    text = emit(mi)
    compile_ptx(text, "sm_89")
    threads = 64
    ro = run_kernel(m, None, 2, threads // 2, [np.zeros(threads, np.uint32), 7])
    clk = np.full(threads, SENTINEL, np.uint64)
    ri = run_kernel(parse(text), None, 2, threads // 2, [np.zeros(threads, np.uint32), 7, clk])
    assert ro.buffers[0].tobytes() == ri.buffers[0].tobytes()
    d = ri.buffers[2]
    assert not (d == SENTINEL).any()  # the guarded ret, the nested exit, the ret and the fall-through
    # four exit paths (tid % 4) take different numbers of instructions
    assert len(set(int(x) for x in d[:4])) == 4
    # the index is the global thread id: the second CTA's threads wrote the second half
    assert (d[threads // 2:] > 0).all()


def test_falling_off_the_end_gets_an_epilogue():
    m = parse(NO_RET_PTX)
    mi = instrument(m)
    ins = list(_instructions(mi.entries[0].body))
    assert ins[-1].opcode == "ret" and ins[-2].full_opcode == "st.global.u64"
    compile_ptx(emit(mi), "sm_89")
    clk = np.full(4, SENTINEL, np.uint64)
    r = run_kernel(mi, None, 1, 4, [np.zeros(1, np.uint32), clk])
    assert not (r.buffers[1] == SENTINEL).any()


def test_no_epilogue_after_a_final_ret():
    m = parse(EXITS_PTX.replace("$L_end:\n}", "$L_end:\n\tret;\n}"))
    mi = instrument(m)
    ins = list(_instructions(mi.entries[0].body))
    assert sum(1 for i in ins if i.opcode in ("ret", "exit")) == 4
    assert sum(1 for i in ins if i.full_opcode == "st.global.u64") == 4


# ---------------------------------------------------------------------------
# refusals, idempotence, the change log
# ---------------------------------------------------------------------------


def test_instrumenting_twice_is_refused():
    spec = SPECS[0]
    once = instrument_ptx(spec.ptx_text(), spec.entry)
    with pytest.raises(AlreadyInstrumented, match="already instrumented"):
        instrument_ptx(once)
    assert is_instrumented(once)


def test_colliding_register_names_are_refused():
    text = NO_RET_PTX.replace(".reg .b32 \t%r<2>;", ".reg .b32 \t%r<2>;\n\t.reg .b64 \t%ptxopt_clkx;")
    with pytest.raises(AlreadyInstrumented, match="%ptxopt_clkx"):
        instrument(parse(text))


def test_refusals():
    with pytest.raises(InstrumentError, match="address_size"):
        instrument(parse(NO_RET_PTX.replace(".address_size 64", ".address_size 32")))
    two = NO_RET_PTX + NO_RET_PTX.split(".address_size 64", 1)[1].replace("noret", "other")
    with pytest.raises(InstrumentError, match="2 kernels"):
        instrument(parse(two))
    with pytest.raises(InstrumentError, match="no kernel named"):
        instrument(parse(NO_RET_PTX), "missing")
    assert is_instrumented(instrument(parse(two), "other"), "other")
    func_exit = NO_RET_PTX.replace(".visible .entry", ".func quit()\n{\n\texit;\n}\n\n.visible .entry")
    with pytest.raises(InstrumentError, match="quit executes exit"):
        instrument(parse(func_exit))


def test_sites_and_copy():
    """A rewrite on a copy that says what it inserted where (that it is no pass
    is tests/project/test_import_contract.py's floor rule: ptxopt.gpu reaches no pass)."""
    m = parse(SPECS[0].ptx_text())
    before = emit(m)
    out, sites = instrument_sites(m)
    assert emit(m) == before  # works on a copy
    assert sites[0] == (0, "clock start at entry")
    assert any(line > 0 and "before ret" in what for line, what in sites)
    with pytest.raises(AlreadyInstrumented):
        instrument_sites(out)
    assert emit(out) == emit(instrument(m))
