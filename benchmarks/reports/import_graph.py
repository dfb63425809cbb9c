"""The module graph of ``ptxopt/`` and ``rl/`` in numbers, to compare two
trees before and after a change to the package layout.

The graph is the import contract's own (:func:`tests.project.test_import_contract.import_graph`:
every import statement, in functions too, relative ones resolved), so these
figures and the contract can never count differently. It prints:

* modules, edges, and every import cycle (the contract allows none);
* the floors: loose top-level modules, re-export stubs, modules on no floor
  and imports going up a floor (the contract's :data:`LAYERS`);
* **layers**: a module's layer is the length of its longest import chain
  (a module importing no other module of the tree is layer 0; the members
  of a cycle share one layer). A module can only import lower layers;
* the **pass manager's** direct imports and everything it imports
  transitively (grouped by package), with its layer;
* the **floor of** ``ptxopt.gpu``: every module outside the package that it
  imports transitively -- string literals naming a module (lazy re-export
  tables, ``python -m``) count, as in the contract's floor rule -- the
  highest layer among them (layers of the import graph proper), and the
  chains by which it reaches the pass layer or above (the contract's
  :data:`FLOORS` roots), if any.

Run (from the repository root)::

    python benchmarks/reports/import_graph.py               # this checkout
    python benchmarks/reports/import_graph.py --rev 91cb30d # a commit, read with git archive
    python benchmarks/reports/import_graph.py --root DIR    # another tree holding ptxopt/ and rl/

``--json FILE`` also writes the figures. A report: exit 0, or 2 when the tree
or revision cannot be read.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

import networkx as nx

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests" / "project"), str(REPO / "tests")]

from test_import_contract import (FLOORS, LAYERS, cycles, floor_violations, import_graph, string_imports,  # noqa: E402
                                  stubs, unplaced, upward_imports)

PASS_MANAGER = "ptxopt.passes.passmanager"
GPU = "ptxopt.gpu"


def _in(mod: str, pkg: str) -> bool:
    return mod == pkg or mod.startswith(pkg + ".")


def layers(g: nx.DiGraph) -> dict[str, int]:
    """Module -> the length of its longest import chain (cycles condensed)."""
    c = nx.condensation(g)
    height: dict[int, int] = {}
    for n in reversed(list(nx.topological_sort(c))):
        height[n] = 1 + max((height[d] for d in c.successors(n)), default=-1)
    return {m: height[c.graph["mapping"][m]] for m in g}


def package_of(mod: str) -> str:
    """``ptxopt.interp.ops.arith`` -> ``ptxopt.interp``; top-level modules stay whole."""
    parts = mod.split(".")
    return ".".join(parts[:2])


def grouped(mods) -> str:
    counts = Counter(package_of(m) for m in mods)
    return ", ".join(f"{p} {n}" if n > 1 else p for p, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def measure(root: Path) -> dict:
    g, _ = import_graph(root)
    static_edges = g.number_of_edges()
    layer = layers(g)
    out: dict = {"modules": g.number_of_nodes(), "edges": static_edges,
                 "cycles": [sorted(c) for c in cycles(g)], "max_layer": max(layer.values(), default=0)}
    own_stubs = stubs(root)
    out["floors"] = {"floors": len(LAYERS), "stubs": sorted(own_stubs),
                     "loose_top_level": sorted(p.stem for p in (root / "ptxopt").glob("*.py")
                                               if p.stem != "__init__" and f"ptxopt.{p.stem}" not in own_stubs),
                     "unplaced": unplaced(g, root), "upward": [f"{a} -> {b}" for a, b in upward_imports(g, root)]}
    if PASS_MANAGER in g:
        pm_all = nx.descendants(g, PASS_MANAGER)
        out["pass_manager"] = {"layer": layer[PASS_MANAGER], "direct": sorted(g.successors(PASS_MANAGER)),
                               "transitive": sorted(pm_all), "importers": len(nx.ancestors(g, PASS_MANAGER))}
    own = [m for m in g if _in(m, GPU)]
    if own:
        gs = g.copy()
        strings = string_imports(root, GPU)
        gs.add_edges_from(strings)
        floor = set().union(*(nx.descendants(gs, m) for m in own)) - set(own)
        gl = layer  # the contract graph's layers: a string import may start another process (python -m)
        top = max((gl[m] for m in floor), default=-1)
        out["gpu"] = {
            "modules": sorted(own),
            "string_imports": [list(e) for e in strings],
            "floor": sorted(floor),
            "floor_top_layer": top,
            "floor_top": sorted(m for m in floor if gl[m] == top),
            "pass_manager_layer": gl.get(PASS_MANAGER),
            "gpu_layers": {m: gl[m] for m in sorted(own)},
            "reaches_upper_layers": [" -> ".join(c) for c in floor_violations(gs, GPU, FLOORS[GPU])],
        }
    return out


def report(d: dict, label: str) -> str:
    lines = [f"== {label}",
             f"modules {d['modules']}, edges {d['edges']}, cycles {len(d['cycles'])}, layers 0..{d['max_layer']}"]
    for c in d["cycles"]:
        lines.append(f"  cycle: {', '.join(c)}")
    fl = d["floors"]
    lines.append(f"floors {fl['floors']} (the contract's LAYERS); loose top-level modules {len(fl['loose_top_level'])} "
                 f"({', '.join(fl['loose_top_level'])}), re-export stubs {len(fl['stubs'])}; modules on no floor "
                 f"{len(fl['unplaced'])}; imports going up a floor {len(fl['upward'])}")
    lines += [f"  up: {u}" for u in fl["upward"]]
    pm = d.get("pass_manager")
    if pm:
        lines.append(f"pass manager (layer {pm['layer']}, imported by {pm['importers']} modules):")
        lines.append(f"  direct imports ({len(pm['direct'])}): {', '.join(pm['direct'])}")
        lines.append(f"  transitive imports ({len(pm['transitive'])}): {grouped(pm['transitive'])}")
    gp = d.get("gpu")
    if gp:
        lines.append(f"floor of {GPU} ({len(gp['modules'])} modules: "
                     + ", ".join(f"{m.rpartition('.')[2] if m != GPU else '__init__'} {n}"
                                 for m, n in gp["gpu_layers"].items()) + "):")
        if gp["string_imports"]:
            lines.append("  string imports: " + ", ".join(f"{a} -> {b}" for a, b in gp["string_imports"]))
        lines.append(f"  imports transitively ({len(gp['floor'])}): {grouped(gp['floor'])}")
        lines.append(f"  highest layer among them: {gp['floor_top_layer']} ({', '.join(gp['floor_top'])}); "
                     f"the pass manager is layer {gp['pass_manager_layer']}")
        if gp["reaches_upper_layers"]:
            lines.append(f"  reaches the pass layer or above ({len(gp['reaches_upper_layers'])} chains):")
            lines += [f"    {c}" for c in gp["reaches_upper_layers"]]
        else:
            lines.append("  reaches the pass layer or above: no (" + ", ".join(FLOORS[GPU]) + ")")
    return "\n".join(lines)


def _tree_at(rev: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(REPO), "archive", rev, "ptxopt", "rl"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(data.stdout)) as tf:
        tf.extractall(into, filter="data")
    return into


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--root", type=Path, help="a tree holding ptxopt/ and rl/ (default: this checkout)")
    src.add_argument("--rev", help="a git revision of this repository (read with git archive)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.rev:
            try:
                root = _tree_at(args.rev, Path(tmp))
            except subprocess.CalledProcessError as e:
                print(f"error: git archive {args.rev}: {e.stderr.decode().strip()}", file=sys.stderr)
                return 2
            label = f"revision {args.rev}"
        else:
            root = (args.root or REPO).resolve()
            label = str(root)
        if not (root / "ptxopt").is_dir():
            print(f"error: {root}: no ptxopt/ package here", file=sys.stderr)
            return 2
        d = measure(root)
    print(report(d, label))
    if args.json:
        args.json.write_text(json.dumps(d, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
