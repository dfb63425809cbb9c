"""A repository script (``benchmarks/``, ``tools/``) loaded as a module for a test, its ``main`` not run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(rel: str) -> ModuleType:
    """The script at ``rel`` (relative to the repository root) as a fresh module, ``<stem>_under_test``."""
    path = ROOT / rel
    spec = importlib.util.spec_from_file_location(f"{path.stem}_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
