"""Decode the scheduling ("control") bits of a Volta+ SASS instruction.

Since Volta (sm_70), ptxas rather than the hardware resolves most hazards: every
128-bit instruction carries 21 bits telling the warp scheduler how long to
stall after issuing it, which of the six scoreboards (dependency barriers)
its variable-latency result or source reads will release, which scoreboards
to wait for before issuing, and which operands to keep in the reuse cache.
These bits are what makes two instruction streams with the same opcodes run
at different speeds, so ptxopt reads them to compare schedules.

Layout (bit numbers in the 128-bit instruction; the high 64-bit word is the
second one nvdisasm prints, so instruction bit 105 is bit 41 of that word)::

    bits 105-108  stall          4 bits  cycles before the next instruction may issue
    bit  109      yield_flag     1 bit   0 = the scheduler may switch to another warp
    bits 110-112  write_barrier  3 bits  scoreboard released when the result is written (7 = none)
    bits 113-115  read_barrier   3 bits  scoreboard released once sources are read (7 = none)
    bits 116-121  wait_mask      6 bits  bit i set = wait on scoreboard i before issuing
    bits 122-125  reuse          4 bits  operand reuse-cache flags, one per register-source slot

This is the layout CuAssembler, turingas and the maxas control-code notes
describe; the positions live in :data:`ptxopt.toolchain.tables.CONTROL_FIELDS`
and nothing else in the package hard-codes a shift.  It was checked against
ptxas 12.9 and 13.5 output for sm_89 and sm_90: global/shared loads and S2R
set a write barrier that is waited on before the loaded register is first
read, ``.reuse`` operand flags printed by nvdisasm match the reuse bits, and
bits 126-127 are zero (16k+ instructions from the corpus, both ptxas
releases, both architectures).

The reuse bits are per *encoding slot* (A, B, C, ...), which usually follows
the printed operand order among register sources but not always: ``FADD Ra,
Rb`` encodes ``Rb`` in slot C, so ``FADD R0, R0, -R8.reuse`` has reuse = 0b100.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.toolchain.tables import CONTROL_FIELDS, CONTROL_SHIFT_IN_HIGH_WORD, NO_BARRIER, NUM_SCOREBOARDS


@dataclass(frozen=True)
class Control:
    """The decoded control field; all values are the raw bit fields."""

    stall: int
    yield_flag: int
    write_barrier: int
    read_barrier: int
    wait_mask: int
    reuse: int

    @classmethod
    def from_high_word(cls, high: int) -> "Control":
        """Decode from the instruction's high 64-bit word (each distinct field
        decoded once: a listing repeats a few hundred of them over thousands of
        instructions, and a Control is immutable)."""
        code = high >> CONTROL_SHIFT_IN_HIGH_WORD
        if cls is not Control:
            return cls._decode(code)
        c = _DECODED.get(code)
        if c is None:
            if len(_DECODED) >= _MAX_DECODED:
                _DECODED.clear()
            c = _DECODED[code] = cls._decode(code)
        return c

    @classmethod
    def _decode(cls, code: int) -> "Control":
        return cls(**{name: (code >> offset) & ((1 << width) - 1) for name, offset, width in CONTROL_FIELDS})

    def to_high_word_bits(self) -> int:
        """The bits this control field occupies in the high word (inverse of decoding)."""
        code = 0
        for name, offset, width in CONTROL_FIELDS:
            value = getattr(self, name)
            if not 0 <= value < (1 << width):
                raise ValueError(f"{name}={value} does not fit in {width} bits")
            code |= value << offset
        return code << CONTROL_SHIFT_IN_HIGH_WORD

    @property
    def writes(self) -> int | None:
        """Scoreboard released when the result is written, or None."""
        return None if self.write_barrier == NO_BARRIER else self.write_barrier

    @property
    def reads(self) -> int | None:
        """Scoreboard released once the sources are read, or None."""
        return None if self.read_barrier == NO_BARRIER else self.read_barrier

    @property
    def waits_on(self) -> frozenset[int]:
        """Scoreboards this instruction waits for before issuing."""
        return frozenset(i for i in range(NUM_SCOREBOARDS) if self.wait_mask >> i & 1)

    def __str__(self) -> str:
        """Compact text form, e.g. ``B--2---:R-:W1:Y:S04:R-`` (CuAssembler-like)."""
        wait = "".join(str(i) if i in self.waits_on else "-" for i in range(NUM_SCOREBOARDS))
        rd = "-" if self.reads is None else str(self.reads)
        wr = "-" if self.writes is None else str(self.writes)
        yld = "Y" if self.yield_flag == 0 else "-"
        reuse = "".join("R" if self.reuse >> i & 1 else "-" for i in range(4))
        return f"B{wait}:R{rd}:W{wr}:{yld}:S{self.stall:02d}:{reuse}"


#: Decoded control fields by their raw bits (:meth:`Control.from_high_word`), bounded.
_DECODED: dict[int, Control] = {}
_MAX_DECODED = 1 << 16
