"""Launch contracts for Triton kernels, from what Triton itself knows.

A Triton kernel is launched with ``32 * num_warps`` threads per program and
``metadata["shared"]`` bytes of dynamic shared memory; its PTX parameters
are the non-constexpr arguments of the signature, in order, then the two
scratch pointers Triton 3.9 appends. That is enough for the interpreter to
check a rewrite without hand-written geometry.

What is *not* known is the problem size. One program (grid 1x1x1) is run,
every pointer gets a buffer of ``BUFFER_BYTES`` (the verifier counts a
buffer's coverage up to the last byte stored, so an unknown true size does
not dilute it), and the integer scalars -- sizes and strides alike -- are
tried as :data:`ALTERNATIVES`: first the verifier's own plan, which varies
them per launch (buffer elements, thread count, a small odd number); when
the original cannot run all of those (a stride that large walks off the
buffer), every integer scalar fixed at 16, then at 64. The first
alternative under which the original runs fully decides; a difference
under any is final (:func:`ptxopt.api.check_equivalence`). A 64-bit
integer argument (``i64``) is given a value explicitly, since the verifier
would otherwise take any 64-bit parameter for a pointer.

Kernels that read indices from a buffer (embedding, histogram, gather) get
random floats as indices and fault in the original: their verdict is
``inconclusive`` and Triton's PTX is kept. A contract passed to
:func:`ptxopt.triton.enable` (``contracts={kernel name: Launch}``)
replaces this one.
"""

from __future__ import annotations

from ptxopt.triton.signature import Arg
from ptxopt.equivalence.launch import Launch, Origin, Role

BUFFER_BYTES = 65536
#: Fixed integer-scalar values tried after the verifier's varying plan.
ALTERNATIVES = (None, 16, 64)


def _describe(name: str, num_warps: int, shared: int, args: list[Arg] | None) -> str:
    sig = ", ".join(f"{a.name}: {a.short}" for a in args) if args else "signature unknown"
    return f"triton metadata of {name}: num_warps={num_warps}, shared={shared}, ({sig})"


def triton_contracts(entry: str, ptx_params: list[tuple[str, str]], metadata: dict,
                     args: list[Arg] | None) -> list[Launch]:
    """The contract alternatives for one Triton kernel.

    ``ptx_params``: ``(name, dtype)`` of the entry's ``.param`` list;
    ``metadata``: Triton's compile metadata (``num_warps``, ``num_ctas``,
    ``shared``); ``args``: the signature (:func:`parse_signature`), or None."""
    num_warps = int(metadata.get("num_warps") or 4)
    warp = int(metadata.get("warp_size") or 32)
    shared = int(metadata.get("shared") or 0)
    block = (warp * num_warps, 1, 1)
    i64 = set()
    if args is not None:
        for (pname, _), a in zip(ptx_params, args):
            if not a.is_pointer and a.type in ("i64", "ui64"):
                i64.add(pname)
    source = _describe(entry, num_warps, shared, args)
    out = []
    for fixed in ALTERNATIVES:
        scalars = {p: (fixed or 16) for p in sorted(i64)}
        tag = "integer scalars varied per launch" if fixed is None else f"integer scalars = {fixed}"
        out.append(Launch((1, 1, 1), block, shared, scalars, origin=Origin.TRITON, source=f"{source}; {tag}",
                          entry=entry, buffer_bytes=BUFFER_BYTES, int_scalar=fixed))
    return out


def triton_performance(module, metadata: dict) -> Launch:
    """The performance launch Triton's metadata gives: ``32 * num_warps``
    threads and ``shared`` bytes of dynamic shared memory; the grid is not
    known at compile time (None: the estimate assumes full waves)."""
    warps = int(metadata.get("num_warps") or 4) * int(metadata.get("warp_size") or 32)
    entry = module.entries[0].name if module.entries else None
    return Launch(None, (warps, 1, 1), int(metadata.get("shared") or 0), origin=Origin.TRITON,
                  role=Role.PERFORMANCE, source=f"Triton's metadata: num_warps={warps // 32}, "
                  f"shared={int(metadata.get('shared') or 0)}", entry=entry)


__all__ = ["triton_contracts", "triton_performance", "ALTERNATIVES", "BUFFER_BYTES"]
