"""Start-up cost: the command path imports no heavy module it does not use.

Checked by what ends up in ``sys.modules`` of a fresh interpreter, not by a
timing (the machine is shared, timings are noisy): each module listed in
:data:`HEAVY` costs 30-300 ms to import, and ``ptxopt --help`` or a plain
``ptxopt run`` must not pay for any of them. The import time itself is
printed by ``benchmarks/speed/frontend_speed.py --imports``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: top-level packages that must be imported only where they are used:
#: torch (the learning layer only), numpy (the interpreter, features as arrays),
#: networkx (dependency DAGs), lark (parsing: a PTX file or a pipeline string),
#: rich (tables and progress bars), the SMT solvers, Triton, Ray, CuPy.
HEAVY = ("torch", "numpy", "networkx", "lark", "lark_cython", "rich", "z3", "bitwuzla", "triton", "ray",
         "cupy", "scipy", "sympy", "hypothesis")

_PROBE = """
import json, sys
HEAVY = {heavy!r}
import click
import ptxopt.cli as c
ctx = click.Context(c.cli)
for name in c.cli.list_commands(ctx) if {build_all!r} else ():  # every command built, the plugins' included
    c.cli.get_command(ctx, name)
args = {args!r}
if args:
    try:
        c.cli.main(args=args, prog_name="ptxopt")
    except SystemExit:
        pass
sys.stdout.flush()
print("\\n" + json.dumps(sorted(m for m in HEAVY if m in sys.modules)))
"""


def heavy_modules_after(*args: str, extra: tuple[str, ...] = (), build_all: bool = True) -> list[str]:
    """The :data:`HEAVY` packages (and ``extra`` modules) in ``sys.modules``
    after ``import ptxopt.cli``, building every command (unless not
    ``build_all``: listing the plugins' commands reads the installed entry
    points), and (when given) running ``ptxopt ARGS``."""
    code = _PROBE.format(heavy=HEAVY + extra, args=list(args), build_all=build_all)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_building_the_cli_and_help_import_nothing_heavy():
    # e.g. the parser and the pipeline parser must not import lark when they are imported
    assert heavy_modules_after("--help") == []


def test_run_imports_only_the_parser(tmp_path):
    # passes that need the CFG and alias analysis: lark parses, nothing else loads (networkx and numpy did)
    assert heavy_modules_after("run", "-p", "vec_ld,cache_cg", "--no-compile-check", "corpus:gemm_tile_4x4x4",
                               "-o", str(tmp_path / "out.ptx")) == ["lark", "lark_cython"]


def test_eval_of_a_proved_candidate_imports_only_the_parser():
    # fails on the code before this test: the evaluator's settings named the interpreter's trial
    # budget (numpy on import), the sim backend imported the loop profiler (numpy) to learn that
    # a kernel has no SASS loop, and the result key looked up plugin passes (importlib.metadata)
    # -- the prover settles vec_ld on gemm_tile_4x4x4, so neither the interpreter nor a cache runs
    mods = heavy_modules_after("eval", "--no-cache", "-p", "vec_ld", "corpus:gemm_tile_4x4x4",
                               extra=("importlib.metadata",), build_all=False)
    assert mods == ["lark", "lark_cython"]


def test_probe_sees_a_heavy_import():
    # the probe can fail: a command that uses networkx (dependency DAGs) and rich (its table) shows them
    assert {"networkx", "rich"} <= set(heavy_modules_after("stats", "corpus:gemm_tile_2x2x2"))


def test_public_names_stay_functions_after_their_submodules_are_imported():
    """A lazy public name that is also a submodule's name (``emit``) would be
    shadowed by the module once ``ptxopt.ptx.emit`` is imported anywhere; every
    name in ``__all__`` must still be what the README's ``from ptxopt import``
    gives -- checked in a fresh interpreter, submodules imported first."""
    probe = ("import importlib, pkgutil, ptxopt\n"
             "for name in ptxopt.__all__:\n"
             "    try: importlib.import_module('ptxopt.' + name)\n"
             "    except ImportError: pass\n"
             "import types\n"
             "bad = [n for n in ptxopt.__all__ if isinstance(getattr(ptxopt, n), types.ModuleType)]\n"
             "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
