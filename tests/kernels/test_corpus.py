"""Tests of the committed PTX corpus and its loader (``ptxopt.kernels.corpus``).

These read committed files only: no nvcc, no Triton, no GPU.  The PTX is
checked with regexes on purpose, so that the corpus does not depend on
ptxopt's own parser.  The ``slow`` test runs ptxas (shipped in the nvidia
wheels the package depends on) over every kernel.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ptxopt.kernels import corpus
from ptxopt.kernels.corpus import CorpusError, KernelSpec, load_manifest, select

ROOT = Path(__file__).resolve().parents[2] / "corpus"
KERNELS = load_manifest(ROOT)
BY_ID = {k.id: k for k in KERNELS}
GEMM = [k for k in KERNELS if k.family == "gemm_tile"]

ROLES = {"input", "output", "inout", "scalar", "scratch"}
DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8, "u8": 1, "s8": 1,
               "u16": 2}

ENTRY_RE = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)


def entry_params(ptx: str, entry: str) -> list[str]:
    """``.param`` names of one entry: the last word of each declaration."""
    for name, body in ENTRY_RE.findall(ptx):
        if name == entry:
            return [re.sub(r"\[.*\]$", "", d.split()[-1]) for d in body.split(",") if d.strip()]
    raise AssertionError(f"no .entry {entry} in PTX")


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(f"_corpus_{name}", ROOT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    sys.path.insert(0, str(ROOT))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT))
        # corpus/triton and corpus/cuda are folders: with ROOT on the path, an
        # `import triton` in the script (real Triton absent) caches them as
        # namespace packages, and later code that probes for Triton (torch's
        # optimisers do) then finds a "triton" without triton.language.
        for name in set(sys.modules) - before:
            paths = getattr(sys.modules[name], "__path__", None) or []
            if any(str(p).startswith(str(ROOT)) for p in paths):
                del sys.modules[name]
    return module


def ids(kernels):
    return [k.id for k in kernels]


# -- manifest ----------------------------------------------------------------


def test_manifest_parses_and_is_schema_1():
    data = json.loads((ROOT / "manifest.json").read_text())
    assert data["schema"] == 1
    assert len(data["kernels"]) == len(KERNELS) > 0
    assert all(isinstance(k, KernelSpec) for k in KERNELS)


def test_ids_unique_and_paths_exist():
    counts = Counter(ids(KERNELS))
    assert not [i for i, c in counts.items() if c > 1]
    for k in KERNELS:
        assert k.ptx_path.is_file(), k.path
        assert (ROOT / k.source).is_file(), k.source


def test_counts_per_compiler():
    by_compiler = Counter(k.compiler for k in KERNELS)
    assert set(by_compiler) == {"ptxopt-gen", "nvcc", "triton"}
    assert len(GEMM) == by_compiler["ptxopt-gen"] == 68
    assert by_compiler["nvcc"] >= 20
    assert by_compiler["triton"] >= 10


def test_cuda_sources_sit_beside_their_ptx():
    for k in select("nvcc", KERNELS):
        if k.generated:  # the CUDA C families: one template, many entries (gen_cuda_families.py)
            assert k.source.startswith("families/cuda_templates/") and k.path == f"families/{k.family}/{k.entry}.ptx"
            assert "extern \"C\" __global__ void KNAME(" in (ROOT / k.source).read_text()
            continue
        assert k.source == f"cuda/{k.entry}.cu"
        assert k.path == f"cuda/{k.entry}.ptx"
        assert 'extern "C" __global__' in (ROOT / k.source).read_text()


@pytest.mark.parametrize("kernel", KERNELS, ids=ids(KERNELS))
def test_params_match_ptx_entry(kernel):
    ptx = kernel.ptx_text()
    assert [p.name for p in kernel.params] == entry_params(ptx, kernel.entry)


@pytest.mark.parametrize("kernel", KERNELS, ids=ids(KERNELS))
def test_header_matches_manifest(kernel):
    ptx = kernel.ptx_text()
    assert re.search(rf"^\.version {re.escape(kernel.ptx_version)}\s*$", ptx, re.M)
    assert re.search(rf"^\.target {kernel.arch}\b", ptx, re.M)
    assert re.search(r"^\.address_size 64\s*$", ptx, re.M)


@pytest.mark.parametrize("kernel", KERNELS, ids=ids(KERNELS))
def test_params_and_launch_are_well_formed(kernel):
    launch = kernel.launch
    assert len(launch.grid) == len(launch.block) == 3
    assert all(d >= 1 for d in launch.grid + launch.block)
    # Small enough for a CPU PTX interpreter.
    assert launch.threads <= 4096
    assert launch.block[0] * launch.block[1] * launch.block[2] <= 1024
    assert launch.shared_bytes >= 0
    for p in kernel.params:
        assert p.role in ROLES, p
        assert p.dtype in DTYPE_BYTES, p
        if p.role == "scalar":
            assert p.value is not None and p.count is None, p
        else:
            assert isinstance(p.count, int) and p.count >= 0, p
            assert p.align and p.align & (p.align - 1) == 0, p
            assert p.count * DTYPE_BYTES[p.dtype] <= 64 * 1024, p
            if p.role != "scratch":
                assert p.count > 0, p
    if kernel.compiler == "triton":
        # Triton 3.9 appends a global and a profile scratch pointer.
        assert [p.role for p in kernel.params[-2:]] == ["scratch", "scratch"]
        assert launch.block[0] % 32 == 0 and launch.block[1:] == (1, 1)


# -- gemm_tile ---------------------------------------------------------------


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text, re.M))


@pytest.mark.parametrize("kernel", GEMM, ids=ids(GEMM))
def test_gemm_tile_instruction_counts(kernel):
    m, n, k = (kernel.shape_dict[d] for d in "mnk")
    assert kernel.id == kernel.entry == f"gemm_tile_{m}x{n}x{k}"
    ptx = kernel.ptx_text()
    assert _count(r"^\s*fma\.rn\.f32\s", ptx) == m * n * k
    assert _count(r"^\s*ld\.global\.f32\s", ptx) == m * k + k * n
    assert _count(r"^\s*st\.global\.f32\s", ptx) == m * n
    assert _count(r"^\s*mov\.f32\s+%f\d+, 0f00000000;", ptx) == m * n
    assert _count(r"\.param \.u64 \.ptr \.global \.align 16 ", ptx) == 3
    assert [p.count for p in kernel.params] == [m * k, k * n, m * n]
    assert kernel.launch.grid == kernel.launch.block == (1, 1, 1)


def test_gemm_tile_shapes():
    shapes = {tuple(k.shape_dict[d] for d in "mnk") for k in GEMM}
    small = {(m, n, k) for m in (2, 4, 6, 8) for n in (2, 4, 6, 8) for k in (2, 4, 6, 8)}
    assert shapes == small | {(d, d, d) for d in (10, 12, 14, 16)}
    assert len(BY_ID["gemm_tile_16x16x16"].ptx_text().splitlines()) > 5000


def test_gemm_generator_is_deterministic(tmp_path):
    gen = load_script("gen_gemm_tile")
    written = gen.write_all(tmp_path)
    assert len(written) == 68
    committed = sorted(p.name for p in (ROOT / "gemm_tile").glob("*.ptx"))
    assert sorted(p.name for p in written) == committed
    for path in written:
        assert path.read_bytes() == (ROOT / "gemm_tile" / path.name).read_bytes(), path.name
    assert gen.gemm_tile_ptx(4, 6, 8) == gen.gemm_tile_ptx(4, 6, 8)


def test_manifest_gemm_entries_and_layout_are_reproducible():
    """The regeneration script rebuilds the gemm entries and the manifest text
    unchanged (this part needs no nvcc or Triton)."""
    regen = load_script("regenerate")
    writer = regen.Writer(dry_run=True)
    gemm = regen.build_gemm(writer)
    assert writer.changes == []
    data = json.loads((ROOT / "manifest.json").read_text())
    assert [k for k in data["kernels"] if k["compiler"] == "ptxopt-gen"] == gemm
    assert regen.manifest_text(data["kernels"]) == (ROOT / "manifest.json").read_text()


# -- performance launches -----------------------------------------------------------

RUN = [k for k in KERNELS if k.compiler in ("nvcc", "triton")]


def _entry_fn(kernel):
    from ptxopt.ptx.parser import parse

    return next(f for f in parse(kernel.ptx_text()).entries if f.name == kernel.entry)


def test_every_nvcc_and_triton_kernel_has_a_performance_launch_and_gemm_tile_none():
    assert len([k for k in RUN if not k.generated]) == 44
    assert all(k.performance is not None and k.performance.problem for k in RUN)
    assert all(k.performance is None for k in GEMM)  # their objective stays one warp's latency
    assert set(RUN) == set(select("cuda,triton", KERNELS))


@pytest.mark.parametrize("kernel", RUN, ids=ids(RUN))
def test_performance_launch_is_one_a_gpu_runs(kernel):
    """The performance launch fits its entry (parsed from the PTX): at most
    1024 threads, the block .reqntid demands, every scalar parameter given by
    .param name, Triton's compiled block/shared bytes and 16-divisibility;
    and it is a performance launch, not the check launch."""
    from ptxopt.equivalence.launch_contract import check_performance
    from ptxopt.equivalence.launch import Origin, Role, performance_of

    perf = performance_of(kernel)
    assert (perf.role, perf.origin, perf.entry) == (Role.PERFORMANCE, Origin.MANIFEST, kernel.entry)
    assert perf.source == f"corpus:{kernel.id} performance"
    assert perf.threads_per_block <= 1024 and perf.blocks >= 1
    fn = _entry_fn(kernel)
    assert check_performance(perf, fn) == perf  # .reqntid/.maxntid and parameter names
    req = re.search(r"\.reqntid\s+([\d, ]+)", kernel.ptx_text())
    if req:
        assert perf.block == tuple((list(map(int, req.group(1).split(","))) + [1, 1])[:3])
    scalars = {p.name: p for p in kernel.params if p.role == "scalar"}
    assert set(perf.scalars) == set(scalars)
    for name, value in perf.scalars.items():
        assert isinstance(value, float) == scalars[name].dtype.startswith("f"), name
    if kernel.compiler == "triton":
        assert perf.block == kernel.launch.block and perf.shared_bytes == kernel.launch.shared_bytes
        by_arg = {p.arg: p.name for p in kernel.params}
        assert all(perf.scalars[by_arg[a]] % 16 == 0 for a in kernel.divisible_by_16 if by_arg[a] in scalars)
    # what users run is (much) bigger than the interpreter's check launch
    threads = perf.blocks * perf.threads_per_block
    assert threads >= kernel.launch.threads
    assert threads >= 1 << 16 or kernel.id in {"cuda_attention_small", "triton_attention"}, threads


def test_cuda_performance_launches_come_from_the_sources():
    """Regenerating keeps them: each .cu file's ``@corpus performance``/``problem``
    lines give exactly its manifest entry (no nvcc needed for this part)."""
    regen = load_script("regenerate")
    data = {k["id"]: k for k in json.loads((ROOT / "manifest.json").read_text())["kernels"]}
    for k in select("nvcc", KERNELS):
        if k.generated:
            continue  # gen_cuda_families.py writes theirs (test_generated_families_are_many_grouped_and_recorded)
        meta = regen.parse_cu_metadata(ROOT / k.source)
        perf = meta["performance"]
        entry = data[k.id]
        assert regen.performance_entry(k.id, perf["grid"], perf["block"], perf["shared"], perf["values"],
                                       meta["problem"], entry["params"]) == entry["performance"], k.id


def test_the_generator_refuses_a_performance_launch_no_gpu_runs():
    regen = load_script("regenerate")
    params = [{"name": "k_param_0", "arg": "n", "role": "scalar"}, {"name": "k_param_1", "arg": "x", "role": "input"},
              {"name": "k_param_2", "arg": "global_scratch", "role": "scratch", "bytes_per_cta": 4}]
    ok = regen.performance_entry("k", [8, 1, 1], [256, 1, 1], 0, {"n": 2048, "x": 2048}, "2048 elements",
                                 params, ["n"])
    assert ok["scalars"] == {"k_param_0": 2048} and ok["block"] == [256, 1, 1]
    assert ok["counts"] == {"k_param_1": 2048, "k_param_2": 32}  # scratch: bytes per CTA x blocks
    for args, message in [
        (([8, 1, 1], [2048, 1, 1], 0, {"n": 2048, "x": 2048}, "p"), "1024"),
        (([8, 1, 1], [256, 1, 1], 0, {"x": 2048}, "p"), "arguments"),
        (([8, 1, 1], [256, 1, 1], 0, {"n": 2048}, "p"), "arguments"),
        (([8, 1, 1], [256, 1, 1], 0, {"n": 2048, "x": 2048, "m": 1}, "p"), "arguments"),
        (([8, 1, 1], [256, 1, 1], 0, {"n": 2047, "x": 2048}, "p"), "16-divisibility"),
        (([8, 1, 1], [256, 1, 1], 0, {"n": 2048, "x": 0}, "p"), "not a positive integer"),
        (([8, 1, 1], [256, 1, 1], 0, {"n": 2048, "x": 2048}, ""), "problem"),
    ]:
        with pytest.raises(SystemExit, match=message):
            regen.performance_entry("k", *args, params, ["n"])


def test_performance_spec_is_the_kernel_at_its_performance_size():
    """Buffers sized for the performance problem (what a GPU run allocates), the
    check launch's kernel otherwise; a manifest entry stays a valid contract."""
    from ptxopt.equivalence.launch_contract import contract_from_json, performance_from_json
    from ptxopt.sim.occupancy import footprint_of_spec

    data = {k["id"]: k for k in json.loads((ROOT / "manifest.json").read_text())["kernels"]}
    for k in RUN:
        big = k.performance_spec()
        assert big.launch.grid == k.performance.grid and big.launch.block == k.performance.block
        assert {p.name for p in big.params if p.role != "scalar"} == dict(k.performance.counts).keys()
        assert {p.name: p.value for p in big.params if p.role == "scalar"} == k.performance.scalars
        assert all(p.count >= 1 for p in big.params if p.role in ("input", "output", "inout"))
        assert footprint_of_spec(big) > footprint_of_spec(k) or k.id == "cuda_attention_small"  # one head, fixed
        perf = performance_from_json(data[k.id], k.id)
        assert (perf.grid, perf.block, perf.scalars) == (k.performance.grid, k.performance.block,
                                                         k.performance.scalars)
        assert contract_from_json(data[k.id], k.id).grid == k.launch.grid  # the check launch stays apart
    assert BY_ID["gemm_tile_2x2x2"].performance_spec() is None
    # 2^24 f32 in and out: 128 MiB
    assert footprint_of_spec(BY_ID["cuda_vector_add"].performance_spec()) == 3 * 4 << 24


def test_loader_refuses_a_performance_scalar_that_is_no_scalar_parameter(tmp_path):
    data = json.loads((ROOT / "manifest.json").read_text())
    kern = next(k for k in data["kernels"] if k["id"] == "cuda_saxpy")
    kern["performance"]["scalars"]["saxpy_param_2"] = 4  # x, a buffer
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": 1, "kernels": [kern]}))
    with pytest.raises(CorpusError, match="scalars \\['saxpy_param_2'\\] are not scalar parameters"):
        load_manifest(tmp_path)
    del kern["performance"]["scalars"]["saxpy_param_2"]
    kern["performance"]["counts"]["saxpy_param_0"] = 4  # n, a scalar
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": 1, "kernels": [kern]}))
    with pytest.raises(CorpusError, match="counts \\['saxpy_param_0'\\] are not buffer parameters"):
        load_manifest(tmp_path)


# -- loader / selectors --------------------------------------------------------


def test_corpus_root_default_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("PTXOPT_CORPUS", raising=False)
    assert corpus.corpus_root() == ROOT
    monkeypatch.setenv("PTXOPT_CORPUS", str(tmp_path))
    assert corpus.corpus_root() == tmp_path.resolve()
    with pytest.raises(CorpusError, match="no corpus manifest"):
        load_manifest()


def test_select_by_compiler_family_id_and_all(monkeypatch):
    monkeypatch.delenv("PTXOPT_CORPUS", raising=False)
    assert len(select("all")) == len(KERNELS)
    assert ids(select("gemm_tile")) == ids(GEMM)
    assert ids(select("cuda")) == ids(select("nvcc"))
    assert {k.compiler for k in select("cuda")} == {"nvcc"}
    assert {k.compiler for k in select("triton")} == {"triton"}
    assert ids(select("gemm_tile_2x4x6")) == ["gemm_tile_2x4x6"]
    softmax = select("softmax")
    assert softmax and {k.family for k in softmax} == {"softmax"}
    assert {k.compiler for k in softmax} >= {"nvcc", "triton"}
    both = select("softmax,gemm_tile_2x2x2")
    assert set(ids(both)) == set(ids(softmax)) | {"gemm_tile_2x2x2"}


def test_unknown_selector_lists_families():
    with pytest.raises(CorpusError) as err:
        select("no_such_kernel", KERNELS)
    message = str(err.value)
    assert "no_such_kernel" in message
    for family in {k.family for k in KERNELS}:
        assert family in message


def test_specs_are_frozen_and_read_ptx():
    k = BY_ID["gemm_tile_2x2x2"]
    with pytest.raises(Exception):
        k.id = "x"  # type: ignore[misc]
    assert hash(k) == hash(BY_ID["gemm_tile_2x2x2"])
    assert ".entry gemm_tile_2x2x2(" in k.ptx_text()
    assert corpus.get("gemm_tile_2x2x2", KERNELS) == k


def test_families_cover_the_brief():
    families = {k.family for k in KERNELS}
    assert {"gemm_tile", "elementwise", "reduction", "scan", "normalization", "softmax", "matmul",
            "attention", "loss", "gather", "histogram", "transpose"} <= families


# -- ptxas (slow) ---------------------------------------------------------------


def _ptxas_for(version: str) -> Path:
    """ptxas 12.9 accepts PTX up to ISA 8.8; nvcc 13's ISA 9.0 needs 13.x."""
    major, minor = (int(x) for x in version.split("."))
    sub = "cuda_nvcc" if (major, minor) <= (8, 8) else "cu13"
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations if spec else []):
        candidate = Path(base) / sub / "bin" / "ptxas"
        if candidate.is_file():
            return candidate
    return Path("nvidia", sub, "bin", "ptxas")


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS, ids=ids(KERNELS))
def test_ptxas_compiles(kernel):
    ptxas = _ptxas_for(kernel.ptx_version)
    if not ptxas.is_file():
        pytest.skip(f"{ptxas} not installed")
    proc = subprocess.run([str(ptxas), f"-arch={kernel.arch}", str(kernel.ptx_path), "-o", "/dev/null"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# -- generated families --------------------------------------------------------

GENERATED = [k for k in KERNELS if k.generated]


def test_generated_families_are_many_grouped_and_recorded():
    """At least 12 families beyond gemm_tile in template groups, every kernel
    with a group, its runtime loops and the Triton version it was made with;
    GENERATION.json records seed and versions, and the generator's variants
    are a function of (seed, family, count) alone."""
    import importlib.util

    families = Counter(k.family for k in GENERATED)
    assert len(families) >= 12 and len(GENERATED) >= 200
    groups = {k.group for k in GENERATED}
    assert len(groups) >= 10
    # softmax, layernorm and rmsnorm share one template group, as do the
    # hand-written row reductions
    assert {k.group for k in GENERATED if k.family in ("softmax_rows", "layernorm_rows", "rmsnorm_rows")} \
        == {k.group for k in KERNELS if k.family in ("softmax", "normalization")} == {"row_reduction"}
    record = json.loads((ROOT / "families" / "GENERATION.json").read_text())
    assert record["kernels"] == len(GENERATED)
    for k in GENERATED:
        assert k.path.startswith(f"families/{k.family}/") and k.id == "gen_" + Path(k.path).stem
        assert k.generator.startswith(f"triton {record['triton']} " if k.compiler == "triton"
                                      else f"nvcc {record['nvcc']} {record['nvcc_flags']} -DKNAME={k.entry} ")
        assert k.performance is not None
        for loop in map(dict, k.loops):
            assert loop["trips_check"] >= 1 and loop["trips_performance"] >= 1, (k.id, loop)
            assert loop["bound"] in {p.arg for p in k.params if p.role == "scalar"}, (k.id, loop)
    assert sum(1 for k in GENERATED if k.loops) >= len(GENERATED) // 2  # runtime trip counts are common
    spec = importlib.util.spec_from_file_location("gen_families_under_test", ROOT / "gen_families.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for family in ("gemm_kloop", "softmax_rows"):
        first = gen.variants(family, record["seed"], record["per_family"])
        assert first == gen.variants(family, record["seed"], record["per_family"])
        raw = json.loads((ROOT / "manifest.json").read_text())["kernels"]
        assert [v["constexprs"] for v in first] == [k["triton"]["constexprs"] for k in raw if k["family"] == family]


def test_cuda_families_are_recorded_and_reproducible():
    """The CUDA C families (gen_cuda_families.py): at least 3, in template
    groups the Triton families share, every kernel with a runtime loop; the
    manifest's nvcc -D flags are exactly what the seeded sampler draws (no nvcc
    needed), and the PTX keeps nvcc 13's .version 9.0 (no fix-up)."""
    gen = load_script("gen_cuda_families")
    record = json.loads((ROOT / "families" / "GENERATION.json").read_text())
    cu = [k for k in GENERATED if k.compiler == "nvcc"]
    assert set(record["cuda_families"]) == {k.family for k in cu} == set(gen.CUDA_FAMILIES)
    assert len(record["cuda_families"]) >= 3 and len(cu) == len(gen.CUDA_FAMILIES) * record["per_family"]
    triton_groups = {k.group for k in GENERATED if k.compiler == "triton"}
    assert {k.group for k in cu} <= triton_groups
    assert all(k.loops and k.ptx_version == "9.0" for k in cu)
    for family in gen.CUDA_FAMILIES:
        drawn = gen.variants(family, record["seed"], record["per_family"])
        assert drawn == gen.variants(family, record["seed"], record["per_family"])
        made = [k for k in cu if k.family == family]
        for i, (v, k) in enumerate(zip(drawn, made)):
            flags = " ".join(gen.NVCC_FLAGS + gen._defines(k.entry, v["macros"]))
            assert k.generator == f"nvcc {record['nvcc']} {flags}", k.id
            assert (k.launch.grid, k.launch.block) == (tuple(v["grid"]), tuple(v["block"])), k.id
            assert [dict(lp) for lp in k.loops] == v["loops"], k.id


def test_select_understands_template_groups(monkeypatch):
    monkeypatch.delenv("PTXOPT_CORPUS", raising=False)
    rows = select("row_reduction", KERNELS)
    assert {k.family for k in rows} >= {"softmax", "normalization", "softmax_rows", "layernorm_rows", "rmsnorm_rows"}
    assert ids(select("group:row_reduction", KERNELS)) == ids(rows)
    # a family name keeps meaning the family, even where a group shares it
    assert {k.family for k in select("softmax", KERNELS)} == {"softmax"}
    # gemv is a family (the generated ones) and a group (with cuda_gemv_warp, a matmul-family GEMV)
    assert set(ids(select("group:gemv", KERNELS))) == set(ids(select("gemv", KERNELS))) | {"cuda_gemv_warp"}
    with pytest.raises(CorpusError, match="a group"):
        select("no_such_group", KERNELS)
    with pytest.raises(CorpusError):
        select("group:softmax", KERNELS)  # softmax is a family, not a group


def test_generated_kernels_enter_the_tests_through_a_small_slice():
    """Fast tier: at most one generated kernel per group and compiler, cheap to interpret;
    slow tier: every family; hand-written kernels are untouched by the tiers."""
    from corpus_tiers import FAST_COST, fast_kernels, full_corpus, generated_tier, slow_kernels

    tier = {k.id: generated_tier(k.id) for k in KERNELS}
    assert all(tier[k.id] is None for k in KERNELS if not k.generated)
    fast = [k for k in GENERATED if tier[k.id] == "fast"]
    assert len({(k.group, k.compiler) for k in fast}) == len(fast) >= 10  # one per group and compiler
    assert all(k.launch.threads * k.ptx_text().count(";") <= FAST_COST for k in fast)
    assert {k.family for k in GENERATED if tier[k.id] in ("fast", "slow")} == {k.family for k in GENERATED}
    assert len(fast_kernels(KERNELS)) == len(KERNELS) - len(GENERATED) + len(fast)
    if not full_corpus():
        assert len(slow_kernels(KERNELS)) < len(KERNELS) - len(GENERATED) // 2


def test_load_manifest_parses_once_and_sees_a_rewrite(tmp_path):
    """The parsed manifest is reused (it is ~700 KB) but a rewritten file is
    read again, and callers get their own list."""
    raw = json.loads((ROOT / "manifest.json").read_text())
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"schema": 1, "kernels": raw["kernels"][:3]}))
    first = load_manifest(tmp_path)
    first.pop()
    assert len(load_manifest(tmp_path)) == 3
    path.write_text(json.dumps({"schema": 1, "kernels": raw["kernels"][:2]}))
    assert [k.id for k in load_manifest(tmp_path)] == [k["id"] for k in raw["kernels"][:2]]
