"""The GPU harness child process: ``python -m ptxopt.gpu.child --result-fd N``.

Reads JSON requests from stdin, answers on file descriptor ``N`` (protocol
in :mod:`ptxopt.gpu.protocol`). It owns the only CUDA context involved, so
a kernel that corrupts it takes down nothing but this process: after a
fatal error (a fault) the child answers and exits, and the parent starts a
new one. CuPy and the device are initialised on the first ``measure`` (or
``probe``) request and reused for the following ones.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import time
import traceback

from ptxopt.gpu.protocol import HOOK_ENV


def _hook() -> str | None:
    """Misbehave as ``PTXOPT_GPU_CHILD_HOOK`` asks (tests only); returns
    ``"garbage"`` when the response itself should be broken."""
    hook = os.environ.get(HOOK_ENV, "")
    if not hook:
        return None
    if hook == "crash":
        os._exit(139)
    if hook == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(5)  # the signal is delivered asynchronously
        os._exit(139)
    if hook == "hang":
        time.sleep(3600)
    if hook == "raise":
        raise RuntimeError(f"failure injected by {HOOK_ENV}=raise")
    if hook == "garbage":
        return "garbage"
    if hook.startswith("crash-once:"):
        marker = hook.split(":", 1)[1]
        if not os.path.exists(marker):
            with open(marker, "w") as fh:
                fh.write(str(os.getpid()))
            os._exit(139)
        return None
    raise RuntimeError(f"unknown {HOOK_ENV} value {hook!r}")


class Child:
    def __init__(self):
        self.session = None
        self.probe: dict | None = None

    def _probe(self) -> dict:
        if self.probe is None:
            from ptxopt.gpu.probe import probe_in_process

            self.probe = probe_in_process()
        return self.probe

    def handle(self, req: dict) -> tuple[dict | None, bool]:
        """``(response, exit_after)``."""
        kind = req.get("kind")
        if kind == "ping":
            return {"kind": "ping", "pid": os.getpid()}, False
        if kind == "probe":
            return {"kind": "probe", "info": self._probe()}, False
        if kind == "exit":
            return None, True
        if kind == "measure":
            return self._measure(req)
        return {"kind": kind, "error": f"unknown request kind {kind!r}"}, False

    def _measure(self, req: dict) -> tuple[dict, bool]:
        from ptxopt.gpu.protocol import spec_from_json
        from ptxopt.gpu.measurement import GpuMeasurement

        spec = spec_from_json(req["spec"])
        base = {"kernel": spec.entry, "kernel_id": spec.id, "warmup": int(req.get("warmup", 0)),
                "repeats": int(req.get("repeats", 0)), "seed": int(req.get("seed", 0))}
        try:
            if _hook() == "garbage":
                return {"garbage": True}, False
        except RuntimeError:
            return {"kind": "measure", "fatal": False, "result": GpuMeasurement.failure(
                "error", traceback.format_exc(limit=3), **base).to_json()}, False
        if self.session is None:
            info = self._probe()
            if not info.get("available"):
                return {"kind": "measure", "fatal": False, "result": GpuMeasurement.failure(
                    "unavailable", info.get("reason", ""), **base).to_json()}, False
            from ptxopt.gpu.session import GpuSession

            self.session = GpuSession()
        try:
            res, fatal = self.session.measure(
                req["ptx"], spec, reference_ptx=req.get("reference_ptx"), warmup=int(req.get("warmup", 50)),
                repeats=int(req.get("repeats", 200)), arch=req.get("arch"), seed=int(req.get("seed", 0)),
                flavours=tuple(req.get("flavours") or ("random", "edge")))
        except Exception:
            # a bug in the harness, or a CUDA error outside the categorised paths: report it and
            # start afresh (the context may be in any state)
            return {"kind": "measure", "fatal": True, "result": GpuMeasurement.failure(
                "error", "harness exception: " + traceback.format_exc(limit=6), **base).to_json()}, True
        return {"kind": "measure", "fatal": fatal, "result": res.to_json()}, fatal


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptxopt.gpu.child", description=__doc__.splitlines()[0])
    ap.add_argument("--result-fd", type=int, required=True, help="file descriptor for the JSON responses")
    args = ap.parse_args(argv)
    faulthandler.enable()  # a native crash leaves a Python traceback in the log the parent quotes
    out = os.fdopen(args.result_fd, "w", buffering=1, encoding="utf-8")
    child = Child()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError as e:
            out.write(json.dumps({"error": f"request is not JSON: {e}"}) + "\n")
            continue
        resp, exit_after = child.handle(req)
        if resp is not None:
            if resp.get("garbage"):
                out.write("this is not JSON\n")
            else:
                out.write(json.dumps(resp) + "\n")
            out.flush()
        if exit_after:
            out.close()
            # a lost CUDA context can hang interpreter teardown: leave without it
            os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
