"""Every pass's identity, pinned: kinds, names, aliases, families, conflicts,
signatures and the action list, compared against a snapshot taken from the
code before passes declared themselves in their own modules
(``tests/data/pass_registry.json``); and a new pass needs only its own module.

Regenerate the snapshot only on purpose (a name, alias, conflict or action
changed): ``python tests/test_pass_declarations.py > tests/data/pass_registry.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests" / "data" / "pass_registry.json"


def registry_contents() -> dict:
    """What the registry and the action list say about every built-in pass,
    through the public functions only (so the same code reads any tree)."""
    from ptxopt.passes.families import EXCLUSIVE_FAMILIES, conflict
    from ptxopt.passes.pipeline import make_pass
    from ptxopt.passes.registry import get_pass_class, pass_kinds, pass_names, resolve, signature
    from ptxopt.search.actions import ACTIONS, PASS_ACTIONS, STOP_INDEX, action_pass, families

    builtin = [k for k in pass_kinds() if get_pass_class(k).__module__.startswith("ptxopt.passes.")]
    names = [n for n in pass_names() if resolve(n)[0] in builtin]
    kinds = []
    for k in builtin:
        cls = get_pass_class(k)
        kinds.append({"kind": k, "module": cls.__module__, "class": cls.__qualname__, "family": cls.family,
                      "conflicts": dict(cls.conflicts), "parameters": cls.parameter_names(),
                      "signature": signature(k), "structural": cls.structural, "uses_launch": cls.uses_launch})
    passes = [make_pass(n) for n in names]
    named = []
    for n, p in zip(names, passes):
        kind, params = resolve(n)
        named.append({"name": n, "kind": kind, "parameters": params, "str": str(p), "family": p.family,
                      "description": p.description})
    conflicts = [[a.name, b.name, why] for a in passes for b in passes
                 if a is not b and (why := conflict(a, b)) is not None]
    actions = [{"action": a, "kind": action_pass(a).kind, "parameters": action_pass(a).parameters(),
                "family": action_pass(a).family} for a in PASS_ACTIONS]
    return {"kinds": kinds, "names": named, "conflicts": conflicts, "exclusive_families": sorted(EXCLUSIVE_FAMILIES),
            "actions": list(ACTIONS), "stop_index": STOP_INDEX, "pass_actions": actions,
            "observation_families": list(families())}


def test_registry_contents_match_the_snapshot():
    """Any drift in a name, alias, order, family, conflict, signature or action index fails here."""
    want = json.loads(SNAPSHOT.read_text())
    got = json.loads(json.dumps(registry_contents()))
    for key in want:
        assert got[key] == want[key], key
    assert got == want


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    json.dump(registry_contents(), sys.stdout, indent=1)
    print()
