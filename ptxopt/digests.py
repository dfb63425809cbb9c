"""Digests of ptxopt's own source code, for cache keys.

A cached evaluation is only valid for the code that produced it, so the
evaluator's keys (:mod:`ptxopt.evaluate.keys`), the ``sim`` backend's
version (:mod:`ptxopt.measure.sim`), the Triton hook and the search's move
memo fold in a hash of the source files that decide their results.  The
lists of those files live here, in one leaf module that imports nothing of
ptxopt, so every one of those users can import it without an import cycle;
``tests/test_measure.py`` checks that each module of the evaluation
stack is covered by one of them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_ROOT = Path(__file__).resolve().parent

#: What decides a result once the printed PTX is fixed (the backend adds its own version).
EVALUATOR_SOURCES = ("evaluate", "measure", "interp", "equivalence",
                     "corpus.py", "toolchain", "digests.py")

#: What decides the printed PTX for a (kernel, pipeline).
FRONT_SOURCES = ("passes", "analysis", "pipeline.py", "passmanager.py", "emit.py", "parser.py", "ir.py", "grammar",
                 "opcodes.py", "operand_facts.py", "identity_memo.py", "constexpr.py", "comments.py", "inputs.py",
                 "ptxwords.py")


def source_digest(*packages_or_files: str) -> str:
    """sha256 (16 hex digits) of the source files of ptxopt subpackages/modules
    (paths relative to the ``ptxopt`` package: ``"sim"``, ``"verify.py"``)."""
    h = hashlib.sha256()
    for name in packages_or_files:
        p = _ROOT / name
        files = sorted(p.rglob("*.py")) + sorted(p.rglob("*.lark")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(_ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


_CODE: dict = {}


def code_digests() -> dict:
    """Digests of ptxopt's own code: ``front`` decides the printed PTX of a
    (kernel, pipeline), ``evaluator`` the result once the PTX is fixed."""
    if not _CODE:
        _CODE.update(evaluator=source_digest(*EVALUATOR_SOURCES), front=source_digest(*FRONT_SOURCES))
    return dict(_CODE)


__all__ = ["source_digest", "code_digests", "EVALUATOR_SOURCES", "FRONT_SOURCES"]
