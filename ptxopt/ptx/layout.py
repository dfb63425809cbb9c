"""Print a transformed module in its source's own layout: a minimal diff.

The canonical printer (:mod:`ptxopt.ptx.emit`) normalises layout: spacing, blank
lines, where comments sit. Written back over a build's PTX that churns every
line and hides what a pass changed. :func:`preserve_layout` instead keeps
each source line byte for byte (comments, spacing, ``.loc``, blank lines)
wherever the transformed module has the same statement there, and prints only
the lines that differ in canonical form.

How: the source's lines and the canonical print of the transformed module
are matched line by line (:class:`difflib.SequenceMatcher`) on a key that
ignores whitespace -- the printer changes layout only, never a token, so a
line that matches is the same statement; matched lines come from the source,
the rest from the canonical print. A changed region whose lines hold the
same tokens on both sides (statements split or joined over lines) is the
source's too. Blank lines take no part in the matching: the source's stay
where they are, the printer's are left out. The result is trusted only if it reads back as the module:
``emit(parse(out)) == emit(module)``; otherwise the canonical text is
returned (``Layout.kept`` False says so), never a near miss.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ptxopt.ptx.emit import emit
from ptxopt.ptx.ir import Module


@dataclass(frozen=True)
class Layout:
    """The text to write and how it was made."""

    text: str
    #: True: the source's layout was kept (minimal diff); False: canonical text
    kept: bool
    #: source lines replaced or removed, and lines inserted (what a diff shows)
    lines_removed: int = 0
    lines_added: int = 0


def _key(line: str) -> str:
    return "".join(line.split())


def preserve_layout(source: str, module: Module, *, filename: str = "<output>") -> Layout:
    """``module`` (parsed from ``source`` and transformed) printed in ``source``'s layout."""
    from ptxopt.ptx.parser import parse

    canon = emit(module)
    if source == canon:
        return Layout(source, True)
    src = source.splitlines(keepends=True)
    new = canon.splitlines(keepends=True)
    if src and not src[-1].endswith(("\n", "\r")):
        src[-1] += "\n"  # a last line without newline still matches; the output ends with one
    # blank lines decide nothing (PTX is free-form): the source's stay where they are, the printer's are dropped
    keep = [n for n, line in enumerate(src) if line.strip()]
    printed = [line for line in new if line.strip()]
    sm = difflib.SequenceMatcher(None, [_key(src[n]) for n in keep], [_key(line) for line in printed],
                                 autojunk=False)
    instead: dict[int, list[str]] = {}  # source line -> the lines printed in its place
    before: dict[int, list[str]] = {}  # source line -> lines inserted before it (len(src): at the end)
    removed = added = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if "".join(_key(src[n]) for n in keep[i1:i2]) == "".join(_key(line) for line in printed[j1:j2]):
            continue  # the same statements, laid out over other lines (``{add.f16x2 ...;``)
        lines = printed[j1:j2]
        removed += i2 - i1
        added += j2 - j1
        if i1 == i2:
            before.setdefault(keep[i1] if i1 < len(keep) else len(src), []).extend(lines)
            continue
        instead[keep[i1]] = lines
        for n in keep[i1 + 1:i2]:
            instead[n] = []
    out: list[str] = []
    for n, line in enumerate(src):
        out += before.get(n, ())
        out += instead.get(n, (line,))
    out += before.get(len(src), ())
    text = "".join(out)
    try:
        same = emit(parse(text, filename)) == canon
    except Exception:  # noqa: BLE001  (any failure to read it back: use the canonical text)
        same = False
    if not same:
        return Layout(canon, False)
    return Layout(text, True, removed, added)


def unified_diff(source: str, text: str, name: str) -> str:
    """``diff -u`` of the source and the output (``a/NAME``, ``b/NAME``)."""
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), text.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))


__all__ = ["Layout", "preserve_layout", "unified_diff"]
