"""Disassemble cubins with nvdisasm into structured Volta+ SASS.

ptxopt judges a PTX rewrite by the SASS ptxas makes of it, so it needs the
instruction stream as data: :func:`disassemble` runs ``nvdisasm -c -hex``
(code sections only, with each instruction's two 64-bit encoding words) and
parses every instruction into a :class:`SassInstruction` -- enclosing
function, byte offset, guard predicate, opcode with its dot modifiers,
operand text, the raw words, and the decoded scheduling bits
(:class:`~ptxopt.toolchain.control_bits.Control`; the bit layout is documented in
:mod:`ptxopt.toolchain.control_bits` and tabulated in
:data:`ptxopt.toolchain.tables.CONTROL_FIELDS`: stall 4 bits, yield 1,
write barrier 3, read barrier 3, wait mask 6, reuse 4, starting at bit 105).

:func:`sass_text` gives a normalised listing for "is the SASS identical?"
checks: no addresses, encodings or directives, functions sorted by name,
only the labels instructions refer to, renumbered per function.  Two cubins with the
same instructions produce the same text even if section order differs.

Only Volta and newer (128-bit instructions, sm_70+) are supported; the
nvdisasm shipped in the CUDA 13 wheels decodes sm_75 and newer.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator

from ptxopt.toolchain.control_bits import Control
from .errors import NvdisasmError
from .locate import Tool, find_nvdisasm
from .process import run_tool

# -ndf: no dataflow analysis. It adds nothing we read (the same instructions,
# control words and labels; only column padding moves) and costs ~40 ms of
# nvdisasm's ~200 ms start-up on every run.
NVDISASM_ARGS = ("-c", "-hex", "-ndf")

_TARGET_RE = re.compile(r"^\s*\.target\s+(\S+)")
# Cubins in the pre-CUDA-13 ELF layout have no ".target" line; the arch is in the flags.
_HEADERFLAGS_RE = re.compile(r'^\s*\.headerflags\s+@"(?P<flags>[^"]*)"')
_FLAG_SM_RE = re.compile(r"\bEF_CUDA_SM(\d+)\b")
_WARNING_RE = re.compile(r"^nvdisasm (?:warning|info)\s*:\s*(?P<message>.*)$")
_SECTION_RE = re.compile(r'^\s*\.section\s+\.text\.([^,\s]+)\s*,')
_FUNCTION_TYPE_RE = re.compile(r"^\s*\.type\s+([^,\s]+)\s*,\s*@function")
_LABEL_RE = re.compile(r"^([^\s/:][^\s:]*):\s*$")
_INSTRUCTION_RE = re.compile(
    r"^\s*/\*(?P<offset>[0-9a-fA-F]+)\*/\s*(?P<text>.*?)\s*/\*\s*(?P<low>0x[0-9a-fA-F]+)\s*\*/\s*$"
)
_HIGH_WORD_RE = re.compile(r"^\s*/\*\s*(?P<high>0x[0-9a-fA-F]+)\s*\*/\s*$")
_GUARD_RE = re.compile(r"^(?P<guard>@!?U?P(?:T|\d+))\s+(?P<rest>.*)$")
# nvdisasm's generated labels (".L_x_12"), wherever an operand mentions them:
# branch targets "`(.L_x_1)" and return addresses "32@lo((caller + .L_x_0@srel))".
_LOCAL_LABEL_RE = re.compile(r"(?<![\w$.])\.L\w+")


@dataclass(frozen=True)
class SassInstruction:
    """One SASS instruction as nvdisasm printed and encoded it."""

    function: str  # the kernel / device function whose code section holds it
    offset: int  # byte offset inside that section
    guard: str | None  # guard predicate without the "@", e.g. "P0", "!PT", "!UP1"
    opcode: str  # with dot modifiers, e.g. "ISETP.GE.AND", "LDG.E.CONSTANT"
    operands: str  # operand text as printed, e.g. "R7, R2, UR6, R7"
    low: int  # first (low) 64-bit encoding word
    high: int  # second (high) 64-bit encoding word; holds the control bits
    control: Control = field(compare=False)
    symbol: str = ""  # innermost function symbol (differs for inlined-call subroutines)

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def modifiers(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def encoding(self) -> int:
        """The whole 128-bit instruction word."""
        return self.high << 64 | self.low

    @property
    def operand_list(self) -> tuple[str, ...]:
        """Operands split at top-level commas (``[R2.64+0x4]`` stays one operand)."""
        return _split_operands(self.operands)

    @property
    def text(self) -> str:
        """Normalised instruction text, e.g. ``@!P0 BRA `(.L_x_1)``."""
        guard = f"@{self.guard} " if self.guard else ""
        return f"{guard}{self.opcode} {self.operands}".rstrip()


@dataclass(frozen=True)
class SassListing:
    """A disassembled cubin: every instruction in code-section order."""

    arch: str  # e.g. "sm_89"
    instructions: tuple[SassInstruction, ...]
    labels: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()  # nvdisasm's warnings (e.g. about old-format cubins)
    raw: str = field(default="", repr=False)  # nvdisasm's output, for debugging

    @property
    def count(self) -> int:
        return len(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def __iter__(self) -> Iterator[SassInstruction]:
        return iter(self.instructions)

    @cached_property
    def functions(self) -> dict[str, tuple[SassInstruction, ...]]:
        """Instructions per function (code section), in listing order."""
        out: dict[str, list[SassInstruction]] = {}
        for ins in self.instructions:
            out.setdefault(ins.function, []).append(ins)
        return {name: tuple(lst) for name, lst in out.items()}

    def opcode_counts(self, function: str | None = None) -> Counter[str]:
        """How often each base opcode (``FFMA``, ``LDG`` ...) occurs."""
        source = self.instructions if function is None else self.functions.get(function, ())
        return Counter(ins.base_opcode for ins in source)

    def text(self, *, control: bool = False) -> str:
        """Normalised listing; ``control=True`` also prints each instruction's control bits."""
        lines = [f".target {self.arch}"]
        for name in sorted(self.functions):
            body = self.functions[name]
            rename = self._local_label_names(name)
            lines.append(f"{name}:")
            symbol = name
            for ins in body:
                if ins.symbol and ins.symbol != symbol:
                    symbol = ins.symbol
                    lines.append(f"{symbol}:")
                lines.extend(f"{rename[label]}:" for label in self.labels.get((name, ins.offset), ()) if label in rename)
                prefix = f"[{ins.control}] " if control else ""
                text = _LOCAL_LABEL_RE.sub(lambda m: rename.get(m.group(0), m.group(0)), ins.text)
                lines.append(f"    {prefix}{text}")
        return "\n".join(lines) + "\n"

    def _local_label_names(self, function: str) -> dict[str, str]:
        """Branch-target labels of ``function`` renamed ``.L0``, ``.L1`` ... in code order.

        nvdisasm numbers ``.L_x_N`` across the whole cubin, so the same code
        gets different label names when another kernel precedes it.
        """
        body = self.functions[function]
        referenced = {ref for ins in body for ref in _LOCAL_LABEL_RE.findall(ins.operands)}
        rename: dict[str, str] = {}
        for ins in body:
            for label in self.labels.get((function, ins.offset), ()):
                if label in referenced and label not in rename:
                    rename[label] = f".L{len(rename)}"
        return rename


def disassemble(cubin: bytes, *, timeout: float = 60.0, nvdisasm: Tool | None = None) -> SassListing:
    """Run nvdisasm on ``cubin`` and parse the result."""
    if not cubin:
        raise NvdisasmError("cannot disassemble an empty cubin")
    tool = nvdisasm or find_nvdisasm()
    with tempfile.TemporaryDirectory(prefix="ptxopt-nvdisasm-") as tmp:
        Path(tmp, "kernel.cubin").write_bytes(cubin)
        run = run_tool([tool.path, *NVDISASM_ARGS, "kernel.cubin"], timeout=timeout, cwd=tmp)
    if run.returncode != 0:
        detail = run.output.strip().splitlines()
        hint = ""
        if re.search(r"\bSM\d+\b.*\b(deprecated|not supported|unsupported)", run.output, re.IGNORECASE):
            hint = ("; this nvdisasm decodes sm_75 and newer only: compile for a newer target "
                    "(e.g. --arch sm_89) to get an estimate")
        raise NvdisasmError(
            f"nvdisasm {tool.version} failed: {detail[0] if detail else f'exit status {run.returncode}'}{hint}",
            run.output,
        )
    return parse_nvdisasm(run.output)


def sass_text(cubin: bytes, *, control: bool = False, timeout: float = 60.0) -> str:
    """Normalised SASS listing of ``cubin`` (see :meth:`SassListing.text`)."""
    return disassemble(cubin, timeout=timeout).text(control=control)


def parse_nvdisasm(output: str) -> SassListing:
    """Parse ``nvdisasm -c -hex`` output (exposed for testing on saved listings)."""
    arch = ""
    warnings: list[str] = []
    section = ""
    symbol = ""
    function_symbols: set[str] = set()
    pending_labels: list[str] = []
    labels: dict[tuple[str, int], tuple[str, ...]] = {}
    instructions: list[SassInstruction] = []
    pending: tuple[int, str, int] | None = None  # (offset, text, low) waiting for its high word

    for lineno, line in enumerate(output.splitlines(), 1):
        if pending is not None:
            m = _HIGH_WORD_RE.match(line)
            if m is None:
                raise NvdisasmError(
                    f"line {lineno} of the nvdisasm listing: expected the second encoding word of "
                    f"{pending[1]!r}; only 128-bit (sm_70+) instructions are supported",
                    output,
                )
            offset, text, low = pending
            instructions.append(_make_instruction(section, symbol or section, offset, text, low, int(m["high"], 16)))
            if pending_labels:
                labels[(section, offset)] = tuple(pending_labels)
                pending_labels = []
            pending = None
            continue
        if m := _INSTRUCTION_RE.match(line):
            pending = (int(m["offset"], 16), m["text"], int(m["low"], 16))
        elif m := _SECTION_RE.match(line):
            section, symbol, pending_labels = m.group(1), "", []
        elif m := _FUNCTION_TYPE_RE.match(line):
            function_symbols.add(m.group(1))
        elif m := _LABEL_RE.match(line.strip()):
            label = m.group(1)
            if label in function_symbols:
                symbol = label
            elif not label.startswith(".text."):
                pending_labels.append(label)
        elif m := _TARGET_RE.match(line):
            arch = m.group(1)
        elif not arch and (m := _HEADERFLAGS_RE.match(line)):
            arch = _arch_from_flags(m["flags"])
        elif m := _WARNING_RE.match(line.strip()):
            warnings.append(m["message"])
    if pending is not None:
        raise NvdisasmError("the nvdisasm listing ends in the middle of an instruction", output)
    return SassListing(arch, tuple(instructions), labels, tuple(warnings), output)


def _arch_from_flags(flags: str) -> str:
    m = _FLAG_SM_RE.search(flags)  # the real SM comes before EF_CUDA_VIRTUAL_SM(...)
    if m is None:
        return ""
    suffix = "a" if "EF_CUDA_ACCELERATORS" in flags.split() else ""
    return f"sm_{m.group(1)}{suffix}"


def _make_instruction(function: str, symbol: str, offset: int, text: str, low: int, high: int) -> SassInstruction:
    body = text.strip().rstrip(";").strip()
    guard = None
    if m := _GUARD_RE.match(body):
        guard, body = m["guard"][1:], m["rest"]
    opcode, _, operands = body.partition(" ")
    return SassInstruction(
        function=function,
        offset=offset,
        guard=guard,
        opcode=opcode,
        operands=" ".join(operands.split()),
        low=low,
        high=high,
        control=Control.from_high_word(high),
        symbol=symbol,
    )


def _split_operands(text: str) -> tuple[str, ...]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return tuple(parts)
