"""Do two cubins hold the same machine code?

The Triton hook estimates Triton's cubin and the rewrite's before it uses the
rewrite (:func:`ptxopt.api.optimize`); the estimate starts with an nvdisasm
run (~0.2 s of CPU whatever the cubin, more than Triton's whole compile of a
small kernel). Often the rewrite changes nothing ptxas emits: a register
budget (``.maxnreg 128``) above what the kernel uses, a reordering ptxas
schedules away. Then the two cubins still differ as files -- the debug line
tables name other PTX lines, the ``.nv.info`` section records the budget,
section offsets move -- but the GPU runs the same instructions with the same
resources, so both run at the same speed and there is nothing to estimate.

:func:`same_code` decides that from the ELF structure alone (no SASS is
decoded): the header (class, machine, ABI, architecture flags), the same
sections in the same order with the same type, flags, link, info, alignment,
entry size and bytes -- code, constant banks, shared-memory and local
reservations, symbol and relocation tables, string tables -- except

* debug sections (``.debug_*``, ``.nv_debug_*``): line tables and the PTX
  text, which no instruction reads;
* in a function's ``.nv.info.<fn>``, the ``MAXREG_COUNT`` attribute
  (:data:`ptxopt.measure.disasm.NVINFO_MAXREG_COUNT`): the ``.maxnreg``
  budget ptxas was given, which shows in the code and in the register count
  ptxas reports (compared separately by the caller) and in nothing else;
  every other attribute (exit offsets, parameter bank, thread-count limits,
  ...) must be equal;
* section offsets in the file (where a section lies, not what it holds).

Anything it does not understand (not an ELF64 cubin, a truncated table) is
"not the same": the estimate then runs as before.
"""

from __future__ import annotations

import struct

_EH = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SH = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SHT_NOBITS = 8
#: sections no instruction reads: DWARF line and frame tables, NVIDIA's SASS line table and PTX copy
_DEBUG_PREFIXES = (".debug_", ".nv_debug_")


def _layout(data: bytes):
    """``[(name, type, flags, link, info, align, entsize, contents)]`` and the header fields
    that are not file offsets; raises ValueError/struct.error on anything unexpected."""
    if len(data) < _EH.size or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    eh = _EH.unpack_from(data, 0)
    shoff, shentsize, shnum, shstrndx = eh[6], eh[11], eh[12], eh[13]
    if shentsize != _SH.size or shnum == 0 or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        raise ValueError("unexpected section header table")
    secs = [_SH.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx]

    def name(off: int) -> str:
        start = strtab[4] + off
        return data[start:data.index(b"\0", start)].decode("utf-8", "replace")

    out = []
    for s in secs:
        nm = name(s[0])
        body = b"" if s[1] == _SHT_NOBITS else data[s[4]: s[4] + s[5]]
        if s[1] != _SHT_NOBITS and len(body) != s[5]:
            raise ValueError(f"section {nm} runs past the end of the file")
        # (name, type, flags, address, size for NOBITS, link, info, align, entsize, contents)
        out.append((nm, s[1], s[2], s[3], s[5], s[6], s[7], s[8], s[9], body))
    # ident, type, machine, version, entry, flags, header size, phentsize, phnum, section count, shstrndx
    header = (eh[0], eh[1], eh[2], eh[3], eh[4], eh[7], eh[8], eh[10], eh[11], eh[12], eh[13])
    return header, out


def _info_without_budget(body: bytes) -> tuple:
    """A ``.nv.info.<fn>`` section's entries, the MAXREG_COUNT attribute left out."""
    from ptxopt.measure.disasm import NVINFO_MAXREG_COUNT, nvinfo_entries

    return tuple((fmt, attr, body[v: v + n]) for _, fmt, attr, v, n in nvinfo_entries(body)
                 if attr != NVINFO_MAXREG_COUNT)


def _code_view(data: bytes):
    header, secs = _layout(data)
    view = []
    for nm, *rest, body in secs:
        if nm.startswith(_DEBUG_PREFIXES):
            continue  # its position in the section table still counts: the rest must line up
        if nm.startswith(".nv.info."):
            view.append((nm, *rest, _info_without_budget(body)))
        else:
            view.append((nm, *rest, body))
    names = [s[0] for s in secs]  # section indices (symbols, links) must mean the same sections
    return header, names, view


def same_code(a: bytes, b: bytes) -> bool:
    """True when cubins ``a`` and ``b`` hold the same machine code, constant
    banks, symbols and launch attributes (module doc: debug sections, the
    ``.maxnreg`` attribute and file offsets aside). False when they differ in
    anything else or either cannot be read."""
    if a == b:
        return True
    try:
        return _code_view(a) == _code_view(b)
    except Exception:  # a file this reader does not understand: not known to be the same
        return False


__all__ = ["same_code"]
