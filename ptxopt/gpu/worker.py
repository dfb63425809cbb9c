"""The caller's side of the GPU harness: a supervised child process.

:class:`GpuWorker` keeps one ``python -m ptxopt.gpu.child`` process (its own
session and process group) and sends it requests (protocol:
:mod:`ptxopt.gpu.protocol`). The child is started on the first request and
reused -- importing CuPy and creating a CUDA context take seconds, a
measurement tens of milliseconds -- and replaced whenever it

* reports a fatal error (a fault: its CUDA context is gone) -- ``fault``;
* does not answer within the request's time limit: the whole process group
  is killed with SIGKILL -- ``timeout``;
* dies (signal, non-zero exit) or answers with something that is not a JSON
  line -- ``crash``, with the exit status and the tail of its output.

:func:`measure_on_gpu` is the plain function the evaluator's ``gpu``
backend wraps: it never raises for a candidate's failure, it returns a
:class:`~ptxopt.gpu.measurement.GpuMeasurement` whose ``status`` says what
happened. It uses one worker per process (created lazily, closed at exit,
recreated after a ``fork``).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ptxopt.gpu.measurement import GpuMeasurement

DEFAULT_TIMEOUT = 120.0  # seconds per request; the first one includes CuPy import and context creation
_LOG_TAIL = 2000


class WorkerFailure(Exception):
    """The child did not produce a response: ``status`` is ``timeout`` or ``crash``."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _describe_exit(rc: int | None) -> str:
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    if rc > 128:
        try:
            return f"exit status {rc} (128 + {signal.Signals(rc - 128).name})"
        except ValueError:
            pass
    return f"exit status {rc}"


class GpuWorker:
    """One supervised harness child. Thread-safe (requests are serialised).

    ``extra_env`` is added to the child's environment (tests use it for
    :data:`ptxopt.gpu.protocol.HOOK_ENV`); ``python`` is the interpreter
    that runs the child.
    """

    def __init__(self, *, extra_env: dict | None = None, python: str | None = None):
        self.extra_env = dict(extra_env or {})
        self.python = python or sys.executable
        self._proc: subprocess.Popen | None = None
        self._rfd: int | None = None
        self._log = None
        self._buf = b""
        self._lock = threading.Lock()
        self.starts = 0  # children started so far (restarts show up here)

    # -- life cycle --------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _env(self) -> dict:
        env = os.environ.copy()
        env.update(self.extra_env)
        # the child must import this very ptxopt, installed or not
        root = str(Path(__file__).resolve().parent.parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def _start(self) -> None:
        self._cleanup()
        r, w = os.pipe()
        self._log = tempfile.TemporaryFile(prefix="ptxopt-gpu-child-")
        try:
            self._proc = subprocess.Popen(
                [self.python, "-m", "ptxopt.gpu.child", "--result-fd", str(w)],
                stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, pass_fds=(w,),
                start_new_session=True, env=self._env(), close_fds=True)
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self._rfd, self._buf = r, b""
        self.starts += 1

    def _kill(self) -> None:
        """SIGKILL the child's whole process group (ptxas runs included)."""
        p = self._proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # its own group: start_new_session
            except (ProcessLookupError, PermissionError):
                p.kill()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _log_tail(self) -> str:
        """The end of the child's output (read with pread: the file offset is
        shared with the child and must not move)."""
        if self._log is None:
            return ""
        try:
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - _LOG_TAIL)
            return os.pread(fd, size - start, start).decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    def _cleanup(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                try:
                    self._proc.stdin.close()
                except OSError:
                    pass
        if self._rfd is not None:
            os.close(self._rfd)
            self._rfd = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self._proc = None
        self._buf = b""

    def close(self, timeout: float = 10.0) -> None:
        """Ask the child to exit; kill it if it does not."""
        with self._lock:
            p = self._proc
            if p is None:
                return
            if p.poll() is None:
                try:
                    p.stdin.write(b'{"kind": "exit"}\n')
                    p.stdin.flush()
                    p.wait(timeout=timeout)
                except (OSError, subprocess.TimeoutExpired):
                    self._kill()
            self._cleanup()

    def __enter__(self) -> "GpuWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # best effort; never raise from a finaliser
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._kill()
            self._cleanup()
        except Exception:
            pass

    # -- requests ----------------------------------------------------------

    def _died(self, what: str) -> WorkerFailure:
        p = self._proc
        rc = None
        if p is not None:
            try:
                rc = p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
                rc = p.returncode
        tail = self._log_tail()
        self._cleanup()
        msg = f"the harness child {what} ({_describe_exit(rc)})"
        if tail:
            msg += f"; its output ends with:\n{tail}"
        return WorkerFailure("crash", msg)

    def request(self, req: dict, timeout: float = DEFAULT_TIMEOUT) -> dict:
        """Send one request, wait at most ``timeout`` seconds for its
        response. Raises :class:`WorkerFailure` (``timeout``/``crash``); the
        child is gone afterwards and the next request starts a new one."""
        with self._lock:
            if not self.alive:
                self._start()
            data = (json.dumps(req) + "\n").encode()
            try:
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._died("exited before taking the request") from None
            deadline = time.monotonic() + timeout
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._kill()
                    tail = self._log_tail()
                    self._cleanup()
                    msg = f"no result within {timeout:g} s; the harness child was killed"
                    if tail:
                        msg += f"; its output ends with:\n{tail}"
                    raise WorkerFailure("timeout", msg)
                ready, _, _ = select.select([self._rfd], [], [], left)
                if not ready:
                    continue
                chunk = os.read(self._rfd, 1 << 16)
                if not chunk:
                    raise self._died("died without answering")
                self._buf += chunk
            line, self._buf = self._buf.split(b"\n", 1)
            try:
                resp = json.loads(line)
                if not isinstance(resp, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                self._kill()
                tail = self._log_tail()
                self._cleanup()
                raise WorkerFailure("crash", f"the harness child broke the protocol ({e}): {line[:200]!r}"
                                    + (f"; its output ends with:\n{tail}" if tail else "")) from None
            if resp.get("fatal"):
                # it exits by itself after a fatal error; make sure, then forget it
                try:
                    self._proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._kill()
                self._cleanup()
            return resp

    def measure(self, ptx_text: str, spec, *, reference_ptx: str | None = None, warmup: int = 50,
                repeats: int = 200, arch: str | None = None, seed: int = 0, flavours=("random", "edge"),
                timeout: float = DEFAULT_TIMEOUT) -> GpuMeasurement:
        from ptxopt.gpu.protocol import measure_request

        req = measure_request(ptx_text, spec, reference_ptx=reference_ptx, warmup=warmup, repeats=repeats,
                              arch=arch, seed=seed, flavours=flavours)
        base = dict(kernel=spec.entry, kernel_id=spec.id, warmup=int(warmup), repeats=int(repeats), seed=int(seed),
                    arch_requested=arch)
        try:
            resp = self.request(req, timeout)
        except WorkerFailure as f:
            return GpuMeasurement.failure(f.status, f.message, **base)
        result = resp.get("result")
        if not isinstance(result, dict):
            return GpuMeasurement.failure("crash", f"the harness child answered without a result: {resp!r:.300}",
                                          **base)
        try:
            return GpuMeasurement.from_json(result)
        except TypeError as e:
            return GpuMeasurement.failure("crash", f"malformed result from the harness child: {e}", **base)


# ---------------------------------------------------------------------------
# The per-process default worker and the entry point
# ---------------------------------------------------------------------------

_DEFAULT: GpuWorker | None = None
_DEFAULT_PID: int | None = None
_DEFAULT_LOCK = threading.Lock()


def default_worker() -> GpuWorker:
    """This process's worker (a forked child gets its own, never its parent's)."""
    global _DEFAULT, _DEFAULT_PID
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT_PID != os.getpid():
            _DEFAULT = GpuWorker()
            _DEFAULT_PID = os.getpid()
        return _DEFAULT


def _close_default() -> None:
    if _DEFAULT is not None and _DEFAULT_PID == os.getpid():
        _DEFAULT.close(timeout=5)


atexit.register(_close_default)


def measure_on_gpu(ptx_text: str, spec, *, warmup: int = 50, repeats: int = 200, arch: str | None = None,
                   timeout: float = DEFAULT_TIMEOUT, reference_ptx: str | None | bool = True, seed: int = 0,
                   flavours=("random", "edge"), worker: GpuWorker | None = None) -> GpuMeasurement:
    """Measure ``ptx_text`` (one kernel, ``spec.entry``) on this machine's GPU
    in a child process; see :mod:`ptxopt.gpu.session` for what it does.

    * ``spec``: the corpus :class:`~ptxopt.kernels.corpus.KernelSpec` the candidate is
      a variant of (launch geometry and inputs); for other kernels build one
      with :func:`ptxopt.gpu.protocol.make_spec`.
    * ``reference_ptx``: the kernel whose outputs the candidate must
      reproduce bit for bit; ``True`` (default) means the spec's own PTX,
      ``None``/``False`` skips the comparison.
    * ``arch``: recorded; the device's own architecture is what is compiled for.
    * ``timeout``: seconds for the whole request (first call: plus CuPy
      import and context creation); past it the child is killed.

    Never raises for a candidate's failure; see
    :class:`~ptxopt.gpu.measurement.GpuMeasurement` for the statuses.
    """
    if reference_ptx is True:
        reference_ptx = spec.ptx_text()
    elif reference_ptx is False:
        reference_ptx = None
    w = worker or default_worker()
    return w.measure(ptx_text, spec, reference_ptx=reference_ptx, warmup=warmup, repeats=repeats, arch=arch,
                     seed=seed, flavours=flavours, timeout=timeout)


__all__ = ["GpuWorker", "WorkerFailure", "measure_on_gpu", "default_worker", "DEFAULT_TIMEOUT"]
