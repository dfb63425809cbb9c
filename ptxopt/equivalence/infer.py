"""An *inferred* check launch, for a kernel nobody gave a launch for.

Without a contract, a manifest entry or Triton's metadata, the old fallback
was a *guessed* launch: one block of one thread. Its runs say nothing about
the launches the kernel really gets (one thread never exercises a barrier, a
warp collective or a second block's indexing), so a guessed launch never
supports ``equal`` (:data:`ptxopt.equivalence.launch.CEILING`).

An inferred launch is what the PTX itself allows, chosen to exercise more:

* the block is the kernel's ``.reqntid`` when it has one (exactly what every
  launch must use), else :data:`THREADS` threads in x, fewer when
  ``.maxntid`` allows fewer (a launch above ``.maxntid`` fails);
* :data:`BLOCKS` blocks in x, so that block indexing and inter-block
  independence are exercised;
* :data:`DYNAMIC_SHARED_BYTES` of dynamic shared memory when the kernel
  declares an unsized ``.extern .shared`` array (its size is the launcher's);
* default buffers of :data:`BUFFER_BYTES` per pointer parameter (random
  float32, enough for a few elements per thread of the inferred launch) and
  the interpreter's varying integer-scalar plan (element count, thread count,
  a small odd value).

It is still not the user's launch, so it supports ``equal`` only when the
interpreter's launches stored every byte of every written buffer and ran
every changed instruction (:func:`ptxopt.equivalence.launch.ceiling`); the
note says "inferred".
"""

from __future__ import annotations

from ptxopt.equivalence.launch import Launch, Origin

THREADS = 32  # one full warp per block: warp collectives and shuffles see all lanes
BLOCKS = 2
BUFFER_BYTES = 65536
#: dynamic shared memory given to a kernel that declares an unsized ``.extern .shared`` array: its size
#: is the launcher's, not in the PTX; 32 KiB stays under the 48 KiB per block every sm_70+ device allows
#: without an opt-in, with room for 16 KiB of static shared memory
DYNAMIC_SHARED_BYTES = 32 * 1024


def _directive(fn, name: str) -> tuple[int, int, int] | None:
    for d in fn.directives:
        if d.name.lstrip(".") == name:
            vals = [int(v) for v in d.args] + [1, 1]
            return (vals[0], vals[1], vals[2])
    return None


def _dynamic_shared(fn, module) -> bool:
    """Does the entry (or its module) declare an unsized ``.shared`` array (dynamic shared memory)?"""
    from ptxopt.ptx.ir import Decl, iter_decls

    decls = list(iter_decls(fn.body)) if fn.body is not None else []
    decls += [d for d in (module.items if module is not None else ()) if type(d) is Decl]
    return any(d.space == ".shared" and any(dims and dims[-1] == "" for dims in (it.dims for it in d.items))
               for d in decls)


def infer_launch(fn, module=None) -> Launch:
    """The inferred check launch of the entry ``fn`` (an IR ``Function``;
    ``module``: its module, for module-level dynamic shared memory)."""
    req = _directive(fn, "reqntid")
    if req is not None:
        block, why = req, f".reqntid {req[0]},{req[1]},{req[2]}"
    else:
        cap = _directive(fn, "maxntid")
        limit = cap[0] * cap[1] * cap[2] if cap is not None else THREADS
        block = (max(1, min(THREADS, limit)), 1, 1)
        why = f".maxntid {cap[0]},{cap[1]},{cap[2]}" if cap is not None else "no launch bounds"
    shared = DYNAMIC_SHARED_BYTES if _dynamic_shared(fn, module) else 0
    if shared:
        why += f", {shared // 1024} KiB dynamic shared (an unsized .extern .shared array)"
    return Launch((BLOCKS, 1, 1), block, shared, {}, origin=Origin.INFERRED, source=f"the PTX of {fn.name}: {why}, "
                  f"{BLOCKS} blocks, {BUFFER_BYTES // 1024} KiB buffers", entry=fn.name, buffer_bytes=BUFFER_BYTES)


def ptx_block(fn) -> tuple[tuple[int, int, int], str] | None:
    """``(block, why)``: the block the entry's PTX states for its launches -- ``.reqntid`` (every
    launch has exactly that block; Triton writes it as ``32 * num_warps``), else ``.maxntid`` as a
    labelled ASSUMPTION (the most threads it allows; a launch may use fewer); None: neither."""
    req = _directive(fn, "reqntid")
    if req is not None:
        return req, f"block from the PTX's .reqntid {req[0]},{req[1]},{req[2]}"
    cap = _directive(fn, "maxntid")
    if cap is not None:
        return cap, (f"block ASSUMED from the PTX's .maxntid {cap[0]},{cap[1]},{cap[2]} (the most threads it "
                     "allows; give --perf-block if the launch uses fewer)")
    return None


def bounds_problem(fn, launch) -> str | None:
    """Why ``launch`` could not run the entry ``fn`` on hardware (its block
    breaks the entry's ``.reqntid`` or ``.maxntid``), else None. The
    interpreter would run it anyway, so an answer from it would be about a
    launch that never happens."""
    block = tuple(launch.block)
    req = _directive(fn, "reqntid")
    if req is not None and block != req:
        return f"block {block} is not the entry's .reqntid {req}"
    cap = _directive(fn, "maxntid")
    if cap is not None and block[0] * block[1] * block[2] > cap[0] * cap[1] * cap[2]:
        return f"block {block} has more threads than the entry's .maxntid {cap}"
    return None


__all__ = ["infer_launch", "ptx_block", "bounds_problem", "THREADS", "BLOCKS", "BUFFER_BYTES"]
