"""Every pass's identity, pinned: kinds, names, aliases, families, conflicts,
signatures and the action list, compared against a snapshot taken from the
code before passes declared themselves in their own modules
(``tests/data/pass_registry.json``); and a new pass needs only its own module.

Regenerate the snapshot only on purpose (a name, alias, conflict or action
changed): ``python tests/passes/test_pass_declarations.py > tests/data/pass_registry.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "data" / "pass_registry.json"


def registry_contents() -> dict:
    """What the registry and the action list say about every built-in pass,
    through the public functions only (so the same code reads any tree). The
    module a pass lives in is left out: moving it is no change of identity."""
    from ptxopt.passes.families import EXCLUSIVE_FAMILIES, conflict
    from ptxopt.passes.pipeline import make_pass
    from ptxopt.passes.registry import get_pass_class, pass_kinds, pass_names, resolve, signature
    from ptxopt.search.actions import ACTIONS, PASS_ACTIONS, STOP_INDEX, action_pass, families

    builtin = [k for k in pass_kinds() if get_pass_class(k).__module__.startswith("ptxopt.passes.")]
    names = [n for n in pass_names() if resolve(n)[0] in builtin]
    kinds = []
    for k in builtin:
        cls = get_pass_class(k)
        kinds.append({"kind": k, "class": cls.__qualname__, "family": cls.family,
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



# -- a new pass is its module (+ its golden folder) -------------------------------------------------

#: A whole new pass, with a new exclusive family, two aliases, a parameter
#: with legal values and a conflict: everything ptxopt learns of it is here.
MARK_MODULE = '''
"""A pass written by a test: a comment at the top of each function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ptxopt.ptx.ir import Comment
from ptxopt.passes.base import ChangeReport, FunctionPass
from ptxopt.passes.families import family
from ptxopt.passes.registry import declare

MARKING = family("marking", exclusive=True)


@declare
@dataclass(frozen=True)
class Mark(FunctionPass):
    kind: ClassVar[str] = "mark"
    aliases: ClassVar[dict[str, dict]] = {"mark_1": {"level": 1}, "mark_2": {"level": 2}}
    family: ClassVar[str] = MARKING
    description: ClassVar[str] = "a comment at the top of each function"
    choices: ClassVar[dict] = {"level": (1, 2, 3)}
    conflicts: ClassVar[dict[str, str]] = {"split_ld": "a test says so"}
    level: int

    def run_function(self, fn, report: ChangeReport, module) -> None:
        fn.body.items.insert(0, Comment(f"// marked at level {self.level}"))
        report.change(fn.name, 0, f"marked at level {self.level}")
'''

MARK_GOLDEN = """// RUN: ptxopt run --passes mark_2 %s
// RUN: ptxopt run --passes mark{level=2} %s
// RUN: ptxopt run --passes mark{level=3} --stats %s 2>&1 | filecheck --check-prefix=THREE %s
// RUN: not ptxopt run --passes mark_1,mark_2 %s | filecheck --check-prefix=FAMILY %s
// RUN: not ptxopt run --passes split_ld,mark_1 %s | filecheck --check-prefix=CONFLICT %s
// CHECK: // marked at level 2
// THREE: mark{level=3}: 1 changed
// THREE: // marked at level 3
// FAMILY: conflicting passes: 'mark_1' and 'mark_2' are both in the marking family
// CONFLICT: conflicting passes: 'split_ld' conflicts with 'mark_1': a test says so
.version 8.8
.target sm_89
.address_size 64

.visible .entry k(.param .u64 k_param_0)
{
\t.reg .f32 %f<2>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.f32 %f1, [%rd2];
\tst.global.f32 [%rd2+4], %f1;
\tret;
}
"""


@pytest.fixture
def mark_module(tmp_path, monkeypatch):
    """``mark.py`` in a folder added to the ``ptxopt.passes`` package: a pass
    module nothing else in ptxopt names."""
    import ptxopt.passes
    from ptxopt.passes import families, registry

    folder = tmp_path / "more_passes"
    folder.mkdir()
    (folder / "mark.py").write_text(MARK_MODULE)
    monkeypatch.setattr(families, "_EXCLUSIVE", dict(families._EXCLUSIVE))
    monkeypatch.setattr(ptxopt.passes, "__path__", [*ptxopt.passes.__path__, str(folder)])
    yield tmp_path
    registry.unregister("mark")
    sys.modules.pop("ptxopt.passes.mark", None)


def test_a_new_pass_needs_only_its_module_and_its_golden_folder(mark_module):
    """The module alone makes the pass known by kind and aliases, listed after
    the others, canonical in pipelines, exclusive in its new family, in
    conflict where it says, and in ``ptxopt passes``; its golden file runs."""
    from click.testing import CliRunner

    from ptxopt.cli import cli
    from ptxopt.passes.pipeline import Pipeline, PipelineError
    from ptxopt.passes.registry import pass_kinds, pass_names, resolve
    from tests.passes.test_golden import check_file

    names = pass_names()
    assert names[names.index("swp_ld_2") + 1:][:2] == ["mark_1", "mark_2"]
    assert "mark" in pass_kinds() and resolve("mark_2") == ("mark", {"level": 2})
    assert str(Pipeline.parse("mark{level=2},vec_ld")) == "mark_2,vec_ld"
    assert str(Pipeline.parse("mark{level=3}")) == "mark{level=3}"
    with pytest.raises(PipelineError, match="level=4 is not one of 1|2|3"):
        Pipeline.parse("mark{level=4}")
    with pytest.raises(PipelineError, match="both in the marking family"):
        Pipeline.parse("mark_1,mark_2")
    rows = json.loads(CliRunner().invoke(cli, ["passes", "--json"]).stdout)
    row = next(r for r in rows if r["name"] == "mark_1")
    assert row["family"] == "marking" and row["conflicts"] == ["split_ld", "mark_2"]
    assert row["signature"] == "mark{level=1|2|3}"
    golden = mark_module / "golden" / "mark_2"
    golden.mkdir(parents=True)
    (golden / "marks.ptx").write_text(MARK_GOLDEN)
    check_file(golden / "marks.ptx", mark_module)


def test_looking_up_a_name_imports_only_the_module_that_declares_it():
    """``vec_ld`` imports ``vectorize`` and no other pass module; an alias
    (``maxnreg_128``) its own module; listing imports them all."""
    code = ("import sys\n"
            "from ptxopt.passes.pipeline import Pipeline\n"
            "from ptxopt.passes.registry import LISTING_ORDER, pass_names\n"
            "def loaded(): return sorted(m for m in LISTING_ORDER if 'ptxopt.passes.' + m in sys.modules)\n"
            "Pipeline.parse('vec_ld'); print(loaded())\n"
            "Pipeline.parse('maxnreg_128'); print(loaded())\n"
            "from ptxopt.passes.registry import UnknownPass, resolve\n"
            "try: resolve('no_such_pass')\n"
            "except UnknownPass: print(loaded())\n"
            "pass_names(); print(loaded() == sorted(LISTING_ORDER))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['vectorize']", "['register_budget', 'vectorize']",
                                "['register_budget', 'vectorize']", "True"]


def test_declare_refuses_what_would_make_names_ambiguous():
    from ptxopt.passes.base import FunctionPass
    from ptxopt.passes.registry import PluginPassError, declare

    def cls(kind, aliases=None, module="ptxopt.passes.fake"):
        body = {"kind": kind, "family": "test", "__module__": module, "__annotations__": {"level": int},
                "run_function": lambda self, fn, report, module: None}
        if aliases is not None:
            body["aliases"] = aliases
        return dataclass(frozen=True)(type("Fake", (FunctionPass,), body))

    with pytest.raises(PluginPassError, match="'vec_ld' is already a pass name"):
        declare(cls("vec_ld"))
    with pytest.raises(PluginPassError, match="'maxnreg_128' is already a pass name"):
        declare(cls("fake", {"maxnreg_128": {"level": 1}}))
    with pytest.raises(PluginPassError, match="alias 'fake_1' sets \\['n'\\], the parameters are \\['level'\\]"):
        declare(cls("fake", {"fake_1": {"n": 1}}))
    with pytest.raises(PluginPassError, match="is not in ptxopt.passes: a pass of your own is registered"):
        declare(cls("fake", module=__name__))
    with pytest.raises(PluginPassError, match="'fake' is not written as a string in its module"):
        declare(cls("fake", module="ptxopt.passes.vectorize"))
    from ptxopt.passes.registry import pass_kinds

    assert "fake" not in pass_kinds()


def test_a_subclass_of_another_kind_does_not_inherit_aliases():
    from ptxopt.passes.register_budget import MaxNReg

    @dataclass(frozen=True)
    class Budget(MaxNReg):
        kind: ClassVar[str] = "budget"

    assert MaxNReg(n=128).name == "maxnreg_128"
    assert Budget(n=128).name == "budget{n=128}" and Budget.aliases == {}


def test_a_registered_plugin_may_declare_aliases_too():
    from ptxopt.passes.base import FunctionPass
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.passes.registry import pass_names, register, resolve, unregister

    @dataclass(frozen=True)
    class Twice(FunctionPass):
        kind: ClassVar[str] = "twice_plugin"
        aliases: ClassVar[dict[str, dict]] = {"twice_2": {"k": 2}}
        family: ClassVar[str] = "test"
        k: int

        def run_function(self, fn, report, module) -> None:
            pass

    register(Twice)
    try:
        assert resolve("twice_2") == ("twice_plugin", {"k": 2}) and "twice_2" in pass_names()
        assert str(Pipeline.parse("twice_plugin{k=2}")) == "twice_2"
    finally:
        unregister("twice_plugin")
    assert "twice_2" not in pass_names()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    json.dump(registry_contents(), sys.stdout, indent=1)
    print()
