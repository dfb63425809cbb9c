"""Reading the JSON documents users hand ptxopt: contracts, trajectories,
pipelines files, Triton metadata.

``json.loads`` recurses once per ``[``/``{``: a document nested 100k deep
raises ``RecursionError`` (a crash, not a message), and an editor's UTF-8
byte-order mark makes it refuse a valid file. :func:`loads` strips the mark
and refuses nesting past :data:`MAX_DEPTH` with a
:class:`json.JSONDecodeError` (:class:`NestedTooDeeply`) that points at the
first bracket past the limit -- so every caller that already reports invalid
JSON as bad input (``FILE: invalid JSON: ...``, exit 2) reports this too.
"""

from __future__ import annotations

import json
import re

#: no document ptxopt reads needs more than a handful of levels; 64 leaves room and stays far from the stack
MAX_DEPTH = 64

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class NestedTooDeeply(json.JSONDecodeError):
    """More than :data:`MAX_DEPTH` levels of ``[``/``{``."""


def strip_bom(text: str) -> str:
    return text.removeprefix("\ufeff")


def check_depth(text: str) -> None:
    """Raise :class:`NestedTooDeeply` at the first bracket that opens level ``MAX_DEPTH + 1``."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    blank = _STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)  # brackets in strings do not count
    depth = 0
    for m in _BRACKET.finditer(blank):
        if m.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise NestedTooDeeply(f"nested too deeply (more than {MAX_DEPTH} levels of [ and {{)", text,
                                      m.start())
        else:
            depth -= 1


def loads(data: str | bytes):
    """``json.loads`` with a byte-order mark accepted and the depth checked."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")  # UnicodeDecodeError: the caller's "not UTF-8" (a ValueError)
    text = strip_bom(data)
    check_depth(text)
    return json.loads(text)


__all__ = ["MAX_DEPTH", "NestedTooDeeply", "loads", "check_depth", "strip_bom"]
