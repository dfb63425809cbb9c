"""ptxopt inside Triton: every kernel Triton compiles passes through ptxopt.

::

    import ptxopt.triton
    ptxopt.triton.enable(pipeline="maxnreg_128,reorder_cp")   # or policy=CKPT, pipelines=RESULTS.json
    ...                                                       # compile / launch Triton kernels as usual
    for k in ptxopt.triton.report():
        print(k.line())
    ptxopt.triton.disable()

The hook (:mod:`ptxopt.triton.hook`) sits between Triton's ``ptx`` and
``cubin`` stages; it never lets a rewrite break a compile (Triton's own PTX
is kept, with one warning, whenever ptxas or the equivalence check says
no). Offline tuning: :mod:`ptxopt.triton.cache_dir` reads a Triton cache
directory, :mod:`ptxopt.triton.pipelines` writes/reads the results file
that ``enable(pipelines=...)`` applies. Triton itself is imported only by
:func:`enable` and the cache-key/stage calls it makes.
"""

from ptxopt.triton.hook import KernelReport, PtxoptTritonWarning, disable, enable, report

__all__ = ["enable", "disable", "report", "KernelReport", "PtxoptTritonWarning"]
