"""Disassemble many cubins with one nvdisasm run.

nvdisasm spends about 0.2 s initialising before it reads its input, whatever
the cubin's size: for the gemm_tile corpus that is seven times the time ptxas
takes to compile the kernels.  :func:`disassemble_many` therefore copies the
code sections of several cubins into one ELF file, disassembles that once,
and splits the listing back into one :class:`~ptxopt.toolchain.SassListing`
per cubin -- the same instructions, encodings, control bits and symbols that
:func:`ptxopt.toolchain.disassemble` gives for each cubin alone.  Only label
*names* can differ: nvdisasm leaves holes in its label numbering that depend
on the rest of the file, so a few kernels get ``.L_x_16`` where a lone run
says ``.L_x_17``; the listing stays consistent (operands and label table
agree), its normalised text (:meth:`SassListing.text`, which renames labels)
is identical, and so is every :mod:`ptxopt.sim` estimate
(``tests/evaluate/test_evaluate_disasm.py`` checks both over the corpus).

The merged ELF holds, per input cubin, every ``.text.<fn>`` section, the
symbols defined in them, the matching ``.nv.info.<fn>`` section (nvdisasm
reads the spill/refill annotations from it) and the function's parameter
bank ``.nv.constant0.<fn>`` with its section symbol, all renamed with a
private prefix ``__pxb<i>__`` that is stripped again.  A ``.nv.info.<fn>``
entry that names a symbol by index (``PARAM_CBANK``, the bank's symbol) is
rewritten to the symbol's index in the merged table; before that was done,
the stale index pointed at another cubin's symbol, or past the end of a
small batch's table, and nvdisasm refused the whole batch (a Triton pair:
one run per cubin instead of one run).  ``.L_x_N`` branch labels are
numbered by nvdisasm across the whole file (branch targets first, then the
other labels); they are renumbered per cubin by rank, which is what a lone
disassembly prints.

A cubin goes through the ordinary one-at-a-time path when it cannot be
merged safely: relocations against its code (calls into other sections,
addresses of globals), an ELF this module does not understand, or a header
(ELF flags: architecture, ABI version) different from the rest of its group.
If the batched run fails for any reason, each cubin of the batch is
disassembled alone, so a batch never fails where single runs would succeed.
"""

from __future__ import annotations

import re
import struct
import tempfile
from pathlib import Path
from typing import Sequence

from ptxopt.toolchain import NvdisasmError, SassInstruction, SassListing, disassemble, find_nvdisasm
from ptxopt.toolchain.process import run_tool
from ptxopt.toolchain.sass import _LABEL_RE as _LINE_LABEL_RE  # the listing's own label syntax
from ptxopt.toolchain.sass import _SECTION_RE, NVDISASM_ARGS, parse_nvdisasm

_EH = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SH = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SY = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHT_SYMTAB, _SHT_STRTAB, _SHT_REL, _SHT_RELA, _SHT_NOBITS = 2, 3, 9, 4, 8
#: .nv.info entries: (format byte, attribute byte, 16-bit value or size); format 4 (a sized value)
#: is followed by ``size`` bytes, the others are the 4 bytes alone
_NVINFO_SIZED = 4
#: attributes of a function's .nv.info whose value starts with a symbol index: PARAM_CBANK (the
#: symbol of the function's .nv.constant0 section, then its offset and size)
_NVINFO_SYMBOL_ATTRS = frozenset({0x0A})
#: the .nv.info attribute nvdisasm names ``EIATTR_MAXREG_COUNT``: the ``.maxnreg`` budget ptxas was
#: given (``tests/measure/test_same_code.py`` checks the name against nvdisasm's own listing of the section)
NVINFO_MAXREG_COUNT = 0x1B
_PREFIX = "__pxb{}__"
_PREFIX_RE = re.compile(r"__pxb\d+__")
_LABEL_RE = re.compile(r"(\.L_[A-Za-z]+_)(\d+)\b")

#: Cubins per nvdisasm run (bounds the size of one run's output).
MAX_BATCH = 64


class _Unmergeable(Exception):
    pass


class _Cubin:
    """The parts of one cubin the merged ELF needs."""

    def __init__(self, data: bytes):
        if len(data) < _EH.size or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise _Unmergeable("not a little-endian ELF64 file")
        eh = _EH.unpack_from(data, 0)
        self.header = eh
        shoff, shentsize, shnum, shstrndx = eh[6], eh[11], eh[12], eh[13]
        if shentsize != _SH.size or shnum == 0 or shoff + shnum * shentsize > len(data):
            raise _Unmergeable("unexpected section header table")
        secs = [_SH.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
        names = [self._str(data, secs[shstrndx], s[0]) for s in secs]
        self.signature = (eh[0], eh[1], eh[2], eh[3], eh[7])  # ident, type, machine, version, flags
        symtab = [i for i, s in enumerate(secs) if s[1] == _SHT_SYMTAB]
        if len(symtab) != 1:
            raise _Unmergeable("no single symbol table")
        st = secs[symtab[0]]
        strtab = secs[st[6]]
        self.text = {i: names[i] for i in range(shnum) if names[i].startswith(".text.")}
        if not self.text:
            raise _Unmergeable("no code section")
        for i, s in enumerate(secs):
            if s[1] in (_SHT_REL, _SHT_RELA) and s[7] in self.text:
                raise _Unmergeable(f"relocations against {names[s[7]]}")
        self.sections = {i: (names[i], secs[i], data[secs[i][4]: secs[i][4] + secs[i][5]])
                         for i in self.text}
        # each function's parameter constant bank: the .nv.info.<fn> entry PARAM_CBANK names its
        # section symbol by index, so it travels with the function (and the index is rewritten)
        self.banks = {}  # section index -> (name, header, data)
        for i, t in self.text.items():
            bank = ".nv.constant0." + t[len(".text."):]
            for j in range(shnum):
                if names[j] == bank:
                    sh = secs[j]
                    self.banks[j] = (names[j], sh, b"" if sh[1] == _SHT_NOBITS else data[sh[4]: sh[4] + sh[5]])
        self.info = {}  # text index -> (.nv.info.<fn> header, data)
        for i, s in enumerate(secs):
            if names[i].startswith(".nv.info.") and s[7] in self.text:
                self.info[s[7]] = (s, data[s[4]: s[4] + s[5]])
        self.symbols = []  # (old index, name, info, other, shndx, value, size)
        for k in range(st[5] // _SY.size):
            name_off, info, other, shndx, value, size = _SY.unpack_from(data, st[4] + k * _SY.size)
            if shndx in self.text or shndx in self.banks:
                self.symbols.append((k, self._str(data, strtab, name_off), info, other, shndx, value, size))
        carried = {sym[0] for sym in self.symbols}
        for i, (ish, idata) in self.info.items():
            for old in _symbol_refs(idata):
                if old not in carried:
                    raise _Unmergeable(f".nv.info of {names[i]} names symbol {old}, which is not carried")

    @staticmethod
    def _str(data: bytes, sec, off: int) -> str:
        start = sec[4] + off
        end = data.index(b"\0", start)
        return data[start:end].decode("utf-8", "replace")


def _entries(data: bytes):
    """``(offset, format, attribute, value offset, value size)`` of every .nv.info entry."""
    j = 0
    while j < len(data):
        if j + 4 > len(data):
            raise _Unmergeable("a truncated .nv.info entry")
        fmt, attr, val = data[j], data[j + 1], struct.unpack_from("<H", data, j + 2)[0]
        if fmt == _NVINFO_SIZED:
            if j + 4 + val > len(data):
                raise _Unmergeable("a truncated .nv.info entry")
            yield j, fmt, attr, j + 4, val
            j += 4 + val
        elif fmt in (1, 2, 3):
            yield j, fmt, attr, j + 2, 2
            j += 4
        else:
            raise _Unmergeable(f"unknown .nv.info entry format {fmt}")


nvinfo_entries = _entries


def _symbol_refs(data: bytes) -> list[int]:
    return [struct.unpack_from("<I", data, v)[0] for _, fmt, attr, v, n in _entries(data)
            if fmt == _NVINFO_SIZED and attr in _NVINFO_SYMBOL_ATTRS and n >= 4]


def _remap_info(data: bytes, index) -> bytes:
    out = bytearray(data)
    for _, fmt, attr, v, n in _entries(data):
        if fmt == _NVINFO_SIZED and attr in _NVINFO_SYMBOL_ATTRS and n >= 4:
            struct.pack_into("<I", out, v, index(struct.unpack_from("<I", data, v)[0]))
    return bytes(out)


def merge_cubins(cubins: Sequence[_Cubin]) -> bytes:
    """One ELF with the code sections of every cubin, renamed ``__pxb<i>__``."""
    shstr, strtab = bytearray(b"\0"), bytearray(b"\0")

    def add(tab: bytearray, s: str) -> int:
        off = len(tab)
        tab.extend(s.encode() + b"\0")
        return off

    # sections: 0 null, 1 .shstrtab, 2 .strtab, 3 .symtab, then code, then .nv.info
    texts = []  # (cubin index, old section index, new name)
    for ci, cub in enumerate(cubins):
        for old, name in cub.text.items():
            texts.append((ci, old, ".text." + _PREFIX.format(ci) + name[len(".text."):]))
    banks = []  # (cubin index, old section index, new name)
    for ci, cub in enumerate(cubins):
        for old, (name, _, _) in cub.banks.items():
            banks.append((ci, old, ".nv.constant0." + _PREFIX.format(ci) + name[len(".nv.constant0."):]))
    new_sec = {(ci, old): 4 + j for j, (ci, old, _) in enumerate(texts + banks)}

    locals_, globals_ = [], []
    new_sym: dict[tuple[int, int], tuple[bool, int]] = {}
    for ci, cub in enumerate(cubins):
        for old, name, info, other, shndx, value, size in cub.symbols:
            if name.startswith(".text."):
                name = ".text." + _PREFIX.format(ci) + name[len(".text."):]
            elif name.startswith(".nv.constant0."):
                name = ".nv.constant0." + _PREFIX.format(ci) + name[len(".nv.constant0."):]
            elif name:
                name = _PREFIX.format(ci) + name
            rec = (add(strtab, name) if name else 0, info, other, new_sec[(ci, shndx)], value, size)
            is_local = (info >> 4) == 0
            (locals_ if is_local else globals_).append(rec)
            new_sym[(ci, old)] = (is_local, len(locals_ if is_local else globals_) - 1)
    n_local = 1 + len(locals_)

    def sym_index(ci: int, old: int) -> int:
        is_local, k = new_sym[(ci, old)]
        return 1 + k if is_local else n_local + k

    symdata = _SY.pack(0, 0, 0, 0, 0, 0) + b"".join(_SY.pack(*r) for r in locals_ + globals_)

    sections = [(0, 0, 0, b"", 0, 0, 0, 0)]
    n_shstr, n_str, n_sym = add(shstr, ".shstrtab"), add(shstr, ".strtab"), add(shstr, ".symtab")
    code, infos = [], []
    for j, (ci, old, name) in enumerate(texts):
        _, sh, data = cubins[ci].sections[old]
        info = sh[7]
        fn_sym = info & 0xFFFFFF
        if (ci, fn_sym) in new_sym:
            info = (info & ~0xFFFFFF) | sym_index(ci, fn_sym)
        code.append((add(shstr, name), sh[1], sh[2], data, 3, info, sh[8], sh[9]))
        if old in cubins[ci].info:
            ish, idata = cubins[ci].info[old]
            iname = ".nv.info." + name[len(".text."):]
            idata = _remap_info(idata, lambda k, ci=ci: sym_index(ci, k))
            infos.append((add(shstr, iname), ish[1], ish[2], idata, 3, 4 + j, ish[8], ish[9]))
    for ci, old, name in banks:
        _, sh, data = cubins[ci].banks[old]
        # sh_info of a constant bank names the function it belongs to: its new section
        fn = next((new_sec[(ci, t)] for t, tn in cubins[ci].text.items()
                   if tn[len(".text."):] == cubins[ci].banks[old][0][len(".nv.constant0."):]), 0)
        code.append((add(shstr, name), sh[1], sh[2], data, 0, fn if sh[7] else 0, sh[8], sh[9]))
    sections += [(n_shstr, _SHT_STRTAB, 0, None, 0, 0, 1, 0), (n_str, _SHT_STRTAB, 0, bytes(strtab), 0, 0, 1, 0),
                 (n_sym, _SHT_SYMTAB, 0, symdata, 2, n_local, 8, _SY.size)] + code + infos
    sections[1] = (n_shstr, _SHT_STRTAB, 0, bytes(shstr), 0, 0, 1, 0)

    body = bytearray(_EH.size)
    headers = []
    for name, typ, flags, data, link, info, align, entsize in sections:
        if align > 1:
            body.extend(b"\0" * (-len(body) % align))
        off = len(body) if typ else 0
        body.extend(data)
        headers.append(_SH.pack(name, typ, flags, 0, off, len(data), link, info, align, entsize))
    body.extend(b"\0" * (-len(body) % 8))
    shoff = len(body)
    body.extend(b"".join(headers))
    eh = list(cubins[0].header)
    eh[4] = 0  # e_entry
    eh[5] = 0  # e_phoff: no program headers
    eh[6] = shoff
    eh[10] = 0  # e_phnum
    eh[12] = len(sections)
    eh[13] = 1
    body[: _EH.size] = _EH.pack(*eh)
    return bytes(body)


def _defined_labels(output: str, n: int) -> list[list[str]]:
    """Every label nvdisasm defined in each cubin's sections, including those
    the listing does not keep (a label after a section's last instruction)."""
    out: list[list[str]] = [[] for _ in range(n)]
    current = None
    for line in output.splitlines():
        if m := _SECTION_RE.match(line):
            p = _PREFIX_RE.search(m.group(1))
            current = int(p.group(0)[5:-2]) if p else None
        elif current is not None and (m := _LINE_LABEL_RE.match(line.strip())):
            out[current].append(m.group(1))
    return out


def _split(listing: SassListing, n: int, defined: list[list[str]] | None = None) -> list[SassListing]:
    """Undo the renaming: one listing per merged cubin, labels renumbered per cubin."""
    per: list[list[SassInstruction]] = [[] for _ in range(n)]
    index_of: dict[str, int] = {}  # section -> its cubin (a few sections, thousands of instructions)
    for ins in listing.instructions:
        i = index_of.get(ins.function)
        if i is None:
            m = _PREFIX_RE.search(ins.function)
            if m is None:
                raise NvdisasmError(f"batched listing: section {ins.function!r} has no batch prefix")
            i = index_of[ins.function] = int(m.group(0)[5:-2])
        per[i].append(ins)
    labels_of: list[dict] = [{} for _ in range(n)]
    for (section, offset), names in listing.labels.items():
        m = _PREFIX_RE.search(section)
        if m is not None:
            labels_of[int(m.group(0)[5:-2])][(section, offset)] = names
    out = []
    for i in range(n):
        # nvdisasm numbers branch targets first, then the other labels, across
        # the whole file: within one cubin the order is kept, so the rank of
        # each number among this cubin's labels is what a lone run prints.
        texts = [ins.operands for ins in per[i]] + [lb for names in labels_of[i].values() for lb in names]
        texts += defined[i] if defined else []
        seen: dict[str, set[int]] = {}
        for t in texts:
            for m in _LABEL_RE.finditer(t):
                seen.setdefault(m.group(1), set()).add(int(m.group(2)))
        rank = {kind: {k: r for r, k in enumerate(sorted(nums))} for kind, nums in seen.items()}

        def fix(text: str) -> str:  # (the substring tests only skip texts neither pattern can match)
            if "__pxb" in text:
                text = _PREFIX_RE.sub("", text)
            if rank and ".L_" in text:
                text = _LABEL_RE.sub(lambda m: f"{m.group(1)}{rank[m.group(1)][int(m.group(2))]}", text)
            return text

        names: dict[str, str] = {}  # a section or symbol name without its prefix (a few per cubin)

        def bare(name: str) -> str:
            b = names.get(name)
            if b is None:
                b = names[name] = _PREFIX_RE.sub("", name)
            return b

        instructions = tuple(
            SassInstruction(function=bare(ins.function), offset=ins.offset, guard=ins.guard,
                            opcode=ins.opcode, operands=fix(ins.operands), low=ins.low, high=ins.high,
                            control=ins.control, symbol=bare(ins.symbol))
            for ins in per[i])
        labels = {(_PREFIX_RE.sub("", s), off): tuple(fix(x) for x in names)
                  for (s, off), names in labels_of[i].items()}
        out.append(SassListing(listing.arch, instructions, labels, listing.warnings, ""))
    return out


def disassemble_many(cubins: Sequence[bytes], *, timeout: float = 60.0,
                     batch: int = MAX_BATCH) -> list[SassListing | Exception]:
    """Disassemble every cubin; each entry is a listing or the error for that cubin.

    Equivalent to ``[disassemble(c) for c in cubins]`` (errors returned, not
    raised), with one nvdisasm run per group of up to ``batch`` compatible
    cubins instead of one per cubin.
    """
    out: list[SassListing | Exception | None] = [None] * len(cubins)
    groups: dict[tuple, list[tuple[int, _Cubin]]] = {}
    for i, data in enumerate(cubins):
        try:
            cub = _Cubin(data)
        except (_Unmergeable, ValueError, struct.error):
            out[i] = _single(data, timeout)
            continue
        groups.setdefault(cub.signature, []).append((i, cub))
    for members in groups.values():
        for start in range(0, len(members), max(1, batch)):
            chunk = members[start: start + max(1, batch)]
            if len(chunk) == 1:
                out[chunk[0][0]] = _single(cubins[chunk[0][0]], timeout)
                continue
            try:
                listings = _batched([c for _, c in chunk], timeout)
            except Exception:  # any trouble: the ordinary path decides, per cubin
                listings = [_single(cubins[i], timeout) for i, _ in chunk]
            for (i, _), lst in zip(chunk, listings):
                out[i] = lst
    return out  # type: ignore[return-value]


def _single(data: bytes, timeout: float) -> SassListing | Exception:
    try:
        return disassemble(data, timeout=timeout)
    except Exception as e:  # ToolchainError and friends: reported per cubin
        return e


def _batched(chunk: list[_Cubin], timeout: float) -> list[SassListing]:
    tool = find_nvdisasm()
    merged = merge_cubins(chunk)
    with tempfile.TemporaryDirectory(prefix="ptxopt-nvdisasm-") as tmp:
        Path(tmp, "batch.cubin").write_bytes(merged)
        run = run_tool([tool.path, *NVDISASM_ARGS, "batch.cubin"], timeout=timeout, cwd=tmp)
    if run.returncode != 0:
        raise NvdisasmError(f"batched nvdisasm failed (exit {run.returncode})", run.output)
    listings = _split(parse_nvdisasm(run.output), len(chunk), _defined_labels(run.output, len(chunk)))
    for cub, lst in zip(chunk, listings):  # every instruction of every code section came back
        expect = sum(len(data) // 16 for _, _, data in cub.sections.values())
        if len(lst.instructions) != expect:
            raise NvdisasmError(f"batched listing has {len(lst.instructions)} instructions, expected {expect}")
    return listings


__all__ = ["disassemble_many", "merge_cubins", "MAX_BATCH", "NVINFO_MAXREG_COUNT", "nvinfo_entries"]
