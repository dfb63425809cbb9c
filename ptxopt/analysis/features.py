"""Scalar kernel features for the learning layer.

The policy sees a kernel as the vector :func:`feature_vector`, in the order
of :data:`FEATURE_NAMES`. That order is an interface: a trained model
depends on it, so **append new features at the end** and never reorder or
rename. Every feature is a float; counts are raw (not log-scaled: the
learner normalises).

Definitions (counts are over the entry's own body, nested ``{ }`` scopes
included, called ``.func`` bodies excluded):

* ``n_instructions``, ``n_blocks`` (basic blocks), ``n_params``,
  ``has_loop`` (1.0 when the CFG has a back edge), ``maxnreg`` (the entry's
  ``.maxnreg``, 0 when unset).
* Category counts ``n_*``: ``int_arith`` and ``float_arith`` are pure
  arithmetic/logic/compare instructions by operation type (``setp.lt.f32`` is
  float; ``mov`` and conversions are not arithmetic); ``fma`` counts ``fma``
  and floating-point ``mad`` (also counted in ``float_arith``); ``sfu`` the
  transcendental/reciprocal ops; ``conversion`` ``cvt`` and ``cvta``;
  ``memory`` every memory instruction (loads, stores, atomics, prefetches,
  async copies); ``load``/``store`` plain loads (``ld``, ``ldu``, ``ldmatrix``,
  textures) and stores; ``ld_<space>``/``st_<space>`` by state space;
  ``ld_global_v1/v2/v4`` and ``st_global_*`` by vector width (``.v8`` counts
  as v4); ``control`` branches, calls, ``ret``, ``exit``; ``branch`` ``bra``
  and ``brx`` only; ``barrier``; ``atomic`` (``atom``, ``red``);
  ``sreg_read`` instructions reading a special register; ``collective`` warp
  shuffles/votes; ``mma`` tensor-core ops; ``guarded`` predicated instructions.
* ``ratio_*``: the count divided by ``n_instructions``. ``store_ratio``:
  stores / (loads + stores). ``ld_global_vec_ratio``/``st_global_vec_ratio``:
  the fraction of global loads/stores that are ``.v2`` or wider.
  ``ld_global_bytes``/``st_global_bytes``: bytes moved by one execution of
  every global load/store. ``arith_intensity``: arithmetic instructions per
  memory instruction.
* DAG: ``dag_max_nodes`` (largest block), ``dag_max_edges``,
  ``dag_total_edges``. ``critical_path_max`` is the longest unit-latency
  dependency chain of any one block; ``critical_path_sum`` adds the blocks'
  chains (the chain of the whole kernel if each block ran once, the usual
  case for the straight-line kernels of the corpus); ``critical_path_latency_max``
  the longest block chain weighted by :mod:`~ptxopt.analysis.rough_latency`;
  ``ilp`` = ``n_instructions / critical_path_sum``.
* Register pressure (:mod:`~ptxopt.analysis.pressure`): ``regp_pred``,
  ``regp_b16``, ``regp_b32``, ``regp_b64``, ``regp_total32``, ``regp_max_live``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis import classify
from ptxopt.analysis.function import FunctionAnalysis
from ptxopt.ptx.ir import Function, Module

if TYPE_CHECKING:  # numpy (~0.1 s to import) only for feature_vector's array
    import numpy as np

SPACES = ("global", "shared", "local", "param", "const", "generic")

_COUNTED = (
    "int_arith", "float_arith", "fma", "sfu", "conversion", "mov",
    "memory", "load", "store",
    *(f"ld_{s}" for s in SPACES), *(f"st_{s}" for s in SPACES if s != "const"),
    "ld_global_v1", "ld_global_v2", "ld_global_v4",
    "st_global_v1", "st_global_v2", "st_global_v4",
    "control", "branch", "barrier", "atomic", "sreg_read", "collective", "mma", "guarded",
)
_RATIOS = (
    "int_arith", "float_arith", "fma", "sfu", "conversion", "mov", "memory", "load", "store",
    "ld_global", "st_global", "ld_shared", "st_shared", "control", "barrier", "atomic",
)

FEATURE_NAMES: tuple[str, ...] = (
    "n_instructions", "n_blocks", "n_params", "has_loop", "maxnreg",
    *(f"n_{c}" for c in _COUNTED),
    *(f"ratio_{c}" for c in _RATIOS),
    "store_ratio", "ld_global_vec_ratio", "st_global_vec_ratio",
    "ld_global_bytes", "st_global_bytes", "arith_intensity",
    "dag_max_nodes", "dag_max_edges", "dag_total_edges",
    "critical_path_max", "critical_path_sum", "critical_path_latency_max", "ilp",
    "regp_pred", "regp_b16", "regp_b32", "regp_b64", "regp_total32", "regp_max_live",
)


def instruction_categories(ins) -> list[str]:
    """The ``n_*`` counters one instruction increments (see module doc)."""
    out: list[str] = []
    op = ins.opcode
    role = operand_facts.role(ins)
    if ins.guard is not None:
        out.append("guarded")
    if classify.reads_special_reg(ins):
        out.append("sreg_read")
    if op == "mov":
        out.append("mov")
    elif op in opcodes.CONVERSION_OPCODES:
        out.append("conversion")
    elif role == "pure" and op not in ("mma",):
        if classify.is_float_op(ins):
            out.append("float_arith")
            if classify.is_fma(ins):
                out.append("fma")
            if op in opcodes.SFU_OPCODES:
                out.append("sfu")
        else:
            out.append("int_arith")
    if op in ("mma",) or (op == "wmma" and "mma" in ins.modifiers):
        out.append("mma")
    if role == "collective":
        out.append("collective")
    is_ld = op in opcodes.LOADS or (op == "wmma" and "load" in ins.modifiers)
    is_st = op in opcodes.STORES or (op == "wmma" and "store" in ins.modifiers)
    if is_ld or is_st or opcodes.is_memory(ins):
        out.append("memory")
    if is_ld or is_st:
        space = opcodes.mem_space(ins)
        d = "ld" if is_ld else "st"
        out.append("load" if is_ld else "store")
        if space != "const" or is_ld:
            out.append(f"{d}_{space}")
        if space == "global" and op in ("ld", "ldu", "st"):
            w = opcodes.vector_width(ins)
            out.append(f"{d}_global_v{1 if w == 1 else 2 if w == 2 else 4}")
    if opcodes.is_control(ins):
        out.append("control")
        if op in opcodes.BRANCH_OPCODES:
            out.append("branch")
    if opcodes.is_barrier(ins):
        out.append("barrier")
    if opcodes.is_atomic(ins):
        out.append("atomic")
    return out


def _entry(module: Module, entry: str | Function | None) -> Function:
    if isinstance(entry, Function):
        return entry
    if entry is not None:
        return module.function(entry)
    if module.entries:
        return module.entries[0]
    for f in module.functions:
        if f.body is not None:
            return f
    raise ValueError("module has no function with a body")


def function_features(fa: FunctionAnalysis) -> dict[str, float]:
    """Features of an analysed function, keys in :data:`FEATURE_NAMES` order."""
    fn = fa.function
    cfg = fa.cfg
    counts: Counter = Counter()
    ld_bytes = st_bytes = 0
    for ins in cfg.instructions:
        cats = instruction_categories(ins)
        counts.update(cats)
        if "ld_global" in cats or "st_global" in cats:
            nb = opcodes.access_bytes(ins) or 0
            if "ld_global" in cats:
                ld_bytes += nb
            else:
                st_bytes += nb
    n = len(cfg.instructions)
    f: dict[str, float] = {}
    f["n_instructions"] = n
    f["n_blocks"] = len(cfg.blocks)
    f["n_params"] = len(fn.params or ())
    f["has_loop"] = 1.0 if cfg.has_loop else 0.0
    d = fn.directive(".maxnreg")
    try:
        f["maxnreg"] = int(d.args[0]) if d and d.args else 0
    except ValueError:
        f["maxnreg"] = 0
    for c in _COUNTED:
        f[f"n_{c}"] = counts[c]
    for c in _RATIOS:
        f[f"ratio_{c}"] = counts[c] / n if n else 0.0
    ls = counts["load"] + counts["store"]
    f["store_ratio"] = counts["store"] / ls if ls else 0.0
    gl, gs = counts["ld_global"], counts["st_global"]
    f["ld_global_vec_ratio"] = (counts["ld_global_v2"] + counts["ld_global_v4"]) / gl if gl else 0.0
    f["st_global_vec_ratio"] = (counts["st_global_v2"] + counts["st_global_v4"]) / gs if gs else 0.0
    f["ld_global_bytes"] = ld_bytes
    f["st_global_bytes"] = st_bytes
    arith = counts["int_arith"] + counts["float_arith"]
    f["arith_intensity"] = arith / counts["memory"] if counts["memory"] else float(arith)
    dags = fa.dags
    f["dag_max_nodes"] = max((g.number_of_nodes() for g in dags), default=0)
    f["dag_max_edges"] = max((g.number_of_edges() for g in dags), default=0)
    f["dag_total_edges"] = sum(g.number_of_edges() for g in dags)
    cps = [c.length for c in fa.critical_paths]
    f["critical_path_max"] = max(cps, default=0)
    f["critical_path_sum"] = sum(cps)
    f["critical_path_latency_max"] = max((c.length for c in fa.latency_paths), default=0)
    f["ilp"] = n / f["critical_path_sum"] if f["critical_path_sum"] else 0.0
    p = fa.pressure
    for c in ("pred", "b16", "b32", "b64"):
        f[f"regp_{c}"] = p.by_class[c]
    f["regp_total32"] = p.total32
    f["regp_max_live"] = p.max_live
    assert tuple(f) == FEATURE_NAMES, "feature computation out of sync with FEATURE_NAMES"
    return {k: float(v) for k, v in f.items()}


def kernel_features(module: Module, entry: str | Function | None = None) -> dict[str, float]:
    """Features of one entry (default: the first ``.entry`` with a body),
    keys in :data:`FEATURE_NAMES` order."""
    return function_features(FunctionAnalysis(_entry(module, entry)))


def feature_vector(module: Module, entry: str | Function | None = None) -> np.ndarray:
    """:func:`kernel_features` as a float64 array in :data:`FEATURE_NAMES` order."""
    f = kernel_features(module, entry)
    import numpy as np

    return np.array([f[k] for k in FEATURE_NAMES], dtype=np.float64)
