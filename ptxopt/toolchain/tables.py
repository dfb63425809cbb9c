"""Data tables for the toolchain, kept in one place so updates are one-line edits.

Nothing here runs a tool; the modules that do (``locate``, ``control``) read
these tables.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------
# CUDA release -> newest PTX ISA version its ptxas accepts.
#
# Source: the "PTX ISA release history" table of the PTX documentation.  The
# simple "PTX major = CUDA major - 4" rule breaks at 12.6 (still ISA 8.5) and
# 12.7 (ISA 8.6; a release never shipped publicly).  Rows marked "verified"
# were checked by feeding the installed ptxas a stub module with each
# ``.version`` from 1.0 to 9.9 (the newest accepted one is the entry; ptxas
# also names it in its "Unsupported .version X; current version is 'Y'"
# error, which ``locate`` uses as a fallback for releases not listed here).
# Note the accepted versions are not a contiguous range: there is no ISA 8.9,
# and ptxas 13.x rejects ``.version 8.9`` while accepting 8.8 and 9.0.
# ---------------------------------------------------------------------------
MAX_PTX_ISA_BY_CUDA: dict[tuple[int, int], tuple[int, int]] = {
    (11, 0): (7, 0),
    (11, 1): (7, 1),
    (11, 2): (7, 2),
    (11, 3): (7, 3),
    (11, 4): (7, 4),
    (11, 5): (7, 5),
    (11, 6): (7, 6),
    (11, 7): (7, 7),
    (11, 8): (7, 8),
    (12, 0): (8, 0),
    (12, 1): (8, 1),
    (12, 2): (8, 2),
    (12, 3): (8, 3),
    (12, 4): (8, 4),
    (12, 5): (8, 5),
    (12, 6): (8, 5),
    (12, 7): (8, 6),
    (12, 8): (8, 7),
    (12, 9): (8, 8),  # verified: nvidia-cuda-nvcc-cu12 12.9.86
    (13, 0): (9, 0),  # nvcc 13.0 emits .version 9.0
    (13, 1): (9, 1),
    (13, 2): (9, 2),
    (13, 3): (9, 3),
    (13, 4): (9, 4),
    (13, 5): (9, 5),  # verified: nvidia-cuda-nvcc 13.5.37
}

# ---------------------------------------------------------------------------
# Where the tools come from: the NVIDIA wheels install into the ``nvidia``
# namespace package as ``nvidia/<component>/bin/<tool>`` (``cuda_nvcc`` for
# the 12.x wheels, ``cu13`` for the 13.x ones).  Globbing one level below
# each namespace root finds every layout seen so far without naming them.
# ---------------------------------------------------------------------------
NVIDIA_NAMESPACE = "nvidia"
TOOL_GLOB = "*/bin/{tool}"
TOOL_FILENAMES: dict[str, tuple[str, ...]] = {
    "ptxas": ("ptxas", "ptxas.exe"),
    "nvdisasm": ("nvdisasm", "nvdisasm.exe"),
}
ENV_OVERRIDE: dict[str, str] = {
    "ptxas": "PTXOPT_PTXAS",  # one path, or several joined with os.pathsep
    "nvdisasm": "PTXOPT_NVDISASM",  # one path
}
INSTALL_HINT: dict[str, str] = {
    "ptxas": (
        "install the NVIDIA compiler wheels into this environment: "
        "`pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvcc` "
        "(nvidia-cuda-nvcc-cu12 ships ptxas 12.x for PTX ISA <= 8.8, "
        "nvidia-cuda-nvcc ships ptxas 13.x for PTX ISA 9.x), "
        "or point PTXOPT_PTXAS at a ptxas binary"
    ),
    "nvdisasm": (
        "install the NVIDIA disassembler wheel into this environment: "
        "`pip install nvidia-cuda-nvdisasm`, "
        "or point PTXOPT_NVDISASM at an nvdisasm binary"
    ),
}

# ---------------------------------------------------------------------------
# Volta+ (sm_70 and newer) SASS control field.
#
# Every instruction is 128 bits, written by nvdisasm as two 64-bit words (low
# word first).  The scheduling ("control") information sits in bits 105..125
# of the instruction, i.e. bits 41..61 of the high word; bits 126..127 are
# zero in every instruction we have seen.  Offsets below are relative to bit
# 105 (bit 41 of the high word).  Same layout as CuAssembler's
# ``decodeCtrlCodes`` and the maxas/turingas control-code write-ups; checked
# against ptxas 12.9/13.5 output for sm_89 and sm_90 (see tests):
# loads set a write barrier that the first consumer of the loaded register
# (or an instruction before it) waits on, and the reuse bits match the
# ``.reuse`` flags nvdisasm prints on operands.
#
#   field          offset  width  meaning
#   stall            0       4    cycles to wait before issuing the next instruction
#   yield_flag       4       1    0 = scheduler may switch warps (CuAssembler prints "Y")
#   write_barrier    5       3    scoreboard set when the result is written (7 = none)
#   read_barrier     8       3    scoreboard set when sources have been read (7 = none)
#   wait_mask       11       6    bit i set = wait for scoreboard i before issuing
#   reuse           17       4    operand reuse-cache flags, bit i = register-source slot i
#                                 of the encoding (A, B, C, ...; FADD's 2nd source is slot C)
# ---------------------------------------------------------------------------
CONTROL_SHIFT_IN_HIGH_WORD = 41
CONTROL_FIELDS: tuple[tuple[str, int, int], ...] = (
    # (name, offset, width)
    ("stall", 0, 4),
    ("yield_flag", 4, 1),
    ("write_barrier", 5, 3),
    ("read_barrier", 8, 3),
    ("wait_mask", 11, 6),
    ("reuse", 17, 4),
)
NO_BARRIER = 7
NUM_SCOREBOARDS = 6

# ---------------------------------------------------------------------------
# What a failed tool run prints when the failure is the tool's or the
# machine's, not the input's (see ptxopt.toolchain.process.crash_reason):
# (regular expression over the output, searched case-insensitively, what
# happened in words). Only consulted for a non-zero exit.
# ---------------------------------------------------------------------------
TRANSIENT_OUTPUT: tuple[tuple[str, str], ...] = (
    (r"memory allocation failure", "ran out of memory"),
    (r"\bout of memory\b", "ran out of memory"),
    (r"\binternal (?:compiler )?error\b", "hit an internal error"),
)
