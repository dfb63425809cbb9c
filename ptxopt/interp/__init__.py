"""A PTX interpreter: run kernels on the CPU, bit-exactly, with every memory
access checked.

``run_kernel(module, entry, grid, block, args, shared_bytes=0)`` executes one
kernel launch and returns the final contents of its buffers and of the
module's ``.global`` variables (and, asked, what the launch covered);
``launch_from_manifest(spec, seed)`` does the same for a corpus kernel with
inputs generated from its manifest entry. Design notes live in the modules:

* :mod:`~ptxopt.interp.engine` -- the divergence model (minimum-PC scheduling
  of thread groups), barriers, warp collectives, calls;
* :mod:`~ptxopt.interp.device_memory` -- fake device addresses, state-space windows,
  bounds/alignment checks;
* :mod:`~ptxopt.interp.fp` -- exact rounding, the true fused multiply-add;
* :mod:`~ptxopt.interp.decode` -- pre-decoding instructions into closures;
* :mod:`~ptxopt.interp.ops` -- opcode semantics as dispatch tables.

Errors are :class:`InterpError` subclasses; anything the interpreter does
not implement raises :class:`UnsupportedInstruction` when it is reached,
never a wrong answer.
"""

from ptxopt.interp.errors import (BarrierError, InterpError, KernelTrap, LaunchError, MemoryFault,
                                  StepLimit, UnsupportedInstruction, WarpSyncError)
from ptxopt.interp.launcher import LaunchResult, run_kernel
from ptxopt.interp.program import Program

__all__ = [
    "run_kernel", "launch_from_manifest", "make_args", "Program", "LaunchResult",
    "InterpError", "UnsupportedInstruction", "MemoryFault", "BarrierError", "WarpSyncError",
    "KernelTrap", "LaunchError", "StepLimit",
]


def __getattr__(name):
    if name in ("launch_from_manifest", "make_args"):
        from ptxopt.interp import workload

        return getattr(workload, name)
    raise AttributeError(name)
