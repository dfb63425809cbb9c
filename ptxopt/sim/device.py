"""One table per target device: the product facts the many-warp estimate needs.

A *device* is a product (L4, H100 SXM, A100 SXM4), not an architecture: two
parts of one compute capability differ in SM count, clocks and memory.  Each
row names its architecture, and the per-SM occupancy caps and the latency
table are read through it (:attr:`Device.limits` ->
:data:`ptxopt.sim.occupancy.LIMITS`, :attr:`Device.latencies` ->
:data:`ptxopt.sim.latency.LATENCIES`), so the latency objective (one warp)
and the throughput objective (the whole launch) of one device read the same
tables and the same clock.

Every figure cites its source in :attr:`Device.sources` (field -> source);
a figure no vendor document gives is listed in :attr:`Device.estimated` and
says so.  Clocks: ``clock_mhz`` is the maximum boost clock (the clock the
per-cycle figures and the cycle -> second conversion assume; a part running
below it takes more seconds for the same cycles), ``base_clock_mhz`` the base.

``inflight_cap_bytes_per_sm`` caps the bytes of global-load misses one SM has in
flight (the bytes-in-flight bound, :mod:`ptxopt.sim.inflight`): no vendor gives it,
so it is an assumption taken from Accel-Sim's tested configurations and marked
estimated.  ``saturating_inflight_bytes_per_sm`` is what the vendor measured as
needed to saturate DRAM (Hopper: more than 32 KiB per SM, NVIDIA GTC'25), printed
by ``explain`` next to bandwidth x the unloaded latency (the bound's own figure).

``tensor_flops_per_cycle`` is the dense tensor-core peak per SM per cycle by
input precision (vendor TFLOPS / SMs / the clock the vendor figure assumes);
the throughput model's tensor bound (:mod:`ptxopt.sim.tensor_work`) divides the
MMA work by it, so an estimate is never faster than the vendor peak.

The default device of an architecture is :data:`DEFAULT_BY_ARCH` (sm_89: the
L4 of the earlier hardware work, BRIEF section 3); ``--device NAME`` picks
another (:func:`device_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from .latency import ArchLatencies, latencies_for
from .occupancy import SmLimits, limits_for

# -- sources (cited per field below) -------------------------------------------
L4_DATASHEET = "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet (NVIDIA L4 datasheet)"
L4_PRODUCT = "https://www.nvidia.com/en-us/data-center/l4/ (NVIDIA L4 product page)"
L4_THIRD_PARTY = ("https://fpsbench.com/compare/gpu/nvidia-l4-vs-nvidia-tesla-m40 (third-party spec sheet: "
                  "base 795 MHz, boost 2040 MHz, 48 MB L2, 128 KB L1 per SM; not an NVIDIA document)")
ADA_TUNING = "https://docs.nvidia.com/cuda/ada-tuning-guide/index.html (NVIDIA Ada tuning guide)"
HOPPER_TUNING = "https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html (NVIDIA Hopper tuning guide)"
AMPERE_TUNING = "https://docs.nvidia.com/cuda/ampere-tuning-guide/index.html (NVIDIA Ampere tuning guide)"
H100_DATASHEET = ("https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet "
                  "(NVIDIA H100 datasheet: H100 SXM 3.35 TB/s HBM3)")
HOPPER_WHITEPAPER = ("https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper (NVIDIA H100 "
                     "Tensor Core GPU Architecture whitepaper: H100 SXM5 132 SMs, 50 MB L2, 256 KB L1/shared per SM)")
H100_CLOCKS = ("https://glennklockwood.com/garden/processors/h100 (H100 SXM5: 1.98 GHz boost for non-tensor "
               "work, quoting the Hopper whitepaper); base 1590 MHz: third-party (TechPowerUp), not verified")
A100_DATASHEET = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                  "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (NVIDIA A100 datasheet: 80 GB SXM 2,039 GB/s)")
A100_WHITEPAPER = ("https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-"
                   "whitepaper.pdf (NVIDIA A100 whitepaper: 108 SMs, 1410 MHz boost, 40 MB L2, 5120 B/clk L2 read)")
PROGRAMMING_GUIDE = ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
                     "#features-and-technical-specifications (CUDA C++ Programming Guide, technical "
                     "specifications per compute capability; 1 KB shared memory reserved per block on 8.x/9.0)")
L1_WHITEPAPERS = ("Volta/A100/H100 whitepapers: L1/shared delivers 128 bytes/clock per SM "
                  "(https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf)")
LSU_FORUM = ("https://forums.developer.nvidia.com/t/273699 (NVIDIA developer forum, answer by NVIDIA: the MIO "
             "issues one instruction per cycle to the LSU pipe per SM)")
L4_TENSOR = ("https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet (NVIDIA L4 datasheet: "
             "FP16/BF16 Tensor Core 242 TFLOPS, TF32 120 TFLOPS, FP8 485 TFLOPS, INT8 485 TOPS, each 'with "
             "sparsity' = twice the dense rate); dense per SM per cycle = TFLOPS/2 / (58 SMs x 2,040 MHz): "
             "FP16 121e12/118.3e9 = 1,023 -> 1,024 (512 FMA/clk/SM), TF32 512, FP8 and INT8 2,048")
A100_TENSOR = ("A100 whitepaper (URL above): a 3rd-generation Tensor Core does 256 FP16 FMA/clk, 4 per SM = "
               "2,048 dense FP16 FLOP/clk/SM (312 TFLOPS = 108 x 2,048 x 1,410 MHz); TF32 156 TFLOPS -> 1,024; "
               "INT8 624 TOPS -> 4,096; INT4 1,248 TOPS -> 8,192; FP64 Tensor 19.5 TFLOPS -> 128; NVIDIA forum "
               "thread https://forums.developer.nvidia.com/t/244727 works the same arithmetic")
H100_TENSOR = ("https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/ (Table 3, H100 SXM5: dense "
               "FP16/BF16 Tensor 1,000 TFLOPS, TF32 500, INT8 2,000 TOPS; FP8 2,000 TFLOPS per the Hopper "
               "whitepaper); per SM per cycle: 2x the A100 SM clock for clock = 4,096 FP16 FLOP/clk/SM "
               "(1,000e12 / (132 x 4,096) = 1.85 GHz, the tensor boost the table assumes), TF32 2,048, FP8 and "
               "INT8 8,192.  At the table's 1,980 MHz this is a higher peak than the vendor's: a lower time bound")
GTC25_INFLIGHT = ("NVIDIA GTC'25 session S72683 'CUDA Techniques to Maximize Memory Bandwidth and Hide Latency' "
                  "(https://www.nvidia.com/en-us/on-demand/session/gtc25-s72683/), as noted in "
                  "https://shreyansh26.github.io/post/2025-03-23_gtc25-maximize-memory-bandwidth-part-1: bytes in "
                  "flight per SM required to saturate DRAM bandwidth: Hopper > 32 KiB, Blackwell > 40 KiB")
ACCEL_SIM_MSHR = ("educated estimate (an assumption): the L1 data cache's MSHR entries in Accel-Sim's tested configurations x one 32 B "
                  "sector per entry (gpgpu-sim keys a sector cache's MSHR by 32-byte sector: mshr_addr masks "
                  "m_atom_sz = SECTOR_SIZE); a simulator parameter its authors correlated against hardware, not "
                  "a hardware measurement and not an NVIDIA figure; "
                  "https://github.com/accel-sim/gpgpu-sim_distribution, configs/tested-cfgs/")
ISSUE = "each of the 4 SM sub-partitions' warp schedulers issues one warp instruction per cycle (tuning guides)"
LATENCY_TABLE = "ptxopt/sim/latency.py (gpu-benches pointer-chase latencies, cited there)"


@dataclass(frozen=True)
class Device:
    """One product's facts; per-cycle figures are per SM at ``clock_mhz``."""

    name: str
    arch: str  # compute capability whose occupancy caps and latency table apply
    sms: int  # streaming multiprocessors enabled on the product
    clock_mhz: float  # maximum boost clock
    base_clock_mhz: float
    dram_gbps: float  # DRAM bandwidth, GB/s (10^9 bytes)
    l2_bytes: int  # L2 capacity: a working set above it streams from DRAM
    l1_shared_bytes_per_sm: int  # combined L1 data cache / shared memory per SM
    l2_bytes_per_cycle: float  # L2 -> SM bandwidth per SM
    l1_bytes_per_cycle: float = 128.0  # L1/shared bandwidth per SM (the LSU data path)
    lsu_instructions_per_cycle: float = 1.0  # memory warp instructions the LSU pipe accepts per SM cycle
    #: bytes of global-load misses one SM can have outstanding (the bytes-in-flight bound's cap,
    #: ptxopt.sim.inflight); 0: no cap
    inflight_cap_bytes_per_sm: float = 0.0
    #: bytes in flight per SM the vendor measured as needed to saturate DRAM (information for explain;
    #: None: no figure found)
    saturating_inflight_bytes_per_sm: float | None = None
    #: dense tensor-core operations per SM per cycle by input precision (ptxopt.sim.tensor_work.PRECISIONS);
    #: a precision not listed has no tensor bound on this device
    tensor_flops_per_cycle: Mapping[str, float] = field(default_factory=dict, compare=False)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    estimated: tuple[str, ...] = ()  # fields no vendor document gives: educated estimates

    # -- derived ---------------------------------------------------------------
    @property
    def product(self) -> str:  # the name the many-warp notes print
        return self.name

    @property
    def dram_bytes_per_cycle(self) -> float:
        """DRAM bandwidth per SM per SM cycle (bytes)."""
        return self.dram_gbps * 1e9 / (self.sms * self.clock_mhz * 1e6)

    @property
    def limits(self) -> SmLimits:
        """Per-SM occupancy caps of the device's architecture (CUDA Programming Guide)."""
        return limits_for(self.arch)

    @property
    def latencies(self) -> ArchLatencies:
        """The latency table the single-warp walk uses for this device's architecture."""
        return latencies_for(self.arch)[0]

    @property
    def issue_per_cycle(self) -> float:
        """Warp instructions per cycle per scheduler, from the same latency table the walk reads."""
        return self.latencies.issue_per_cycle

    def seconds(self, cycles: float) -> float:
        return cycles / (self.clock_mhz * 1e6)

    def to_json(self) -> dict:
        """The keys ``ptxopt explain`` prints (fixed names: scripts read them)."""
        return {"name": self.name, "sm_count": self.sms, "clock_mhz": self.clock_mhz,
                "dram_gbps": self.dram_gbps, "l2_bytes": self.l2_bytes}


KB = 1024
MB = 1024 * 1024

DEVICES: dict[str, Device] = {
    "L4": Device(
        "L4", "sm_89", sms=58, clock_mhz=2040, base_clock_mhz=795, dram_gbps=300, l2_bytes=48 * MB,
        l1_shared_bytes_per_sm=128 * KB, l2_bytes_per_cycle=32.0,
        tensor_flops_per_cycle={"fp16": 1024, "tf32": 512, "fp8": 2048, "int8": 2048},
        sources={
            "sms": f"{L4_DATASHEET}: 7,424 CUDA cores = 58 SMs x 128 FP32 cores ({ADA_TUNING})",
            "clock_mhz": f"{L4_PRODUCT}: FP32 30.3 TFLOPS = 7,424 x 2 x 2,040 MHz; {L4_THIRD_PARTY}",
            "base_clock_mhz": L4_THIRD_PARTY,
            "dram_gbps": f"{L4_DATASHEET}: 24 GB GDDR6, 300 GB/s",
            "l2_bytes": L4_THIRD_PARTY,
            "l1_shared_bytes_per_sm": f"{ADA_TUNING}: 128 KB combined L1/shared per SM",
            "l2_bytes_per_cycle": "educated estimate: 32 B (one sector) per SM per cycle; no L4 measurement found",
            "l1_bytes_per_cycle": L1_WHITEPAPERS,
            "lsu_instructions_per_cycle": LSU_FORUM,
            "inflight_cap_bytes_per_sm": ACCEL_SIM_MSHR + "SM89_RTX4060_LAPTOP (an Ada part, a community "
                                         "configuration; no L4 configuration): -gpgpu_cache:dl1 ...,A:384:48 -> "
                                         "384 x 32 B = 12,288 B",
            "saturating_inflight_bytes_per_sm": "no figure found for Ada",
            "tensor_flops_per_cycle": L4_TENSOR,
            "limits": f"{ADA_TUNING}; {PROGRAMMING_GUIDE}",
            "issue": ISSUE,
            "latencies": LATENCY_TABLE,
        },
        inflight_cap_bytes_per_sm=384 * 32,
        estimated=("l2_bytes_per_cycle", "inflight_cap_bytes_per_sm"),
    ),
    "H100-SXM": Device(
        "H100-SXM", "sm_90", sms=132, clock_mhz=1980, base_clock_mhz=1590, dram_gbps=3350, l2_bytes=50 * MB,
        l1_shared_bytes_per_sm=256 * KB, l2_bytes_per_cycle=5120 / 108,
        tensor_flops_per_cycle={"fp16": 4096, "tf32": 2048, "fp8": 8192, "int8": 8192},
        sources={
            "sms": HOPPER_WHITEPAPER,
            "clock_mhz": H100_CLOCKS,
            "base_clock_mhz": H100_CLOCKS,
            "dram_gbps": H100_DATASHEET,
            "l2_bytes": HOPPER_WHITEPAPER,
            "l1_shared_bytes_per_sm": f"{HOPPER_WHITEPAPER}; {HOPPER_TUNING}",
            "l2_bytes_per_cycle": "educated estimate: the A100's per-SM L2 read bandwidth (5,120 B/clk / 108 SMs)",
            "l1_bytes_per_cycle": L1_WHITEPAPERS,
            "lsu_instructions_per_cycle": LSU_FORUM,
            "inflight_cap_bytes_per_sm": ACCEL_SIM_MSHR + "SM90_H100: -gpgpu_cache:dl1 ...,A:512:64 -> "
                                         "512 x 32 B = 16,384 B",
            "saturating_inflight_bytes_per_sm": GTC25_INFLIGHT + " (measured by NVIDIA; 32 KiB is the lower end)",
            "tensor_flops_per_cycle": H100_TENSOR,
            "limits": f"{HOPPER_TUNING}; {PROGRAMMING_GUIDE}",
            "issue": ISSUE,
            "latencies": LATENCY_TABLE + " (H100 PCIe figures)",
        },
        inflight_cap_bytes_per_sm=512 * 32, saturating_inflight_bytes_per_sm=32 * KB,
        estimated=("l2_bytes_per_cycle", "base_clock_mhz", "inflight_cap_bytes_per_sm"),
    ),
    "A100-SXM4-80GB": Device(
        "A100-SXM4-80GB", "sm_80", sms=108, clock_mhz=1410, base_clock_mhz=1275, dram_gbps=2039,
        l2_bytes=40 * MB, l1_shared_bytes_per_sm=192 * KB, l2_bytes_per_cycle=5120 / 108,
        tensor_flops_per_cycle={"fp64": 128, "tf32": 1024, "fp16": 2048, "int8": 4096, "int4": 8192},
        sources={
            "sms": A100_WHITEPAPER,
            "clock_mhz": A100_WHITEPAPER,
            "base_clock_mhz": "third-party (TechPowerUp), not verified against an NVIDIA document",
            "dram_gbps": A100_DATASHEET,
            "l2_bytes": A100_WHITEPAPER,
            "l1_shared_bytes_per_sm": f"{A100_WHITEPAPER}; {AMPERE_TUNING}",
            "l2_bytes_per_cycle": A100_WHITEPAPER,
            "l1_bytes_per_cycle": L1_WHITEPAPERS,
            "lsu_instructions_per_cycle": LSU_FORUM,
            "inflight_cap_bytes_per_sm": ACCEL_SIM_MSHR + "SM80_A100: -gpgpu_cache:dl1 ...,A:512:64 -> "
                                         "512 x 32 B = 16,384 B",
            "saturating_inflight_bytes_per_sm": "no figure found for Ampere",
            "tensor_flops_per_cycle": A100_TENSOR,
            "limits": f"{AMPERE_TUNING}; {PROGRAMMING_GUIDE}",
            "issue": ISSUE,
            "latencies": LATENCY_TABLE,
        },
        inflight_cap_bytes_per_sm=512 * 32,
        estimated=("base_clock_mhz", "inflight_cap_bytes_per_sm"),
    ),
}

#: The device an architecture's estimates assume unless ``--device`` names another.
DEFAULT_BY_ARCH: dict[str, str] = {"sm_89": "L4", "sm_90": "H100-SXM", "sm_80": "A100-SXM4-80GB"}


def _base(arch: str) -> str:
    return arch.rstrip("af") if arch.startswith("sm_") else arch


def device_named(name: str) -> Device:
    """The device ``name`` (case-insensitive); ValueError naming the known ones."""
    for key, dev in DEVICES.items():
        if key.lower() == name.lower():
            return dev
    raise ValueError(f"unknown device {name!r} (known: {', '.join(DEVICES)})")


def device_for(arch: str, name: str | None = None) -> Device:
    """The device for ``arch``: ``name`` when given (its architecture must be
    ``arch``'s), else the architecture's default.  sm_70 and sm_86 have no
    product of their own: the A100's product figures are substituted (the
    name says so) with the architecture's own occupancy caps."""
    base = _base(arch)
    if name is not None:
        dev = device_named(name)
        if dev.arch != base:
            raise ValueError(f"device {dev.name} is {dev.arch}; the kernel is compiled for {arch} "
                             f"(pass --arch {dev.arch} or another --device)")
        return dev
    if base in DEFAULT_BY_ARCH:
        return DEVICES[DEFAULT_BY_ARCH[base]]
    if base in ("sm_70", "sm_86"):
        sub = DEVICES["A100-SXM4-80GB"]
        return replace(sub, name=f"{sub.name} figures substituted for {base}", arch=base,
                       estimated=sub.estimated + ("sms", "clock_mhz", "dram_gbps", "l2_bytes"))
    raise ValueError(f"no device table for {arch} (devices: "
                     + ", ".join(f"{d.name} ({d.arch})" for d in DEVICES.values()) + "); add one to ptxopt/sim/device.py")


__all__ = ["Device", "DEVICES", "DEFAULT_BY_ARCH", "device_for", "device_named"]
