"""ptxopt inside Triton: real ``triton.compile`` runs (CPU only, sm_89 target)
through :func:`ptxopt.triton.enable`'s stage hook.

Triton compiles to PTX and cubin without a GPU; the kernels are the corpus's
(``corpus/triton/*.py``, compiled by :mod:`ptxopt.testing.triton_corpus`).
"""

import hashlib
import json
import stat
import warnings
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

import ptxopt.triton as pt
from ptxopt.api import ACCEPTED
from ptxopt.testing.triton_corpus import compile_kernel
from ptxopt.triton.hook import PtxoptTritonWarning, StagesHook

# Nine families: elementwise, softmax, normalization, reduction, transpose,
# matmul, scan, loss, attention.
KERNELS = ["vector_add_nodiv", "softmax_row", "layernorm_row", "reduce_sum", "transpose", "matmul_f16",
           "cumsum", "cross_entropy", "attention"]
PIPELINES = ["vec_ld,vec_st", "reorder_cp,maxnreg_128", "cache_cg,st_cache_cs,prefetch_L2"]


@pytest.fixture
def tcache(tmp_path, monkeypatch):
    """A private, empty Triton cache (and ptxopt cache folder: the hook's SASS
    listings, :mod:`ptxopt.measure.sass_store`); the hook removed afterwards."""
    d = tmp_path / "triton-cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(d))
    monkeypatch.setenv("PTXOPT_CACHE", str(tmp_path / "ptxopt-cache" / "eval.sqlite"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    yield d
    pt.disable()


def compile_plain(name: str):
    """Triton's own result (no hook)."""
    pt.disable()
    return compile_kernel(name)


def ptxopt_warnings(w) -> list[str]:
    return [str(x.message) for x in w if issubclass(x.category, PtxoptTritonWarning)]


# ---------------------------------------------------------------------------
# fast tier
# ---------------------------------------------------------------------------


def test_enable_takes_exactly_one_source(tcache):
    with pytest.raises(ValueError, match="exactly one of"):
        pt.enable()
    with pytest.raises(ValueError, match="exactly one of"):
        pt.enable("vec_ld", pipelines="x.json")


def test_enable_refuses_to_replace_a_foreign_hook(tcache):
    from triton import knobs

    def other(*a):
        return ("other", "0") if not a else None

    knobs.runtime.add_stages_inspection_hook = other
    try:
        with pytest.raises(RuntimeError, match="another add_stages_inspection_hook"):
            pt.enable("vec_ld")
    finally:
        knobs.runtime.add_stages_inspection_hook = None


def test_one_kernel_through_the_hook(tcache):
    plain = compile_plain("relu_scale")
    hook = pt.enable("reorder_cp,maxnreg_128")
    from triton import knobs

    assert knobs.runtime.add_stages_inspection_hook is hook
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = compile_kernel("relu_scale")
    assert not ptxopt_warnings(w)
    [rep] = pt.report()
    assert rep.name == "relu_scale" and rep.arch == "sm_89"
    assert rep.pipeline == "reorder_cp,maxnreg_128"
    assert rep.source_hash == hashlib.sha256(plain.asm["ptx"].encode()).hexdigest()
    assert rep.verdict == "proved" and rep.changed and not rep.reason  # optimize() tries the prover first
    assert ".maxnreg 128" in c.asm["ptx"] and ".maxnreg" not in plain.asm["ptx"]
    assert c.asm["ptx"] == rep.ptx
    assert c.asm["cubin"][:4] == b"\x7fELF"
    # the contract came from Triton's metadata: 2 warps, the signature's names
    assert "num_warps=2" in rep.contract and "x_ptr: *fp32" in rep.contract
    assert rep.registers.before is not None and rep.registers.after is not None
    assert rep.triton_seconds > 0 and rep.ptxopt_seconds > 0 and rep.overhead > 0
    mds = [json.loads(p.read_text()) for p in tcache.rglob("relu_scale.json")]
    assert len(mds) == 2 and sum("ptxopt" in m for m in mds) == 1  # the plain compile and the hooked one
    md = next(m for m in mds if "ptxopt" in m)
    assert md["hash"] == c.metadata.hash and md["ptxopt"]["pipeline"] == "reorder_cp,maxnreg_128" and md["ptxopt"]["changed"] is True
    assert "relu_scale: [reorder_cp,maxnreg_128] rewritten; verdict proved" in rep.line()
    assert f"ptxopt added {rep.ptxopt_seconds:.2f} s" in rep.line()  # the hook's cost, said per kernel
    pt.disable()
    assert knobs.runtime.add_stages_inspection_hook is None
    assert [r.name for r in pt.report()] == ["relu_scale"]  # the last enable()'s, after disable()


def test_pipeline_and_version_are_in_the_cache_key(tcache):
    a = pt.enable("maxnreg_128")
    key_a = a()
    ca = compile_kernel("vector_add")
    compile_kernel("vector_add")  # a cache hit: the hook's rewrite does not run again
    assert len(pt.report()) == 1
    b = pt.enable("maxnreg_64")
    key_b = b()
    cb = compile_kernel("vector_add")
    assert len(pt.report()) == 1 and pt.report()[0].pipeline == "maxnreg_64"
    assert key_a[0] != key_b[0] and key_a[1] != key_b[1]
    assert "maxnreg_128" in key_a[0] and pt.hook.code_digest() in key_a[0]
    assert ca.metadata.hash != cb.metadata.hash
    assert ".maxnreg 128" in ca.asm["ptx"] and ".maxnreg 64" in cb.asm["ptx"]
    assert StagesHook(a.chooser, verify=False).key != key_a[0]  # verify is part of it
    pt.disable()
    c = compile_kernel("vector_add")
    assert c.metadata.hash not in (ca.metadata.hash, cb.metadata.hash)
    assert ".maxnreg" not in c.asm["ptx"]


def test_nothing_chosen_leaves_the_kernel_alone(tcache, tmp_path):
    from ptxopt.triton.pipelines import write_pipelines

    path = write_pipelines(tmp_path / "empty.json", [])
    pt.enable(pipelines=path)
    plain_hash = None
    c = compile_kernel("vector_add")
    [rep] = pt.report()
    assert not rep.pipeline and not rep.changed
    assert "not in the pipelines file" in rep.why_pipeline
    assert "untouched" in rep.line()
    pt.disable()
    plain_hash = hashlib.sha256(compile_kernel("vector_add").asm["ptx"].encode()).hexdigest()
    assert hashlib.sha256(c.asm["ptx"].encode()).hexdigest() == plain_hash


def _failing_ptxas(tmp_path: Path) -> Path:
    """A ptxas that rejects any PTX with a .maxnreg directive (only ptxopt's
    rewrite has one) and is the real one otherwise."""
    from triton.backends.nvidia.compiler import get_ptxas

    real = get_ptxas(89).path
    script = tmp_path / "ptxas"
    script.write_text(f"""#!/bin/sh
for a in "$@"; do
  case "$a" in
    *.ptx) if grep -q '\\.maxnreg' "$a"; then
             echo "ptxas fatal   : forced failure for the test" >&2; exit 255; fi ;;
  esac
done
exec {real} "$@"
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_ptxas_failure_keeps_tritons_ptx_with_one_warning(tcache, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(_failing_ptxas(tmp_path)))
    plain = compile_plain("vector_add")
    pt.enable("vec_ld,maxnreg_128")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = compile_kernel("vector_add")
    msgs = ptxopt_warnings(w)
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("ptxopt: vector_add: kept Triton's own PTX:") and "forced failure" in msgs[0]
    assert "\n" not in msgs[0]
    [rep] = pt.report()
    assert not rep.changed and "forced failure" in rep.reason
    assert c.asm["ptx"] == plain.asm["ptx"]
    assert c.asm["cubin"][:4] == b"\x7fELF"
    err = capfd.readouterr()
    assert "Triton" not in err.err and "reproducer" not in err.err


def test_a_crashing_chooser_keeps_tritons_ptx(tcache):
    plain = compile_plain("vector_add")
    hook = pt.enable("vec_ld")

    class Broken:
        key = "broken"

        def choose(self, name, ptx):
            raise ZeroDivisionError("chooser bug")

    hook.chooser = Broken()
    with pytest.warns(PtxoptTritonWarning, match="chooser bug"):
        c = compile_kernel("vector_add")
    assert c.asm["ptx"] == plain.asm["ptx"]


# ---------------------------------------------------------------------------
# slow tier: many kernels x pipelines
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_kernels_through_the_hook(tcache, pipeline):
    plain = {}
    for name in KERNELS:
        plain[name] = compile_plain(name).asm["ptx"]
    pt.enable(pipeline)
    compiled = {}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for name in KERNELS:
            compiled[name] = compile_kernel(name)
    reports = dict(zip(KERNELS, pt.report()))  # in compile order
    assert len(pt.report()) == len(KERNELS)
    kept = []
    for name in KERNELS:
        rep, c = reports[name], compiled[name]
        assert rep.name == c.metadata.name  # the @triton.jit function's name
        assert c.asm["cubin"][:4] == b"\x7fELF", name
        assert rep.pipeline == pipeline and rep.arch == "sm_89"
        assert rep.source_hash == hashlib.sha256(plain[name].encode()).hexdigest()
        assert c.asm["ptx"] == rep.ptx
        assert rep.registers.before is not None
        if rep.reason:  # kept Triton's PTX, said why
            assert not rep.changed and c.asm["ptx"] == plain[name]
            kept.append(name)
        else:
            assert rep.verdict in ACCEPTED
            assert (c.asm["ptx"] != plain[name]) == rep.changed
        assert [p["pass"] for p in rep.passes] == pipeline.split(",")
        for p in rep.passes:
            if p["pass"] in ("vec_ld", "vec_st") and not p["changed"]:
                assert p["refused"] or p.get("note"), (name, p)  # why nothing was merged
                assert f"{p['pass']}: " in rep.line()  # ... and the one-line report says it
    # one warning per kernel that kept Triton's PTX, and one per explicit pipeline applied although
    # estimated slower (enable(pipeline=...) applies what was asked, and says by how much)
    # (or estimated to gain less than the minimum gain, min_improvement)
    warned = [n for n in KERNELS if reports[n].warnings]
    assert all("applied as asked, but estimated" in x for n in warned for x in reports[n].warnings)
    for n in warned:
        e = reports[n].estimate
        small = any("below the minimum gain" in x for x in reports[n].warnings)
        assert e.after > e.before if not small else e.before >= e.after > 0.99 * e.before, (n, e)
    assert len(ptxopt_warnings(w)) == len(kept) + sum(len(reports[n].warnings) for n in warned)
    if pipeline != "vec_ld,vec_st":
        assert sum(r.changed for r in reports.values()) >= 6


@pytest.mark.slow
def test_policy_checkpoint_chooses_per_kernel(tcache):
    pytest.importorskip("torch")
    ckpt = Path(__file__).resolve().parents[2] / "corpus" / "policies" / "gemm_elementwise_sm_89.pt"
    hook = pt.enable(policy=str(ckpt))
    assert "policy=" + hashlib.sha256(ckpt.read_bytes()).hexdigest() in hook()[0]
    c = compile_kernel("matmul_f16")
    [rep] = pt.report()
    assert str(ckpt) in rep.why_pipeline
    if rep.pipeline:  # whatever the policy picked went through the same checks
        assert rep.verdict in ACCEPTED or rep.reason
    else:
        assert "chose no pass" in rep.why_pipeline and not rep.changed
    assert c.asm["cubin"][:4] == b"\x7fELF"


def test_a_committed_policy_by_name_as_the_cli_takes_it(tcache):
    pytest.importorskip("torch")
    ckpt = Path(__file__).resolve().parents[2] / "corpus" / "policies" / "gemm_elementwise_sm_89.pt"
    hook = pt.enable(policy="gemm_elementwise_sm_89")
    try:
        assert "policy=" + hashlib.sha256(ckpt.read_bytes()).hexdigest() in hook()[0]
    finally:
        pt.disable()


def test_bad_sources_are_clear_errors(tcache, tmp_path):
    from ptxopt.passes.pipeline import PipelineError
    from ptxopt.triton.pipelines import PipelinesError

    with pytest.raises(PipelineError):
        pt.enable("no_such_pass")
    with pytest.raises(PipelinesError, match="cannot read pipelines file"):
        pt.enable(pipelines=tmp_path / "missing.json")


def test_unexpected_stage_calls_do_not_break_triton(tcache):
    hook = pt.enable("vec_ld")
    stages = {"ttir": None, "llir": None}  # no ptx stage (another backend): left alone
    assert hook(object(), stages, object(), "triton", 89) is None and stages == {"ttir": None, "llir": None}
    with pytest.warns(PtxoptTritonWarning, match="could not install"):
        assert hook(object()) is None  # too few arguments: a warning, no exception


def test_why_the_vectorizers_find_nothing_on_triton_ptx(tcache):
    # Without a divisibility hint Triton spreads the block over the threads:
    # each thread's 4 elements are 32 * num_warps * 4 = 512 bytes apart, every
    # one through its own address register (add.s64 %rdK, %rdBase, 512*k).
    pt.enable("vec_ld,vec_st")
    c = compile_kernel("vector_add_nodiv")
    assert "add.s64" in c.asm["ptx"]
    [rep] = pt.report()
    assert not rep.changed and rep.verdict == "identical"
    notes = {p["pass"]: p.get("note") for p in rep.passes}
    stride = 32 * c.metadata.num_warps * 4
    assert f"on one base (address chains followed) but {stride} bytes apart" in notes["vec_ld"]
    assert f"on one base (address chains followed) but {stride} bytes apart" in notes["vec_st"]
    assert "vec_ld: nothing to merge among" in rep.line()


def test_tritons_cubin_stage_gets_ptxopts_cubin_byte_for_byte(tcache, tmp_path, monkeypatch):
    # the hook assembled the text it hands on with Triton's own ptxas and flags: Triton's cubin
    # stage takes that cubin instead of a second ptxas run, and it is the cubin Triton would make
    hook = pt.enable("reorder_cp,maxnreg_128")
    reused = compile_kernel("relu_scale")
    [rep] = pt.report()
    assert rep.changed and rep.cubin_reused
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "own-stage"))
    hook.reuse_cubin = False  # Triton's own stage on the same text
    own = compile_kernel("relu_scale")
    assert not pt.report()[-1].cubin_reused
    assert own.asm["ptx"] == reused.asm["ptx"] and own.asm["cubin"] == reused.asm["cubin"]
    # the original kept (the check spends its budget): its cubin is the one reused
    from triton import knobs

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "log"))
    hook.reuse_cubin = True
    monkeypatch.setattr(knobs.nvidia, "dump_ptxas_log", True)  # only Triton's own run prints its log
    compile_kernel("relu_scale")
    assert not pt.report()[-1].cubin_reused


def _prover_declines(monkeypatch):
    """The prover gives no verdict, as for a rewrite it cannot prove. The two tests below are about
    what follows then (the interpreter's step budget, a rejection remembered); matmul_f32_ieee's
    reorder_cp, their case, is proved since the prover reads ldmatrix as a read, not an ordering point."""
    from ptxopt.equivalence import decision

    monkeypatch.setattr(decision, "_prove", lambda ref, candidate, entry: (None, "; prover: declined (test)"))


def test_a_reorder_across_ldmatrix_is_proved_within_a_small_budget(tcache):
    # the same kernel and pass without the test's refusal: the prover decides, so the interpreter's
    # budget never comes into it
    pt.enable("reorder_cp", check_steps=500)
    compile_kernel("matmul_f32_ieee")
    [rep] = pt.report()
    assert rep.verdict == "proved", rep.reason


def test_a_check_over_the_budget_keeps_tritons_ptx(tcache, monkeypatch):
    # matmul_f32_ieee: the prover does not decide reorder_cp and the interpreter would need
    # ~100k steps per contract alternative; a small budget ends it, and Triton's PTX is kept
    _prover_declines(monkeypatch)
    plain = compile_plain("matmul_f32_ieee")
    pt.enable("reorder_cp", check_steps=500)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = compile_kernel("matmul_f32_ieee")
    [rep] = pt.report()
    assert not rep.changed and rep.verdict == "inconclusive"
    assert rep.reason.startswith("equivalence inconclusive (budget):") and "interpreter budget spent" in rep.reason
    assert c.asm["ptx"] == plain.asm["ptx"] and rep.cubin_reused
    assert any("(budget)" in m for m in ptxopt_warnings(w))
    assert rep.stage_seconds["verify"] < 5


def test_no_estimate_skips_the_speed_comparison(tcache):
    hook = pt.enable("reorder_cp,maxnreg_128", estimate=False)
    assert hook()[0].endswith("-estimate=0")  # another cache key: a choice is no longer guarded
    compile_kernel("relu_scale")
    [rep] = pt.report()
    assert rep.changed and rep.verdict == "proved" and rep.estimate.before is None
    assert "estimate" not in rep.stage_seconds and rep.cubin_reused


def test_a_kernel_compiled_again_reads_its_sass_from_the_store(tcache, tmp_path, monkeypatch):
    # nvdisasm (~0.2 s per run, whatever the cubin) is most of the hook's time on a small
    # kernel. A second process -- here: a fresh Triton cache, the in-process memos forgotten --
    # finds both listings in the hook's store and runs no nvdisasm; the estimate is the same.
    from ptxopt.measure import disasm
    from ptxopt.measure.sim import clear_memo

    runs = []
    real = disasm.disassemble_many
    monkeypatch.setattr(disasm, "disassemble_many", lambda cubins, **kw: runs.append(len(cubins)) or real(cubins, **kw))
    store = tmp_path / "sass"
    reports = []
    for i in range(2):
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / f"cache{i}"))
        clear_memo()
        hook = pt.enable("vec_ld,vec_st,reorder_cp,maxnreg_128", disk_cache=store)
        compile_kernel("softmax_row")
        reports.append((pt.report()[-1], hook.sass_store))
    (cold, s0), (warm, s1) = reports
    assert cold.changed and cold.estimate.before is not None  # the result's code differs: estimated
    assert runs == [2] and (s0.misses, s0.writes) == (2, 2) and (s1.hits, s1.writes) == (2, 0)
    assert (warm.changed, warm.estimate, warm.ptx) == (cold.changed, cold.estimate, cold.ptx)
    assert hook.rejections.writes == 0 and not warm.rejection_remembered  # an accepted check: never remembered
    # disk_cache=False: no store at all (nvdisasm runs again)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache-off"))
    clear_memo()
    assert pt.enable("vec_ld,vec_st,reorder_cp,maxnreg_128", disk_cache=False).sass_store is None
    compile_kernel("softmax_row")
    assert runs == [2, 2]


def test_a_result_with_tritons_machine_code_is_not_estimated(tcache):
    # maxnreg_128 above what relu_scale uses: ptxas emits the same code; the files differ (line
    # tables, the budget attribute), the speed cannot: no nvdisasm run, the rewrite is used
    from ptxopt.evaluate.stages import SAME_CODE

    compile_kernel("relu_scale")
    pt.enable("maxnreg_128")
    compile_kernel("relu_scale")
    [rep] = pt.report()
    assert rep.changed and rep.verdict in ACCEPTED and rep.estimate.before is None
    assert rep.estimate_note == SAME_CODE and "estimate_wait" not in rep.stage_seconds
    assert "estimate: none (the result's cubin holds the input's machine code" in rep.line()


def test_a_rejected_check_is_remembered_for_a_later_compile(tcache, tmp_path, monkeypatch):
    # matmul_f32_ieee: the check spends its budget (deterministic: counted in steps) and Triton's PTX
    # is kept. A later process compiling the same kernel (a fresh Triton cache) keeps it at once, with
    # the same report; nothing is rewritten, compiled or checked again.
    import ptxopt.api as api

    _prover_declines(monkeypatch)
    checks = []
    real = api.check_equivalence
    monkeypatch.setattr(api, "check_equivalence", lambda *a, **kw: checks.append(1) or real(*a, **kw))
    plain = compile_plain("matmul_f32_ieee")
    root = tmp_path / "hook"
    reps = []
    for i in range(2):
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / f"cache{i}"))
        hook = pt.enable("reorder_cp", check_steps=500, disk_cache=root)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = compile_kernel("matmul_f32_ieee")
        reps.append((pt.report()[-1], c, ptxopt_warnings(w), hook.rejections))
    (cold, c0, w0, m0), (warm, c1, w1, m1) = reps
    assert checks == [1] and (m0.writes, m1.hits, m1.writes) == (1, 1, 0)
    assert not cold.rejection_remembered and warm.rejection_remembered
    assert c0.asm["ptx"] == c1.asm["ptx"] == plain.asm["ptx"] and c1.asm["cubin"] == plain.asm["cubin"]
    assert w0 == w1 and len(w1) == 1 and "(budget)" in w1[0]
    same = ("changed", "verdict", "verdict_note", "reason", "contract", "coverage", "registers", "spills", "passes")
    assert [getattr(warm, k) for k in same] == [getattr(cold, k) for k in same]
    # anything the check depended on is in the key: another budget is checked again
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache-budget"))
    pt.enable("reorder_cp", check_steps=600, disk_cache=root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile_kernel("matmul_f32_ieee")
    assert checks == [1, 1] and not pt.report()[-1].rejection_remembered


def test_a_user_given_contract_is_never_remembered(tcache, tmp_path):
    # the memo keys only the contracts the hook derives from Triton's metadata (their repr is all
    # there is to them); a user's contract (exact buffers, a contract file) is checked every time
    from ptxopt.equivalence.launch import Launch

    hook = pt.enable("reorder_cp", check_steps=500, disk_cache=tmp_path / "hook",
                     contracts={"matmul_f32_ieee": Launch((1, 1, 1), (128, 1, 1))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile_kernel("matmul_f32_ieee")
    [rep] = pt.report()
    assert rep.verdict and (hook.rejections.hits, hook.rejections.misses, hook.rejections.writes) == (0, 0, 0)
