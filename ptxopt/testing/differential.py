"""The differential check behind the fuzzer: every pass on one kernel.

For each named pass (:func:`~ptxopt.passes.registry.pass_names`): the result either prints the same module (the
pass found nothing to do, or refused every site), or ptxas accepts it *and*
the interpreter finds it computes bit for bit what the original computes
(:func:`ptxopt.equivalence.interpret.verify`, every trial, under the given launch). Anything
else -- a crash, a rejected rewrite, a mismatch, an error -- is a
:class:`Finding`. A result verify calls ``inconclusive`` because a changed
instruction never ran under the launch (generated kernels guard code with
predicates the launch never sets), or because the rewrite makes an assumption
no check establishes (``nc_ld{assume_noalias=1}``: verify caps its ``equal``
at "assumes noalias"), is neither: it is listed in :attr:`Outcome.unverified`;
any other ``inconclusive`` is a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt import emit, parse
from ptxopt.passes.registry import pass_names
from ptxopt.toolchain.arch import DEFAULT_ARCH


@dataclass
class Finding:
    pipeline: str
    what: str  # "crash", "ptxas", "mismatch", "error", "inconclusive"
    detail: str

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.what}: {self.detail}"


@dataclass
class Outcome:
    findings: list[Finding]
    changed: list[str]    # pipelines that changed the module (and were checked)
    unchanged: list[str]
    #: changed, nothing differed, but a changed instruction never ran or the result assumes what
    #: no check here establishes ("assumes noalias"): (pipeline, why)
    unverified: list[tuple[str, str]] = field(default_factory=list)


def _pass_manager(pipeline: str, module):
    from ptxopt.passes.passmanager import PassManager

    return PassManager(pipeline).run(module).module


def check_passes(text: str, geometry, pipelines=None, arch: str = DEFAULT_ARCH, apply=_pass_manager) -> Outcome:
    """Run every pipeline in ``pipelines`` (default: each pass alone) on the
    kernel ``text`` and check each result (see the module doc). ``apply(pipeline,
    module) -> new module`` is how a pipeline runs (the tests swap in a broken
    one to show the check can fail)."""
    from ptxopt.toolchain import PtxasError, compile_ptx
    from ptxopt.equivalence.interpret import verify

    module = parse(text)
    entry = module.entries[0].name
    base = emit(module)
    compile_ptx(base, arch)  # the original must assemble: a generator bug otherwise
    findings: list[Finding] = []
    changed: list[str] = []
    unchanged: list[str] = []
    unverified: list[tuple[str, str]] = []
    for p in pipelines or pass_names():
        try:
            new = apply(p, module)
        except Exception as e:  # noqa: BLE001 - a crashing pass is a finding, not a stop
            findings.append(Finding(p, "crash", f"{type(e).__name__}: {e}"))
            continue
        out = emit(new)
        if out == base:
            unchanged.append(p)
            continue
        changed.append(p)
        try:
            compile_ptx(out, arch)
        except PtxasError as e:
            findings.append(Finding(p, "ptxas", str(e).splitlines()[0]))
            continue
        res = verify(module, new, entry, geometry=geometry)
        if res.status == "inconclusive" and (res.assumption is not None or (
                res.coverage is not None and res.coverage.changed_not_run)):
            unverified.append((p, res.error or ""))
            continue
        if res.status != "equal":
            mm = res.mismatch
            detail = (f"{mm.buffer}[{mm.index}] {mm.original} -> {mm.transformed}" if mm is not None
                      else res.error or ", ".join(map(str, getattr(res, "notes", ()))) or res.status)
            findings.append(Finding(p, "mismatch" if mm is not None else res.status, detail))
    return Outcome(findings, changed, unchanged, unverified)
