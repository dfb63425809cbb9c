"""The pass manager's instrumentation: should_run vetoes, before/after
callbacks, copies made only for an instrument that asks for the module
before a pass, whole-module refusals (check_legal) in the change report."""

import io

import pytest

from ptxopt import emit, parse
from ptxopt.kernels.corpus import get
from ptxopt.ptx.ir import Module
from ptxopt.passes.base import IllegalPass
from ptxopt.passes.registry import get_pass_class
from ptxopt.passes.passmanager import (MODULE_SITE, BisectLimit, Instrument, PassFailure, PassInstrumentation,
                                PassManager, RevertPass, Stats)

PIPE = "cache_cg,st_cache_wt,maxnreg_64"


def _module() -> Module:
    return parse(get("gemm_tile_2x2x2").ptx_text())


@pytest.fixture
def copies(monkeypatch):
    """How many times Module.copy ran."""
    count = [0]
    orig = Module.copy

    def counting(self):
        count[0] += 1
        return orig(self)

    monkeypatch.setattr(Module, "copy", counting)
    return count


class Recorder(Instrument):
    """Records every callback; with ``needs_before`` the printed module before each pass."""

    def __init__(self, needs_before: bool):
        self.needs_before = needs_before
        self.events: list[tuple] = []

    def start(self, module):
        self.events.append(("start",))

    def should_run(self, p, index):
        self.events.append(("should_run", p.name, index))
        return True

    def before_pass(self, p, module):
        self.events.append(("before_pass", p.name, emit(module)))

    def after_pass(self, p, before, after, record):
        self.events.append(("after_pass", p.name, None if before is None else emit(before), emit(after),
                            record.changed))

    def finish(self, result):
        self.events.append(("finish", len(result.records)))


def test_an_instrument_can_veto_a_pass():
    class NoBudgets(Instrument):
        def should_run(self, p, index):
            return p.family != "register-budget" or f"no budgets (pass {index})"

    class Quiet(Instrument):  # False instead of a reason: the class name is the reason
        def should_run(self, p, index):
            return p.name != "st_cache_wt"

    m = _module()
    res = PassManager(PIPE, instruments=[NoBudgets(), Quiet()]).run(m)
    assert [r.skipped for r in res.records] == ["", "Quiet", "no budgets (pass 2)"]
    assert [r.report is None for r in res.records] == [False, True, True]
    out = emit(res.module)
    assert ".cg." in out and ".wt." not in out and ".maxnreg" not in out


def test_every_should_run_callback_is_asked_and_the_first_veto_names_the_reason():
    asked = []

    def veto(name):
        def cb(p, index):
            asked.append((name, index))
            return name
        return cb

    class Two(Instrument):
        def register(self, pi: PassInstrumentation):
            pi.register_should_run(veto("first"))
            pi.register_should_run(veto("second"))

    res = PassManager("cache_cg", instruments=[Two()]).run(_module())
    assert res.records[0].skipped == "first" and asked == [("first", 0), ("second", 0)]


def test_bisect_limit_is_a_should_run_instrument():
    m = _module()
    a = PassManager(PIPE, bisect_limit=1).run(m)
    b = PassManager(PIPE, instruments=[BisectLimit(1)]).run(m)
    assert [r.skipped for r in a.records] == [r.skipped for r in b.records] == ["", "bisect", "bisect"]
    assert emit(a.module) == emit(b.module) == emit(PassManager("cache_cg").run(m).module)


def test_an_instrument_that_asks_sees_the_module_before_and_after_each_pass(copies):
    m = _module()
    names = PIPE.split(",")
    printed = [emit(PassManager(",".join(names[:k])).run(m).module) for k in range(len(names) + 1)]
    asks, blind = Recorder(needs_before=True), Recorder(needs_before=False)
    copies[0] = 0
    res = PassManager(PIPE, instruments=[asks, blind]).run(m)
    assert copies[0] == 3  # one per pass: the module before each is kept
    assert asks.events[0] == ("start",) and asks.events[-1] == ("finish", 3)
    after = [e for e in asks.events if e[0] == "after_pass"]
    assert [(e[1], e[2], e[3], e[4]) for e in after] == [
        (n, printed[i], printed[i + 1], True) for i, n in enumerate(names)]
    assert [e[2] for e in blind.events if e[0] == "after_pass"] == [None, None, None]
    assert [e[2] for e in blind.events if e[0] == "before_pass"] == printed[:3]
    assert [e[1:] for e in blind.events if e[0] == "should_run"] == [(n, i) for i, n in enumerate(names)]
    assert emit(res.module) == printed[-1] and emit(m) == printed[0]  # the input is untouched


def test_no_copy_per_pass_unless_an_instrument_asks(copies):
    m = _module()
    before = emit(m)
    res = PassManager(PIPE, instruments=[Recorder(needs_before=False), Stats(io.StringIO())]).run(m)
    assert copies[0] == 1  # only the input, once, so the caller's module stays as it was
    assert emit(m) == before and res.changed
    copies[0] = 0
    plain = PassManager(PIPE).run(m)
    assert copies[0] == 1 and emit(plain.module) == emit(res.module)
    copies[0] = 0
    nothing = PassManager(PIPE, bisect_limit=0).run(m)
    assert copies[0] == 0 and nothing.module is m  # no pass ran: nothing to copy


def test_revert_needs_the_module_before():
    class Reverts(Instrument):
        def __init__(self, needs_before):
            self.needs_before = needs_before

        def after_pass(self, p, before, after, record):
            if p.name == "st_cache_wt":
                raise RevertPass("not today")

    m = _module()
    res = PassManager(PIPE, instruments=[Reverts(True)]).run(m)
    rec = res.records[1]
    assert rec.reverted == "not today" and not rec.changed
    assert all(s.what.endswith("reverted: not today") for s in rec.report.refused) and rec.report.refused
    assert emit(res.module) == emit(PassManager("cache_cg,maxnreg_64").run(m).module)
    with pytest.raises(TypeError, match="needs_before"):
        PassManager(PIPE, instruments=[Reverts(False)]).run(m)


def test_a_whole_module_refusal_is_in_the_change_report(monkeypatch):
    def refuse(self, module):
        raise IllegalPass("not for this kernel (test)")

    monkeypatch.setattr(get_pass_class("st_cache_wt"), "check_legal", refuse)
    m = _module()
    err = io.StringIO()
    res = PassManager(PIPE, instruments=[Stats(err)]).run(m)
    rec = res.records[1]
    assert rec.skipped == "illegal: not for this kernel (test)" and not rec.changed
    assert [(s.function, s.line, s.what) for s in rec.report.refused] == [
        (MODULE_SITE, 0, "not for this kernel (test)")]
    assert "st_cache_wt: skipped (illegal: not for this kernel (test))" in err.getvalue()
    assert res.to_json()["passes"][1]["report"]["refused"][0]["reason"] == "not for this kernel (test)"
    assert emit(res.module) == emit(PassManager("cache_cg,maxnreg_64").run(m).module)


def test_illegal_pass_from_run_is_a_failure_of_the_pass(monkeypatch, tmp_path):
    def late(self, module):
        raise IllegalPass("too late to refuse")

    monkeypatch.setattr(get_pass_class("st_cache_wt"), "run", late)
    with pytest.raises(PassFailure, match="raised IllegalPass: too late to refuse"):
        PassManager(PIPE, reproducer_dir=tmp_path).run(_module())
