"""Every module path the README or ``examples/`` names is importable, and so
is every old path of a module that moved into a package.

Modules moved into packages (``ptxopt.ir`` is ``ptxopt.ptx.ir``) keep a
re-export stub at the old path (each old path the README or ``examples/``
named when they moved), which puts the moved module itself in
``sys.modules``: ``import ptxopt.ir`` gives the very same module object, so
a monkeypatch through either name is seen by both. Each dotted name
``ptxopt.a.b.c`` found in the docs is resolved as a module prefix plus
attributes; each file path ``ptxopt/a/b.py`` as the module ``ptxopt.a.b``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUB_MARK = "# re-export stub written by the package codemod"


def doc_texts() -> str:
    # The examples as written: not the bytecode Python caches beside them when they run (a .pyc holds
    # "ptxopt.cli" followed by other bytes, read here as the module "ptxopt.clir").
    files = [ROOT / "README.md"] + sorted(p for p in (ROOT / "examples").rglob("*")
                                          if p.is_file() and "__pycache__" not in p.parts)
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


def named_paths(text: str) -> set[str]:
    """Dotted names (``ptxopt.x.y``, ``from ptxopt.x import y``) and file paths (``ptxopt/x.py``) in ``text``."""
    out = {m.rstrip(".") for m in re.findall(r"(?<![\w./-])ptxopt(?:\.\w+)+", text)}
    out |= {"ptxopt." + p.replace("/", ".") for p in re.findall(r"(?<![\w/])ptxopt/([\w/]+)\.py\b", text)}
    for base, names in re.findall(r"from\s+(ptxopt(?:\.\w+)*)\s+import\s+([\w ,]+)", text):
        out |= {f"{base}.{n.strip().split(' as ')[0]}" for n in names.split(",") if n.strip()}
    return out


def _is_module(dotted: str) -> bool:
    p = ROOT.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def resolve(dotted: str):
    """Import the longest module prefix of ``dotted``, then take the rest as attributes."""
    parts = dotted.split(".")
    k = max(i for i in range(1, len(parts) + 1) if _is_module(".".join(parts[:i])))
    obj = importlib.import_module(".".join(parts[:k]))
    for attr in parts[k:]:
        obj = getattr(obj, attr)
    return obj


NAMES = sorted(named_paths(doc_texts()))
STUBS = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "ptxopt").rglob("*.py")
               if STUB_MARK in p.read_text(encoding="utf-8"))


def test_the_docs_name_modules_at_all():
    assert len(NAMES) > 20 and {"ptxopt.passmanager", "ptxopt.ptx.opcodes"} <= set(NAMES) and len(STUBS) >= 8


@pytest.mark.parametrize("dotted", NAMES)
def test_every_path_the_docs_name_resolves(dotted):
    assert resolve(dotted) is not None


@pytest.mark.parametrize("old", STUBS)
def test_a_stub_is_the_moved_module_itself(old):
    text = (ROOT.joinpath(*old.split(".")).with_suffix(".py")).read_text(encoding="utf-8")
    new = re.search(r"from (\S+) import (\w+) as _moved", text)
    moved = importlib.import_module(f"{new.group(1)}.{new.group(2)}")
    assert importlib.import_module(old) is moved


def test_the_resolver_can_fail():
    with pytest.raises(AttributeError):
        resolve("ptxopt.passes.registry.no_such_name")
    with pytest.raises(ValueError):
        resolve("nothing.here")
