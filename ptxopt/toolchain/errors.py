"""Errors raised by :mod:`ptxopt.toolchain`.

Every failure that callers are expected to handle (a tool is missing, the PTX
does not assemble, a tool hangs) is a :class:`ToolchainError`, so a driver can
``except ToolchainError`` and print ``str(err)`` -- the messages are written to
be shown to a user as they are, without a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


class ToolchainError(Exception):
    """Base class of every error this package raises on purpose.

    ``transient`` says the failure is the tool's or the machine's, not the
    input's: running the same command again may well succeed, so such a
    failure is never cached as a result and never called bad input.
    """

    transient = False


class ToolNotFound(ToolchainError):
    """ptxas or nvdisasm could not be located (wheels missing, bad override)."""


class UnsupportedPTXVersion(ToolchainError):
    """No installed ptxas accepts the module's ``.version``."""


class UnsupportedArch(ToolchainError):
    """No installed ptxas (that accepts the ``.version``) can target ``arch``."""


class ToolchainTimeout(ToolchainError):
    """A tool ran longer than the caller's timeout and was killed (transient)."""

    transient = True

    def __init__(self, tool: str, timeout: float):
        self.tool = tool
        self.timeout = timeout
        super().__init__(f"{tool} did not finish within {timeout:g} s and was killed")


class ToolCrashed(ToolchainError):
    """A tool died without judging its input: killed by a signal, out of
    memory, or an internal error of its own (transient).

    The run was already retried once (:func:`ptxopt.toolchain.process.run_tool`);
    ``why`` is what happened in words ("killed by signal SIGSEGV").
    """

    transient = True

    def __init__(self, tool: str, why: str, log: str = "", *, repeated: bool = False):
        self.tool = tool
        self.why = why
        self.log = log
        #: both tries failed the same way: most likely the tool's bug on this very input, which running
        #: again will not cure (still never cached: the next tool version may not have it)
        self.repeated = repeated
        if repeated:
            tail = ("on both tries, the same way: deterministic on this input, a bug of the tool rather than "
                    "a verdict on the PTX; running again will not help (try another --arch or tool version)")
        else:
            tail = "(a toolchain failure, not a verdict on the PTX; retried once)"
        super().__init__(f"{tool} {why} {tail}")


def is_transient(e: BaseException) -> bool:
    """Is ``e`` a toolchain failure that says nothing about the input (see :class:`ToolchainError`)?"""
    return isinstance(e, ToolchainError) and e.transient


@dataclass(frozen=True)
class Diagnostic:
    """One message ptxas printed about the input (error, fatal or warning).

    ``line`` is the PTX source line ptxas names (1-based), or None for
    messages not tied to a line (e.g. a bad command-line option).
    """

    severity: str  # "error", "fatal" or "warning"
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.severity}: {self.message}"


class PtxasError(ToolchainError):
    """ptxas rejected the PTX.

    ``line``/``message`` describe the *first* real error (the one to fix
    first; later ones are often consequences), ``diagnostics`` holds all of
    them and ``log`` is ptxas's full output with the temporary file path
    removed.
    """

    def __init__(self, diagnostics: tuple[Diagnostic, ...], log: str, returncode: int):
        self.diagnostics = diagnostics
        self.log = log
        self.returncode = returncode
        first = _first_error(diagnostics)
        if first is None:
            tail = log.strip().splitlines()[-1:] or [f"ptxas exited with status {returncode}"]
            first = Diagnostic("error", None, tail[0])
        self.line = first.line
        self.message = first.message
        self.severity = first.severity
        super().__init__(str(first))


class NvdisasmError(ToolchainError):
    """nvdisasm failed on a cubin (corrupt input, unsupported architecture)."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message)


# ptxas closes every failed run with this summary; it never says what is wrong.
_GENERIC_FATAL = "Ptx assembly aborted due to errors"


def _first_error(diagnostics: tuple[Diagnostic, ...]) -> Diagnostic | None:
    errors = [d for d in diagnostics if d.severity in ("error", "fatal")]
    specific = [d for d in errors if d.message != _GENERIC_FATAL]
    return (specific or errors or [None])[0]
