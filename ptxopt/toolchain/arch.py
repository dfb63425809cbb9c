"""Which architecture to compile a module for: its own ``.target`` unless the
user says otherwise.

A kernel written for ``sm_90a`` (wgmma, setmaxnreg) does not assemble for
``sm_89``; compiling it for a default architecture makes ptxas reject the
*original*, and a pass would be blamed for it. So every command that compiles
(``run --verify-each``, ``eval``, ``search``, ``train``, ``optimize``) asks
:func:`resolve_arch`: an explicit ``--arch`` wins, else the module's first
``.target`` entry that names a real GPU (``sm_XX``, ``sm_XXa``, ``sm_XXf``),
else :data:`DEFAULT_ARCH`.
"""

from __future__ import annotations

import re

DEFAULT_ARCH = "sm_89"

_SM_RE = re.compile(r"^sm_\d+[a-z]?$")
_TARGET_LINE = re.compile(r"^\s*\.target\s+([^\n;/]+)", re.MULTILINE)


def target_arch(source) -> str | None:
    """The ``sm_*`` architecture named by ``.target`` in ``source`` (a parsed
    module or PTX text), or None when there is none (``.target`` absent, or
    only ``compute_*``/``texmode_*`` entries)."""
    if isinstance(source, str):
        m = _TARGET_LINE.search(source)
        entries = [t.strip() for t in m.group(1).split(",")] if m else []
    else:
        entries = list(getattr(source, "target", ()) or ())
    for t in entries:
        if _SM_RE.match(t):
            return t
    return None


def resolve_arch(source, override: str | None = None) -> str:
    """``override`` when given, else :func:`target_arch` of ``source``, else
    :data:`DEFAULT_ARCH`."""
    if override:
        return override
    return target_arch(source) or DEFAULT_ARCH
