"""``%clock64`` instrumentation: make a kernel report how many SM cycles each
of its threads spent between entry and exit.

This is a *measurement* transform, not one of the optimisation passes: it
changes the kernel's signature, and the GPU harness (:mod:`ptxopt.gpu.session`)
applies it to every candidate (baseline included) right before compiling it
for the device. So it is a plain rewrite of the IR, built on
:mod:`ptxopt.ptx.ir`, :mod:`ptxopt.ptx.parser` and :mod:`ptxopt.ptx.emit` only: no
:class:`~ptxopt.passes.base.Pass`, no pass manager, never an RL action. That
keeps :mod:`ptxopt.gpu` below the pass layer (``tests/project/test_import_contract.py``
pins the floor).

What :func:`instrument` does to the chosen ``.entry``:

* **One extra parameter**, appended after the existing ones so their offsets
  do not move: ``.param .u64 __ptxopt_clk_buf`` -- a global buffer of
  ``u64``, one element per thread of the launch.
* **Start read**: ``mov.u64 %ptxopt_clk0, %clock64;`` is the first
  instruction of the body (after the declarations, before the parameter
  loads and before the first label, so a loop head at the top of the body is
  not re-entered by it). Parameter loads are therefore inside the measured
  interval; ptxas turns them into constant-bank operands, so this costs
  nothing measurable.
* **Every exit**: before each ``ret`` and ``exit`` of the entry body (nested
  ``{ }`` scopes included) the end is read and the difference stored::

      mov.u64  %ptxopt_clk1, %clock64;            // end
      sub.s64  %ptxopt_clk1, %ptxopt_clk1, %ptxopt_clk0;
      ... linear global thread id -> byte offset ...
      st.global.u64 [buf + 8 * gtid], %ptxopt_clk1;

  A guarded exit (``@%p ret;``) gets the same guard on every inserted
  instruction, so the control-flow graph is unchanged (no new labels or
  blocks). If control can fall off the end of the body (the last statement
  is not an unguarded ``ret``/``exit``/``bra``/``trap``), the sequence and a
  ``ret`` are appended.
* **Per thread**: the value at index ``gtid`` (``((ctaid.z * nctaid.y +
  ctaid.y) * nctaid.x + ctaid.x) * threads_per_cta + (tid.z * ntid.y +
  tid.y) * ntid.x + tid.x``) is that thread's ``end - start``; the harness
  takes the maximum over threads per launch (the critical path) and the
  median over launches. The id and address are computed *after* the end
  read, so across the measured interval the only extra live state is the
  64-bit start value (two 32-bit registers).

Names cannot collide with compiler output: registers are
``%ptxopt_clk<5>`` (``.b64``) and ``%ptxopt_clkr<6>`` (``.b32``), the
parameter ``__ptxopt_clk_buf``. A kernel that already uses either name is
refused as "already instrumented" (:class:`AlreadyInstrumented`), which makes
instrumenting twice an error instead of a silent double count.

Refused (:class:`InstrumentError`, raised before anything is changed):
modules whose ``.address_size`` is not 64, a missing or ambiguous entry, and
modules with a ``.func`` that executes ``exit`` (a thread ending there would
never record its duration; the harness would see the sentinel instead).

Caveats, stated once: the clock reads are instructions that ptxas
schedules (``CS2R Rx, SR_CLOCKLO``); independent work may move across them by
a few cycles, and the id/address arithmetic after the end read may be
hoisted above it. That offset is small and alike for every variant of a
kernel, so comparisons stay fair; this is the method whose noise was about
one cycle on sm_89 (BRIEF §3). Not verified on hardware from this
repository yet: ``tests/gpu/test_gpu_device.py`` runs it where a GPU exists. Instrumentation adds one 64-bit live range, so a kernel that sits
exactly at its register budget may spill slightly more than uninstrumented;
the harness reports the uninstrumented kernel's registers and spills and the
instrumented ones separately.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ptxopt.ptx.ir import Block, Decl, Function, Instruction, Label, Module

CLOCK_PARAM = "__ptxopt_clk_buf"
REG64 = "%ptxopt_clk"
REG32 = "%ptxopt_clkr"
REG_PREFIX = "%ptxopt_clk"  # both register families start with this
#: What the harness pre-fills the duration buffer with; a thread whose value
#: is still this after the launch recorded nothing (an uninstrumented exit).
SENTINEL = 0xFFFF_FFFF_FFFF_FFFF

EXIT_OPCODES = ("ret", "exit")
_TERMINATORS = ("ret", "exit", "bra", "brx", "trap")

_TEMPLATE = f"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry ptxopt_clk_template(.param .u64 {CLOCK_PARAM})
{{
	.reg .b64 	{REG64}<5>;
	.reg .b32 	{REG32}<6>;
	mov.u64 	{REG64}0, %clock64;
	mov.u64 	{REG64}1, %clock64;
	sub.s64 	{REG64}1, {REG64}1, {REG64}0;
	ld.param.u64 	{REG64}2, [{CLOCK_PARAM}];
	cvta.to.global.u64 	{REG64}2, {REG64}2;
	mov.u32 	{REG32}0, %ctaid.z;
	mov.u32 	{REG32}1, %nctaid.y;
	mov.u32 	{REG32}2, %ctaid.y;
	mad.lo.u32 	{REG32}0, {REG32}0, {REG32}1, {REG32}2;
	mov.u32 	{REG32}1, %nctaid.x;
	mov.u32 	{REG32}2, %ctaid.x;
	mad.lo.u32 	{REG32}0, {REG32}0, {REG32}1, {REG32}2;
	mov.u32 	{REG32}1, %ntid.x;
	mov.u32 	{REG32}2, %ntid.y;
	mov.u32 	{REG32}3, %ntid.z;
	mul.lo.u32 	{REG32}4, {REG32}1, {REG32}2;
	mul.lo.u32 	{REG32}3, {REG32}4, {REG32}3;
	mov.u32 	{REG32}4, %tid.z;
	mov.u32 	{REG32}5, %tid.y;
	mad.lo.u32 	{REG32}4, {REG32}4, {REG32}2, {REG32}5;
	mov.u32 	{REG32}5, %tid.x;
	mad.lo.u32 	{REG32}4, {REG32}4, {REG32}1, {REG32}5;
	mul.wide.u32 	{REG64}3, {REG32}0, {REG32}3;
	cvt.u64.u32 	{REG64}4, {REG32}4;
	add.s64 	{REG64}3, {REG64}3, {REG64}4;
	shl.b64 	{REG64}3, {REG64}3, 3;
	add.s64 	{REG64}2, {REG64}2, {REG64}3;
	st.global.u64 	[{REG64}2], {REG64}1;
	ret;
}}
"""


class InstrumentError(Exception):
    """The module cannot be instrumented (see the module doc for why); raised
    before anything is changed."""


class AlreadyInstrumented(InstrumentError):
    """The entry already has the clock parameter or ``%ptxopt_clk`` registers."""


@dataclass(frozen=True)
class _Template:
    decls: tuple[Decl, ...]
    param: Decl
    start: Instruction
    exit_seq: tuple[Instruction, ...]
    ret: Instruction


@lru_cache(maxsize=1)
def _template() -> _Template:
    from ptxopt.ptx.parser import parse

    fn = parse(_TEMPLATE, "<ptxopt clock template>").entries[0]
    items = fn.body.items
    decls = tuple(i for i in items if type(i) is Decl)
    ins = [i for i in items if type(i) is Instruction]
    # source positions of the template are meaningless in the kernel
    ins = [replace(i, line=0) for i in ins]
    return _Template(decls, fn.params[0], ins[0], tuple(ins[1:-1]), ins[-1])


def start_sequence() -> tuple[Instruction, ...]:
    """The instruction(s) inserted at kernel entry."""
    return (_template().start,)


def exit_sequence(guard: str | None = None, guard_neg: bool = False) -> tuple[Instruction, ...]:
    """The instructions inserted before an exit, carrying the exit's guard."""
    seq = _template().exit_seq
    if guard is None:
        return seq
    return tuple(replace(i, guard=guard, guard_neg=guard_neg) for i in seq)


def _iter_decls(block: Block):
    for s in block.items:
        if type(s) is Decl:
            yield s
        elif type(s) is Block:
            yield from _iter_decls(s)


def _iter_instructions(block: Block):
    for s in block.items:
        if type(s) is Instruction:
            yield s
        elif type(s) is Block:
            yield from _iter_instructions(s)


def is_instrumented(module: Module | str, entry: str | None = None) -> bool:
    """Whether ``entry`` (default: every entry) carries the clock parameter or
    ``%ptxopt_clk`` registers."""
    if isinstance(module, str):
        from ptxopt.ptx.parser import parse

        module = parse(module)
    fns = module.entries if entry is None else [module.function(entry)]
    return any(_instrumented_why(f) for f in fns)


def _instrumented_why(fn: Function) -> str:
    for p in fn.params or ():
        for it in p.items:
            if it.name == CLOCK_PARAM:
                return f"parameter {CLOCK_PARAM}"
    if fn.body is not None:
        for d in _iter_decls(fn.body):
            for it in d.items:
                if it.name.startswith(REG_PREFIX):
                    return f"register {it.name}"
    return ""


def choose_entry(module: Module, entry: str | None) -> Function:
    try:
        return module.pick_entry(entry, "to instrument")
    except LookupError as e:
        raise InstrumentError(str(e)) from None


def _check(module: Module, entry: str | None) -> Function:
    if module.address_size != 64:
        raise InstrumentError(f".address_size {module.address_size or 'missing (32)'}: the clock buffer "
                              "needs 64-bit addresses")
    fn = choose_entry(module, entry)
    why = _instrumented_why(fn)
    if why:
        raise AlreadyInstrumented(f"{fn.name} is already instrumented ({why})")
    for f in module.functions:
        if f.kind == ".func" and f.body is not None:
            if any(i.opcode == "exit" for i in _iter_instructions(f.body)):
                raise InstrumentError(f".func {f.name} executes exit: a thread ending there would not "
                                      "record its duration")
    return fn


#: What the rewrite did at one place: (source line of the exit, or 0 for the
#: entry and the appended epilogue; what was inserted).
Site = tuple[int, str]


def _rewrite(block: Block, sites: list[Site]) -> Block:
    out: list = []
    for s in block.items:
        t = type(s)
        if t is Block:
            out.append(_rewrite(s, sites))
            continue
        if t is Instruction and s.opcode in EXIT_OPCODES:
            out.extend(exit_sequence(s.guard, s.guard_neg))
            g = "" if s.guard is None else ("@!" if s.guard_neg else "@") + s.guard + " "
            sites.append((s.line, f"clock end + store before {g}{s.full_opcode}"))
        out.append(s)
    return Block(out, block.line)


def _falls_off_end(body: Block) -> bool:
    last = None
    for s in body.items:
        if type(s) in (Instruction, Label, Block):
            last = s
    if last is None:
        return True
    if type(last) is Instruction:
        return not (last.guard is None and last.opcode in _TERMINATORS)
    return True  # a label (branch target) or a nested scope that may fall through


def instrument_function(fn: Function) -> list[Site]:
    """Rewrite ``fn`` (an entry, already checked) in place; returns what was
    inserted where."""
    tpl = _template()
    sites: list[Site] = []
    body = _rewrite(fn.body, sites)
    items = body.items
    first = next((i for i, s in enumerate(items) if type(s) in (Instruction, Label, Block)), len(items))
    tail_epilogue = _falls_off_end(fn.body)
    items[first:first] = list(start_sequence())
    sites.insert(0, (0, "clock start at entry"))
    items[0:0] = list(tpl.decls)
    if tail_epilogue:
        items.extend(exit_sequence())
        items.append(tpl.ret)
        sites.append((0, "clock end + store + ret appended (control can reach the end of the body)"))
    fn.body = body
    fn.params = tuple(fn.params or ()) + (tpl.param,)
    return sites


def instrument_sites(module: Module, entry: str | None = None) -> tuple[Module, list[Site]]:
    """A copy of ``module`` with ``entry`` instrumented, and what was inserted
    where; ``module`` is untouched (also when it is refused)."""
    out = module.copy()
    return out, instrument_function(_check(out, entry))


def instrument(module: Module, entry: str | None = None) -> Module:
    """A copy of ``module`` with ``entry`` instrumented (``module`` untouched)."""
    return instrument_sites(module, entry)[0]


def instrument_ptx(ptx_text: str, entry: str | None = None) -> str:
    """PTX text in, instrumented PTX text out."""
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse

    return emit(instrument(parse(ptx_text, "<candidate>"), entry))


def exit_sites(module: Module, entry: str | None = None) -> int:
    """How many ``ret``/``exit`` instructions the entry body holds."""
    fn = choose_entry(module, entry)
    return sum(1 for i in _iter_instructions(fn.body) if i.opcode in EXIT_OPCODES)


__all__ = [
    "CLOCK_PARAM", "SENTINEL", "InstrumentError", "AlreadyInstrumented",
    "instrument", "instrument_sites", "instrument_ptx", "is_instrumented", "exit_sequence", "start_sequence", "exit_sites",
]
