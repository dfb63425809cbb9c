"""Pass pipelines as strings: ``vec_ld{assume_align=16},maxnreg{n=96},cache_cg``.

An item is a pass kind or an alias with ``{key=value,...}``: a parametric
kind needs its parameters (``maxnreg{n=96}``, ``cache_ld{op=cg}``), an alias
has them fixed (``cache_cg`` is ``cache_ld{op=cg}``) and takes options only.

The printed form is canonical: a pass that has an alias prints as the alias
(``maxnreg{n=128}`` prints ``maxnreg_128``), one that has none as its kind
with its parameters; then the options that differ from their defaults, keys
sorted. So ``str(Pipeline.parse(s))`` is a stable key for caches and RL
states (the names that existed before parameters print as they always did),
and ``Pipeline.parse(str(p)) == p``. An unknown pass name, a missing or
unknown parameter, or a value the pass does not allow fails with one line
that says what is valid; two passes that conflict (same exclusive family, or
vec_ld with split_ld) fail with a message naming both.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ptxopt.passes.base import IllegalPass, Pass, PassError
from ptxopt.passes.families import conflict
from ptxopt.passes.registry import PluginPassError, UnknownPass, get_pass_class, resolve, signature

if TYPE_CHECKING:  # lark is imported on the first pipeline parsed (not by `ptxopt --help`)
    from lark import Lark

_GRAMMAR = r"""
start: [item ("," item)*]
item: NAME ["{" [opt ("," opt)*] "}"]
opt: NAME "=" VALUE
NAME: /[A-Za-z_][A-Za-z0-9_\-]*/
VALUE: /[^,{}=\s]+/
%ignore /\s+/
"""
_parser: Lark | None = None


class PipelineError(PassError):
    """A pipeline string that names an unknown pass, a bad option or a conflict."""


#: the longest pipeline accepted: every family at most once is under 10 passes, a search goes at most
#: 20 steps; a longer string is a mistake (or an attack) that would otherwise parse and run for minutes
MAX_PASSES = 64


@dataclass(frozen=True)
class Pipeline:
    passes: tuple[Pass, ...] = ()

    @classmethod
    def parse(cls, text: str, *, allow_conflicts: bool = False) -> "Pipeline":
        global _parser
        if not isinstance(text, str):
            raise TypeError(f"Pipeline.parse() takes a str such as 'vec_ld,maxnreg_128', not {type(text).__name__}")
        if text.count(",") >= MAX_PASSES:  # before parsing: 100k passes would take minutes to parse and run
            raise PipelineError(f"the pipeline has {text.count(',') + 1} passes; at most {MAX_PASSES} are accepted")
        from lark import Lark
        from lark.exceptions import UnexpectedInput

        if _parser is None:
            _parser = Lark(_GRAMMAR, parser="lalr")
        try:
            tree = _parser.parse(text.strip())
        except UnexpectedInput as e:
            raise PipelineError(f"bad pipeline {text!r} at column {e.column}: "
                                "expected name[,name...] with options as name{key=value}") from None
        passes = []
        for item in tree.children:
            if item is None:
                continue
            name = str(item.children[0])
            opts = {}
            for o in item.children[1:]:
                if o is not None:
                    opts[str(o.children[0])] = str(o.children[1])
            passes.append(make_pass(name, opts))
        p = cls(tuple(passes))
        if not allow_conflicts:
            p.check_conflicts()
        return p

    def check_conflicts(self) -> None:
        for i, a in enumerate(self.passes):
            for b in self.passes[i + 1:]:
                why = conflict(a, b)
                if why:
                    raise PipelineError(f"conflicting passes: {why}")

    def can_append(self, p: Pass) -> str | None:
        """Why ``p`` cannot be appended (a conflict), or None."""
        for a in self.passes:
            why = conflict(a, p)
            if why:
                return why
        return None

    def with_launch(self, launch, entry: str | None = None) -> "Pipeline":
        """This pipeline for a performance launch of ``entry``: each pass
        through :meth:`Pass.with_launch` (``launch_bounds`` takes the block
        and shared memory from it; the others are unchanged)."""
        return Pipeline(tuple(p.with_launch(launch, entry) for p in self.passes))

    def __add__(self, other: "Pipeline | Pass") -> "Pipeline":
        extra = other.passes if isinstance(other, Pipeline) else (other,)
        return Pipeline(self.passes + tuple(extra))

    def __str__(self) -> str:
        return ",".join(str(p) for p in self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def __iter__(self):
        return iter(self.passes)


def make_pass(name: str, options: dict[str, str] | None = None) -> Pass:
    """Instantiate pass ``name`` (a kind or an alias) with string options
    coerced to field types."""
    try:
        kind, fixed = resolve(name)
    except UnknownPass as e:
        raise PipelineError(str(e)) from None
    try:
        cls = get_pass_class(kind)
    except PluginPassError as e:
        raise PipelineError(str(e)) from None
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, object] = dict(fixed)
    for k, v in (options or {}).items():
        f = known.get(k)
        if f is None:
            valid = ", ".join(x for x in known if x not in fixed) or "none"
            raise PipelineError(f"pass '{name}' has no option '{k}' (options: {valid})")
        if k in fixed:
            raise PipelineError(f"pass '{name}' is {kind}{{{k}={fixed[k]}}}: its {k} is fixed "
                                f"(write {kind}{{{k}={v}}} instead)")
        kwargs[k] = _coerce(name, k, v, f.type)
    missing = [n for n in cls.parameter_names() if n not in kwargs]
    if missing:
        raise PipelineError(f"pass '{name}' needs its parameter {missing[0]}: {signature(kind)}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise PipelineError(f"pass '{name}': {e}") from None


def changed_output(name: str, module):
    """What pass ``name`` (:func:`make_pass`) makes of ``module``, or None when
    it is illegal for the module or reports no change: the sweeps that run
    every pass on a kernel (the prover's matrix, its re-check) check only
    what changed."""
    try:
        out, report = make_pass(name).apply(module)
    except IllegalPass:
        return None
    return out if report.changed_any else None


def _coerce(name: str, key: str, value: str, typ) -> object:
    t = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    try:
        if "int" in t:
            return int(value, 0)
        if "bool" in t:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if "float" in t:
            return float(value)
    except ValueError:
        raise PipelineError(f"pass '{name}': option {key}={value!r} is not a valid {t}") from None
    return value
