"""launch_bounds{minblocks=N}: .maxntid of the known block plus .minnctapersm N,
refused where the block is unknown or disagrees, where N blocks can never be
resident, and where another register budget is in charge; ptxas honours it."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from ptxopt import emit, parse
from ptxopt.kernels.corpus import get
from ptxopt.passes import PassError
from ptxopt.passes.launch_bounds import LaunchBounds, register_cap
from ptxopt.equivalence.instrument import VerifyEach
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline, PipelineError
from ptxopt.sim.occupancy import limits_for, occupancy
from ptxopt.toolchain import compile_ptx

DATA = Path(__file__).parents[1] / "data" / "contract"

KERNEL = """\
.version 8.8
.target {target}
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{directives}{{
{decls}\t.reg .f32 %f<4>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.f32 %f1, [%rd2];
\tadd.f32 %f2, %f1, %f1;
\tst.global.f32 [%rd2], %f2;
\tret;
}}
"""


def kernel(*directives: str, target: str = "sm_89", decls: str = "") -> str:
    return KERNEL.format(directives="".join(d + "\n" for d in directives), target=target, decls=decls)


def apply(pipeline: str, text: str):
    (p,) = Pipeline.parse(pipeline).passes
    return p.apply(parse(text))


def dirs(module) -> dict:
    return {d.name: d.args for d in module.entries[0].directives}


def test_sets_maxntid_of_the_block_and_minnctapersm():
    out, rep = apply("launch_bounds{minblocks=3,block=256}", kernel())
    assert dirs(out) == {".maxntid": ("256",), ".minnctapersm": ("3",)}
    assert [s.what for s in rep.changed] == [
        ("set .maxntid 256 and set .minnctapersm 3 (ptxas caps registers at 80 per thread for 3 blocks "
         "of 256 threads on sm_89)")]
    compile_ptx(emit(out), "sm_89")


def test_a_2d_block_keeps_its_extents():
    out, _ = apply("launch_bounds{minblocks=2,block=16x16x1}", kernel())
    assert dirs(out)[".maxntid"] == ("16", "16")
    assert "maxntid 16, 16\n" in emit(out)


def test_reqntid_gives_the_block_and_is_kept():
    out, rep = apply("launch_bounds_2", kernel(".reqntid 128"))
    assert dirs(out) == {".reqntid": ("128",), ".minnctapersm": ("2",)}  # no .maxntid beside .reqntid
    assert rep.changed and not rep.refused
    out, rep = apply("launch_bounds{minblocks=2,block=128x1}", kernel(".reqntid 128, 1, 1"))
    assert dirs(out)[".minnctapersm"] == ("2",)


@pytest.mark.parametrize("directive,block,reason", [
    (".reqntid 128", "256", ".reqntid 128 differs from the block 256: a launch with that block would fail"),
    (".reqntid 16, 16", "256", ".reqntid 16x16 differs from the block 256"),  # same threads, other extents
    (".maxntid 128", "256", ".maxntid 128 allows 128 threads, the block has 256: a launch with that block would fail"),
    (".maxntid 1024", "256", "lowering it would make launches the source allows fail"),
])
def test_block_directives_that_disagree_are_refused(directive, block, reason):
    out, rep = apply(f"launch_bounds{{minblocks=2,block={block}}}", kernel(directive))
    assert not rep.changed and reason in rep.refused[0].what
    assert emit(out) == emit(parse(kernel(directive)))


def test_a_maxntid_with_the_blocks_threads_is_kept():
    """.maxntid bounds the product of the extents (PTX ISA 11.4.2), so 256 fits 16x16."""
    out, _ = apply("launch_bounds{minblocks=2,block=16x16}", kernel(".maxntid 256, 1, 1"))
    assert dirs(out) == {".maxntid": ("256", "1", "1"), ".minnctapersm": ("2",)}


@pytest.mark.parametrize("directives,why", [
    ((), "the block size is unknown (no .reqntid); give launch_bounds{minblocks=2,block=X[xYxZ]}"),
    ((".maxntid 256",), "the block size is unknown (.maxntid 256 only bounds it)"),
])
def test_an_unknown_block_is_refused(directives, why):
    _, rep = apply("launch_bounds_2", kernel(*directives))
    assert not rep.changed and why in rep.refused[0].what


@pytest.mark.parametrize("target,pipeline,why", [
    ("sm_89", "launch_bounds{minblocks=25,block=32}", ".minnctapersm 25 is over the 24 blocks an SM holds on sm_89"),
    ("sm_89", "launch_bounds{minblocks=8,block=256}", "8 blocks of 256 threads need 64 warps, over the 48"),
    ("sm_89", "launch_bounds{minblocks=5,block=300}", "5 blocks of 300 threads need 50 warps"),  # 1500 threads fit
    ("sm_89", "launch_bounds{minblocks=1,block=2048}", "a block of 2048 threads is over the 1024"),
    ("sm_100", "launch_bounds{minblocks=2,block=256}", "no occupancy limits for sm_100"),
])
def test_blocks_that_can_never_be_resident_are_refused(target, pipeline, why):
    _, rep = apply(pipeline, kernel(target=target))
    assert not rep.changed and why in rep.refused[0].what


def test_the_targets_own_limits_decide():
    """64 warps per SM on sm_90, 48 on sm_89."""
    _, rep = apply("launch_bounds{minblocks=8,block=256}", kernel(target="sm_90"))
    assert rep.changed and "caps registers at 32" in rep.changed[0].what


def test_static_shared_memory_that_cannot_fit_is_refused():
    decls = "\t.shared .align 16 .b8 tile[40960];\n"
    text = kernel(decls=decls)
    _, rep = apply("launch_bounds{minblocks=3,block=128}", text)
    assert "3 blocks with 40960 static bytes of shared memory each do not fit" in rep.refused[0].what
    _, rep = apply("launch_bounds{minblocks=2,block=128}", text)
    assert rep.changed
    _, rep = apply("launch_bounds{minblocks=2,block=128,shared_bytes=16384}", text)
    assert "2 blocks with 40960 static + 16384 dynamic bytes" in rep.refused[0].what


def test_dynamic_shared_memory_of_the_launch_counts():
    """triton_histogram declares its shared memory .extern: at the manifest's
    launch 11 blocks fit, not 12 (the measurement that found the gap)."""
    spec = get("triton_histogram")
    m = parse(spec.ptx_text())
    launch = SimpleNamespace(block=spec.launch.block, shared_bytes=spec.launch.shared_bytes)
    p = Pipeline.parse("launch_bounds{minblocks=12}").passes[0]
    assert p.apply(m)[1].changed  # blind to the launch's shared memory
    rep = p.with_launch(launch).apply(m)[1]
    assert not rep.changed and "do not fit an SM" in rep.refused[0].what
    assert p.with_launch(launch).with_launch(launch) == p.with_launch(launch)
    assert Pipeline.parse("launch_bounds{minblocks=11}").passes[0].with_launch(launch).apply(m)[1].changed


def test_an_instruction_wider_than_the_cap_is_refused():
    text = (DATA / "mma_f64_wide.ptx").read_text()  # sm_90, names 40 registers
    _, rep = apply("launch_bounds{minblocks=8,block=256}", text)  # cap 32
    assert "names 40 registers at once, more than the 32" in rep.refused[0].what
    out, rep = apply("launch_bounds{minblocks=4,block=256}", text)  # cap 64
    assert rep.changed
    compile_ptx(emit(out), "sm_90")


def test_another_register_budget_is_refused():
    _, rep = apply("launch_bounds{minblocks=2,block=256}", kernel(".maxnreg 64"))
    assert "the source sets .maxnreg 64: a register budget is chosen already" in rep.refused[0].what
    text = (Path(__file__).parents[1] / "adversarial" / "setmaxnreg_budget.ptx").read_text()
    _, rep = apply("launch_bounds{minblocks=2,block=128}", text)
    assert "setmaxnreg" in rep.refused[0].what
    with pytest.raises(PipelineError, match="'launch_bounds_2' and 'maxnreg_64' are both in the register-budget"):
        Pipeline.parse("launch_bounds_2,maxnreg_64")


def test_a_source_minnctapersm_is_kept_unless_overridden():
    src = kernel(".reqntid 128", ".minnctapersm 4")
    out, rep = apply("launch_bounds{minblocks=4}", src)
    assert not rep.changed and not rep.refused and emit(out) == emit(parse(src))
    _, rep = apply("launch_bounds_2", src)
    assert "the source sets .minnctapersm 4 (use launch_bounds_2{override=True} to replace it)" in rep.refused[0].what
    out, rep = apply("launch_bounds_2{override=1}", src)
    assert dirs(out)[".minnctapersm"] == ("2",) and "replaced .minnctapersm 4 with 2" in rep.changed[0].what


def test_entry_option_and_funcs():
    text = (kernel().replace(".entry k(", ".entry a(").replace("k_param_0", "a_param_0")
            + kernel().split(".address_size 64\n")[1] + "\n.func helper()\n{\n\tret;\n}\n")
    out, rep = apply("launch_bounds{minblocks=2,block=64,entry=k}", text)
    assert [s.function for s in rep.changed] == ["k"]
    by = {f.name: {d.name for d in f.directives} for f in out.functions}
    assert by == {"a": set(), "k": {".maxntid", ".minnctapersm"}, "helper": set()}
    _, rep = apply("launch_bounds{minblocks=2,block=64,entry=nope}", text)
    assert not rep.changed and rep.refused[0].what == "no kernel named nope (kernels: a, k)"


def test_with_launch_binds_the_performance_block():
    launch = SimpleNamespace(block=(256, 1, 1))
    p = Pipeline.parse("launch_bounds_2").passes[0]
    bound = p.with_launch(launch, entry="k")
    assert str(bound) == "launch_bounds_2{block=256,entry=k}"  # no shared memory: the default
    assert bound.with_launch(launch) == bound
    with pytest.raises(PassError, match="names block 128, the performance launch uses 256"):
        Pipeline.parse("launch_bounds_2{block=128}").passes[0].with_launch(launch)
    other = Pipeline.parse("maxnreg_64").passes[0]
    assert other.with_launch(launch) is other
    pipe = Pipeline.parse("cache_cg,launch_bounds{minblocks=4}").with_launch(launch, "k")
    assert str(pipe) == "cache_cg,launch_bounds{block=256,entry=k,minblocks=4}"


def test_canonical_strings_round_trip():
    for s, canon in [("launch_bounds{minblocks=2}", "launch_bounds_2"),
                     ("launch_bounds{minblocks=3,block=256x1x1}", "launch_bounds{block=256,minblocks=3}"),
                     ("launch_bounds_2{block=16X16}", "launch_bounds_2{block=16x16}")]:
        p = Pipeline.parse(s)
        assert str(p) == canon and Pipeline.parse(str(p)) == p
    for bad in ("launch_bounds{minblocks=0}", "launch_bounds{minblocks=33}", "launch_bounds_2{block=0}",
                "launch_bounds_2{block=2x2x2x2}", "launch_bounds_2{block=a}", "launch_bounds_2{shared_bytes=-1}"):
        with pytest.raises(PipelineError):
            Pipeline.parse(bad)


def test_register_cap_is_the_occupancy_rule():
    lim = limits_for("sm_89")
    assert [register_cap(lim, 256, n) for n in range(1, 7)] == [255, 128, 80, 64, 48, 40]
    for t, n in [(96, 7), (128, 5), (1024, 1), (32, 24)]:
        cap = register_cap(lim, t, n)
        assert occupancy("sm_89", t, cap).limits["registers"] >= n > occupancy("sm_89", t, cap + 1).limits["registers"]


def pressure_kernel(directives: str = "") -> str:
    """160 values live at once: ptxas wants ~168 registers."""
    n = 160
    body = [f"\tld.volatile.global.f32 %f{i}, [%rd1+{4 * i}];" for i in range(n)]
    for j in range(8):
        body.append(f"\tmov.f32 %f{n + 1}, 0f00000000;")
        body += [f"\tfma.rn.f32 %f{n + 1}, %f{(i * (j + 3)) % n}, %f{(i + j) % n}, %f{n + 1};" for i in range(n)]
        body.append(f"\tst.volatile.global.f32 [%rd1+{4 * j}], %f{n + 1};")
    return (".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry k(.param .u64 p)\n" + directives
            + "{\n\t.reg .f32 %f<200>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [p];\n"
            + "\n".join(body) + "\n\tret;\n}\n")


@pytest.mark.parametrize("n", [3, 4, 6])
def test_ptxas_honours_it(n):
    """Registers drop so that N blocks of 256 threads fit, where before they did not."""
    before = compile_ptx(pressure_kernel(), "sm_89").kernels["k"].registers
    assert occupancy("sm_89", 256, before).blocks_per_sm < n
    out, _ = apply(f"launch_bounds{{minblocks={n},block=256}}", pressure_kernel())
    res = compile_ptx(emit(out), "sm_89")
    regs = res.kernels["k"].registers
    assert regs <= register_cap(limits_for("sm_89"), 256, n) and occupancy("sm_89", 256, regs).blocks_per_sm >= n
    assert not res.warnings


def test_verify_each_checks_it_on_corpus_kernels():
    """Only .minnctapersm added (beside a .reqntid): a register budget, equal
    by construction; an added .maxntid bounds the launches, so it is run."""
    for kid, pipeline, status in [("triton_vector_add", "launch_bounds_2", "hints-only"),
                                  ("cuda_layernorm_row", "launch_bounds{minblocks=2,block=%s}", "equal")]:
        spec = get(kid)
        block = "x".join(map(str, spec.launch.block))
        ve = VerifyEach(trials=1)
        res = PassManager(pipeline.replace("%s", block), instruments=[ve]).run(parse(spec.ptx_text()))
        assert res.changed, res.to_json()
        assert [c.status for c in ve.checks] == [status], ve.to_json()


def test_verify_each_reverts_a_minnctapersm_that_ptxas_ignores(monkeypatch):
    """The static checks refuse what ptxas would ignore; should one miss a case,
    ptxas's "minnctapersm will be ignored" warning reverts the pass (as it does
    for an ignored .maxnreg) instead of keeping a directive that means nothing."""
    monkeypatch.setattr(LaunchBounds, "_infeasible", lambda *a: None)
    ve = VerifyEach(equivalence=False)
    res = PassManager("launch_bounds{minblocks=30,block=32}", instruments=[ve]).run(parse(kernel()))
    rec = res.records[0]
    assert not res.changed and "minnctapersm will be ignored" in rec.reverted


@pytest.mark.parametrize("maxnreg,expect", [(100, 64), (40, 40)])
def test_ptxas_takes_the_smaller_cap_silently_with_maxnreg_beside_it(maxnreg, expect):
    """Why a source .maxnreg is refused: with both, ptxas quietly uses the
    smaller cap (no warning), so one of the two budgets would mean nothing."""
    res = compile_ptx(pressure_kernel(f".maxntid 256\n.minnctapersm 4\n.maxnreg {maxnreg}\n"), "sm_89")
    assert res.kernels["k"].registers == expect and not res.warnings


def test_a_module_older_than_the_directive_is_refused():
    m = parse(kernel(".reqntid 128"))
    m.version = "1.4"  # .minnctapersm came with PTX ISA 2.0 (opcodes.ENTRY_TUNING_DIRECTIVES)
    _, rep = Pipeline.parse("launch_bounds_2").passes[0].apply(m)
    assert ".minnctapersm needs PTX ISA 2.0; the module is .version 1.4" in rep.refused[0].what


def test_static_shared_memory_counts_what_the_entry_and_its_callees_use():
    from ptxopt.passes.launch_bounds import static_shared_bytes

    text = """.version 8.0
.target sm_89
.address_size 64
.shared .align 4 .b8 used_by_helper[4096];
.shared .align 4 .b8 unused[65536];
.shared .align 4 .f32 tile[256];
.func helper()
{
\t.reg .b32 %r<2>;
\tmov.u32 %r1, used_by_helper;
\tret;
}
.visible .entry k()
{
\t.reg .b32 %r<2>;
\t.shared .align 4 .b8 local[100];
\tmov.u32 %r1, tile;
\tcall helper, ();
\tret;
}
"""
    m = parse(text)
    assert static_shared_bytes(m, m.entries[0]) == 4096 + 16 * 16 * 4 + 100


def test_a_minnctapersm_without_a_block_bound_takes_effect():
    """ptxas ignores .minnctapersm alone (test_isa_facts); the block makes it count."""
    out, rep = apply("launch_bounds{minblocks=2,block=256}", kernel(".minnctapersm 2"))
    assert dirs(out) == {".maxntid": ("256",), ".minnctapersm": ("2",)}
    assert rep.changed[0].what.startswith("set .maxntid 256 and kept .minnctapersm 2 (ptxas ignored it")
    assert not compile_ptx(emit(out), "sm_89").warnings
