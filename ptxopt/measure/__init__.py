"""Where cycle counts come from: the measurement backends, in one package.

* :mod:`ptxopt.measure.backend` -- the :class:`Backend` protocol (``name``,
  ``is_estimate``, ``pipelined``, ``measure``), :class:`Measurement`,
  :class:`MeasureJob`, :class:`MeasureError`, :class:`BackendUnavailable`;
* :mod:`ptxopt.measure.backend_registry` -- :func:`get_backend`,
  :func:`register_backend`, :func:`backend_names`, :func:`is_estimate`;
* :mod:`ptxopt.measure.sim` -- the ``sim`` backend (an ESTIMATE, CPU only),
  adapting the model of :mod:`ptxopt.sim`, with :mod:`ptxopt.measure.disasm`
  (batched nvdisasm) and :mod:`ptxopt.measure.measured_trips` (loop trip counts from
  the interpreter);
* :mod:`ptxopt.measure.gpu` -- the ``gpu`` backend (a MEASUREMENT), adapting
  the child-process harness of :mod:`ptxopt.gpu`.

Callers decide by the flags, never by a backend's name: ``is_estimate``
(reports say ESTIMATE or MEASUREMENT) and ``pipelined`` (the evaluator
overlaps measuring with its other work and runs several worker processes
only for a pipelined backend).  The evaluator (:mod:`ptxopt.evaluate`) uses
this package; nothing here imports the evaluator.
"""

from __future__ import annotations

from ptxopt.measure.backend import (Backend, BackendUnavailable, MeasureError, MeasureJob, Measurement, is_pipelined,
                                    measure_many)
from .gpu import GpuBackend
from ptxopt.measure.backend_registry import backend_names, backend_version, get_backend, is_estimate, register_backend
from .sim import SimBackend

__all__ = ["Backend", "BackendUnavailable", "MeasureError", "MeasureJob", "Measurement", "SimBackend", "GpuBackend",
           "get_backend", "register_backend", "backend_names", "backend_version", "is_estimate", "is_pipelined",
           "measure_many"]
