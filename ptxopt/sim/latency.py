"""Per-architecture latencies of the ``sim`` backend, in one place.

Only *variable-latency* instructions need a number here: for fixed-latency
ones (FFMA, IADD3, MOV ...) ptxas already encodes the wait in the stall
count of the control bits, and the model replays it.  A value below is the
number of cycles from the *issue* of a producer to the release of its
dependency barrier (scoreboard), i.e. the earliest cycle a dependent
instruction waiting on that barrier can issue.

Where the numbers come from
---------------------------
The memory-hierarchy values (``l1_hit``, ``l2_hit``, ``dram``) are
dependent-load (pointer-chase) latencies: one thread follows a chain of
64-bit pointers, so the time per hop is exactly "load issue -> dependent load
issue", the quantity this model needs.  They are read off the published
result files of the ``gpu-latency`` benchmark of the RRZE ``gpu-benches``
suite (Dominik Ernst, FAU Erlangen; https://github.com/RRZE-HPC/gpu-benches,
files ``gpu-latency/{a100_80,l40,h100_pcie,gh200,v100}.txt``; cycles =
measured time x the nominal clock printed in the file, so a card that
throttled below that clock makes the cycle figure an over-estimate).  Each
figure is the plateau value of the working-set range named in its comment;
no value was fitted to any ptxopt result.  Cross-checks:

* V100 (sm_70, same suite, ``v100.txt``): L1 28.0 cycles, L2 212 cycles.
  Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
  Microbenchmarking" (arXiv:1804.06826, 2018) report an L1 hit latency of
  28 cycles on V100 as well (their L2 figure, of the same order, was not
  re-checked here), so the suite's method agrees with the Volta paper.
* L40 (sm_89): "Non-Uniform L2 Cache Latency Across the Streaming
  Multiprocessors of an NVIDIA L40" (arXiv:2606.22588) reports an L2-hit
  latency near 279 cycles on average, 222-339 depending on the SM; the
  suite's plateau is 276.5.

Everything else is an **educated estimate** and says so: no public
microbenchmark of, e.g., the register-read release of a store or of R2UR
was found.  These values only matter for kernels that use such instructions
on their critical path; gemm_tile kernels are dominated by LDG/LDL/STL and
the stall counts.

Calibration against hardware
----------------------------
``prefetch_fill_bytes`` (what an L1 prefetch fills) was 128 (the whole line:
the PTX ISA says ``prefetch`` brings "the line containing" the address into
the cache level).  It is now 32, one sector, for a physical reason and a
measured one.  Physical: the L1 of Volta and later is sectored (four 32-byte
sectors per 128-byte line, each with its own valid bit); a miss fetches only
the sectors requested (NVIDIA Nsight Compute "Kernel Profiling Guide",
memory-tables section: requests are served by sector, "sectors/request"), and
no public microbenchmark shows a PF1 filling more than its own sector.
Measured: on an sm_89 L4 (SM clock, 50 warm-up + 200 timed launches, one
thread, 64 gemm_tile kernels) prefetches were "neutral on single-thread
kernels" and appeared in about 5 of 64 best greedy pipelines together with
``split_ld``, store hints and the newer reorders, while a whole-line fill made
the model credit ``prefetch_L1`` with -19% on gemm_tile_4x4x4, -21% on
14x14x14 and put it into 54 of 68 best pipelines.  With a one-sector fill a
prefetch only warms the sector that the first load of its group touches
anyway, i.e. it is close to neutral, as measured.

Architectures without a table of their own use the table of the same major
version (sm_86 -> sm_80, sm_90a -> sm_90), and the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ArchLatencies:
    """Cycles from issue to barrier release, per latency class (see module doc)."""

    arch: str
    l1_hit: int  # global load hitting L1 (sector already in L1 or being filled)
    l2_hit: int  # global load served by L2: first touch of a sector, or an L1-bypassing load
    dram: int  # global load missing L2 (not used by default: data is L2-warm, see model doc)
    local: int  # LDL (spill reload / local array): local memory is cached in L1
    shared: int  # LDS / LDSM
    constant: int  # LDC (sm_90 loads kernel parameters with LDC)
    special_reg: int  # S2R / S2UR
    uniform_move: int  # R2UR
    mufu: int  # MUFU.* (ex2, rcp, rsq, sin ...)
    shuffle: int  # SHFL.*
    convert: int  # I2F / F2I / F2F / FRND when they set a barrier
    fp64: int  # DADD/DMUL/DFMA when they set a barrier (low-rate FP64 parts)
    tensor: int  # HMMA / IMMA / HGMMA when they set a barrier
    atomic_global: int  # ATOMG / RED / ATOM
    atomic_shared: int  # ATOMS
    other: int  # any other instruction that sets a write barrier
    operand_read: int  # read-barrier release: source registers of a memory op have been read
    issue_per_cycle: float = 1.0  # warp instructions one scheduler issues per cycle
    # Register-file banks, each reading one warp-wide register per cycle (ptxopt.sim.regbank): an
    # arithmetic instruction holds the read stage for max(reads per bank) cycles.  0: not modelled
    # (no published measurement for the architecture).
    register_banks: int = 0
    # How the bank reads delay issue (ptxopt.sim.regbank): 0, the plain rule (an instruction holds
    # the read stage for max(reads per bank) cycles); 3, Huerta et al. MICRO '25: every fixed-latency
    # instruction reads its sources within three cycles, reserving each bank's one port per cycle
    # (overlapping windows), with the per-(bank, operand slot) register-file cache.
    register_read_window: int = 0
    # Read-barrier release of memory instructions from the published WAR latencies
    # (:data:`MEASURED_WAR`, :func:`war_latency`) instead of the flat ``operand_read`` estimate.
    measured_war: bool = False
    sector_bytes: int = 32  # L1/L2 sector: the unit a miss fetches
    line_bytes: int = 128  # L1 line (128 B = 4 sectors)
    # What CCTL.E.PF1 (PTX prefetch.global.L1) brings into L1: one 32-byte sector,
    # the one holding its address -- not the whole 128-byte line (see the note below).
    prefetch_fill_bytes: int = 32

    def as_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: WAR ("read-barrier") latencies of memory instructions, issue -> the earliest issue of an
#: instruction overwriting one of their source registers, in cycles: Huerta, Abaie Shoushtary, Cruz,
#: González, "Dissecting and Modeling the Architecture of Modern GPU Cores" (MICRO '25,
#: doi:10.1145/3725843.3756041), Table 2, measured on an RTX A6000 (GA102, sm_86: the GA10x SM that
#: Ada's derives from; no Ada measurement was found, the same transfer as ``register_banks``).
#: Keyed by (kind, address register type, bytes per thread); loads release when the address is
#: computed (any width), stores when the stored value has also been read (+2 cycles for 64-bit,
#: +6 for 128-bit; the paper's 64/128-bit uniform-address global stores are marked approximate).
#: Local memory (LDL/STL: spills) is not in the table and keeps ``operand_read``: taking it as global
#: (same LSU and L1 path, plausible but unmeasured) raised gemm_tile_16x16x16 (6,720 B of spills with
#: our ptxas) from 18,331 to 20,129 cycles, nearly all through STL reads -- too large an effect to
#: rest on an assumption.
MEASURED_WAR = {
    ("load_global", "uniform"): 9, ("load_global", "regular"): 11,
    ("store_global", "uniform", 4): 10, ("store_global", "uniform", 8): 12, ("store_global", "uniform", 16): 16,
    ("store_global", "regular", 4): 14, ("store_global", "regular", 8): 16, ("store_global", "regular", 16): 20,
    ("load_shared", "uniform"): 9, ("load_shared", "regular"): 9,
    ("store_shared", "uniform", 4): 10, ("store_shared", "uniform", 8): 12, ("store_shared", "uniform", 16): 16,
    ("store_shared", "regular", 4): 12, ("store_shared", "regular", 8): 14, ("store_shared", "regular", 16): 18,
    ("load_constant", "immediate"): 10, ("load_constant", "regular"): 29,
    ("ldgsts", "regular"): 13,
}
_WAR_KIND = {"LDG": "load_global", "LD": "load_global",
             "STG": "store_global", "ST": "store_global",
             "LDS": "load_shared", "LDSM": "load_shared", "STS": "store_shared",
             "LDC": "load_constant", "LDGSTS": "ldgsts"}


def war_latency(opcode: str, operands: str) -> int | None:
    """The :data:`MEASURED_WAR` figure of one SASS memory instruction, or None (not a listed kind:
    the caller keeps ``operand_read``).  Width from the opcode's ``.64``/``.128`` (else 32-bit or
    narrower); the address is *uniform* when its bracket names no regular register ``R<n>``."""
    parts = opcode.split(".")
    kind = _WAR_KIND.get(parts[0])
    if kind is None:
        return None
    width = 16 if "128" in parts else 8 if "64" in parts else 4
    lo = operands.rfind("[")
    addr = operands[lo:operands.find("]", lo) + 1] if lo >= 0 else ""
    regular = any(tok[:1] == "R" and tok[1:2].isdigit()
                  for tok in addr.replace("[", " ").replace("]", " ").replace("+", " ").replace(".", " ").split())
    if kind == "load_constant":
        return MEASURED_WAR[(kind, "regular" if regular else "immediate")]
    if kind == "ldgsts":
        return MEASURED_WAR[(kind, "regular")]
    rtype = "regular" if regular else "uniform"
    if kind.startswith("store"):
        return MEASURED_WAR[(kind, rtype, width)]
    return MEASURED_WAR[(kind, rtype)]


# Shared by every architecture below; each is an estimate, see the comments.
_ESTIMATES = dict(
    # Educated estimate.  Luo et al., "Benchmarking and Dissecting the Nvidia
    # Hopper GPU Architecture" (arXiv:2402.13499, 2024) measure shared-memory
    # load latencies of this order (about 30 cycles) on A100, RTX 4090 and
    # H800; the exact per-part figures were not re-verified for this table.
    shared=30,
    # Educated estimate: LDC goes through the constant cache; no public
    # measurement of the LDC instruction itself was found (PTX-level ld.const
    # figures in the literature measure ALU ops with a c[] operand instead).
    constant=20,
    # Educated estimate (S2R/S2UR read special registers through a slow path;
    # ptxas treats them as variable latency).
    special_reg=20,
    # Educated estimate (register -> uniform register transfer).
    uniform_move=8,
    # Educated estimate.  Arafa et al., "Instructions' latencies
    # characterization for NVIDIA GPGPUs" (arXiv:1905.08778, 2019) measure
    # 11-31 cycles for PTX sin/ex2/lg2/rsqrt on Volta/Turing; those include
    # helper instructions around the MUFU, so the MUFU alone is below ~31.
    mufu=18,
    # Educated estimate (warp shuffle crosses the lanes through the MIO path,
    # like a shared-memory access).
    shuffle=24,
    # Educated estimate (conversions on the quarter-rate XU pipe).
    convert=12,
    # Educated estimate: only used where ptxas marks FP64 as variable latency
    # (the 1/64-rate FP64 of sm_89); a warp instruction keeps the two FP64
    # lanes of a sub-partition busy for ~16 cycles before its latency.
    fp64=48,
    # Educated estimate (HMMA.16816 dependent-issue latency order of magnitude).
    tensor=32,
    # Educated estimate: shared-memory atomics resolve in the L1/shared unit.
    atomic_shared=40,
    # Educated estimate for unclassified barrier-setting instructions.
    other=20,
    # Educated estimate: a store (or a load's address registers) is read out
    # of the register file when the MIO queue dispatches it, a few cycles
    # after issue when the queue is empty.  No public measurement found.
    operand_read=8,
)

LATENCIES: dict[str, ArchLatencies] = {
    # ---- Ampere GA100 (A100 80 GB) --------------------------------------
    "sm_80": ArchLatencies(
        arch="sm_80",
        # Two register banks, one warp register per bank per cycle: Huerta et al. (arXiv:2503.20481,
        # RTX A6000, the GA10x SM that Ada's derives from) and NVIDIA forum thread 266769 (RTX A4000:
        # FFMA with two same-bank sources at ~55% of peak); Jia et al. (arXiv:1804.06826) found the
        # same two banks on Volta.  See ptxopt/sim/regbank.py.
        register_banks=2,
        # The banks' ports are reserved over three-cycle read windows, with the per-(bank, slot)
        # register-file cache: Huerta et al., MICRO '25, sections 5.1.1, 5.3, 5.3.1 (their Listing 1
        # measurement contradicts the plain per-instruction rule).  See ptxopt/sim/regbank.py.
        register_read_window=3,
        # gpu-benches a100_80.txt: 33.0-33.9 cycles for working sets up to 150 KB.
        l1_hit=33,
        # gpu-benches a100_80.txt: 204.8-205.7 cycles from 0.22 MB to 17 MB (the
        # near L2 partition; the far partition shows 390-412 cycles and is not modelled).
        l2_hit=205,
        # gpu-benches a100_80.txt: 507-550 cycles beyond 45 MB; 530 is the rounded middle.
        dram=530,
        # Educated estimate: local memory is cached in L1 like global data (CUDA C
        # Programming Guide, "Local Memory"); a spill reload of a slot stored
        # earlier in the same launch hits L1, so the L1-hit latency is used.
        local=33,
        # Educated estimate: global atomics execute at L2, so an L2 round trip.
        atomic_global=205,
        **_ESTIMATES,
    ),
    # ---- Ada AD102 (L40; RTX 4090 is the same SM) -----------------------
    "sm_89": ArchLatencies(
        arch="sm_89",
        # Two register banks, one warp register per bank per cycle: Huerta et al. (arXiv:2503.20481,
        # RTX A6000, the GA10x SM that Ada's derives from) and NVIDIA forum thread 266769 (RTX A4000:
        # FFMA with two same-bank sources at ~55% of peak); Jia et al. (arXiv:1804.06826) found the
        # same two banks on Volta.  See ptxopt/sim/regbank.py.
        register_banks=2,
        # The banks' ports are reserved over three-cycle read windows, with the per-(bank, slot)
        # register-file cache: Huerta et al., MICRO '25, sections 5.1.1, 5.3, 5.3.1 (their Listing 1
        # measurement contradicts the plain per-instruction rule).  See ptxopt/sim/regbank.py.
        register_read_window=3,
        # gpu-benches l40.txt: 36.0-36.3 cycles for working sets up to 84 KB.
        l1_hit=36,
        # gpu-benches l40.txt: 276.3-276.7 cycles from 0.13 MB to 32 MB;
        # arXiv:2606.22588 reports ~279 on average (222-339 across SMs) on an L40.
        l2_hit=277,
        # gpu-benches l40.txt: 630.4-631.9 cycles beyond 185 MB.
        dram=631,
        # Educated estimate: L1-hit latency, as for sm_80.
        local=36,
        # Educated estimate: an L2 round trip.
        atomic_global=277,
        **_ESTIMATES,
    ),
    # ---- Hopper GH100 (H100 PCIe) ---------------------------------------
    "sm_90": ArchLatencies(
        arch="sm_90",
        # register_banks left 0: no published register-file measurement of Hopper was found.
        # gpu-benches h100_pcie.txt: 34.0-34.8 cycles up to 216 KB (gh200.txt: 32.0-33.7).
        l1_hit=34,
        # gpu-benches h100_pcie.txt: 265.1-266.0 cycles from 0.4 MB to 20 MB (near
        # partition; ~475 beyond, not modelled).  gh200.txt: 279.4-280.3.
        l2_hit=266,
        # gpu-benches h100_pcie.txt: 650-658 cycles beyond 125 MB (gh200.txt: 678.6).
        dram=655,
        # Educated estimate: L1-hit latency, as for sm_80.
        local=34,
        # Educated estimate: an L2 round trip.
        atomic_global=266,
        **_ESTIMATES,
    ),
}


def latencies_for(arch: str) -> tuple[ArchLatencies, str | None]:
    """The table for ``arch`` and, if a substitute was used, a note saying so.

    ``sm_89`` -> its own table; ``sm_86`` -> the ``sm_80`` table (same
    major version); ``sm_90a`` -> ``sm_90``.  Raises ``ValueError`` for an
    architecture with no table of its major version.
    """
    base = arch.rstrip("af") if arch.startswith("sm_") else arch
    if base in LATENCIES:
        table = LATENCIES[base]
        return table, (None if base == arch else f"latency table {base} used for {arch}")
    try:
        major = int(base[3:]) // 10
    except ValueError:
        raise ValueError(f"unknown architecture {arch!r}; latency tables: {', '.join(LATENCIES)}") from None
    same_major = sorted(k for k in LATENCIES if int(k[3:]) // 10 == major)
    if not same_major:
        raise ValueError(
            f"no latency table for {arch} (tables: {', '.join(LATENCIES)}); "
            "add one to ptxopt/sim/latency.py"
        )
    chosen = same_major[0]
    return LATENCIES[chosen], f"latency table {chosen} used for {arch} (no table of its own; educated substitute)"
