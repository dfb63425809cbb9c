"""How the GPU harness names failures: :class:`HarnessError` and the CUDA error classifier.

CuPy reports every CUDA failure as the same exception types; what the
harness does next -- report ``fault`` and replace the child, or report
``load``/``launch`` and go on -- depends on the error's name.  The
classification lives here, apart from the CuPy session, so it is plain
Python and tested on CPU.
"""

from __future__ import annotations


class HarnessError(Exception):
    """A failure with a result category (:data:`ptxopt.gpu.measurement.STATUSES`)."""

    def __init__(self, status: str, message: str, fatal: bool = False):
        super().__init__(message)
        self.status = status
        self.message = message
        self.fatal = fatal



_FAULT_WORDS = ("illegaladdress", "misalignedaddress", "illegalinstruction", "invalidaddressspace", "invalidpc",
                "hardwarestackerror", "launchfailed", "launchfailure", "unspecifiedlaunchfailure", "assert",
                "launchtimeout", "eccuncorrectable", "illegalstate", "contextisdestroyed", "exception")
_LOAD_WORDS = ("invalidptx", "nobinaryforgpu", "invalidimage", "unsupportedptxversion", "invalidsource",
               "jitcompilernotfound", "jitcompilerdisabled", "sharedobject", "notfound", "invalidkernelimage",
               "nokernelimage", "invaliddevicefunction")
_LAUNCH_WORDS = ("launchoutofresources", "invalidvalue", "invalidconfiguration", "toomanyresources",
                 "cooperativelaunchtoolarge")


def classify_cuda_error(message: str) -> tuple[str, bool]:
    """``(status, fatal)`` for a CUDA error message from CuPy
    (``CUDA_ERROR_ILLEGAL_ADDRESS: ...`` or ``cudaErrorIllegalAddress: ...``).

    ``fault`` covers everything a kernel can do to itself at run time;
    ``load`` a module the driver refuses; ``launch`` a refused launch
    configuration. Only load and launch errors leave the context usable;
    anything else is treated as fatal (the child is replaced)."""
    key = message.replace("_", "").replace(" ", "").lower()
    if any(w in key for w in _LOAD_WORDS):
        return "load", False
    if any(w in key for w in _LAUNCH_WORDS):
        return "launch", False
    if any(w in key for w in _FAULT_WORDS):
        return "fault", True
    return "error", True




def is_cuda_error(exc: BaseException) -> bool:
    """Is ``exc`` an error CuPy raised for CUDA (driver or runtime)?"""
    return type(exc).__name__ in ("CUDADriverError", "CUDARuntimeError") or (
        type(exc).__module__ or "").startswith(("cupy_backends.cuda", "cupy.cuda"))


__all__ = ["HarnessError", "classify_cuda_error", "is_cuda_error"]
