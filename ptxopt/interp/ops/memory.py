"""Memory instructions: ld ldu st atom red cp.async prefetch membar fence.

Loads and stores go through :class:`ptxopt.interp.device_memory.Memory`, which
checks bounds, state space and natural alignment of the *whole* access
(``ld.v4.f32`` needs 16 bytes). A narrow load into a wider register extends
(sign-extends for ``.s8/.s16/.s32``); a narrow store keeps the low bits.

Atomics are performed one thread at a time in ascending thread index per
address (rounds of distinct addresses are vectorised), so results that
depend on order, such as float sums and the values ``atom`` returns, are
deterministic. ``atom.add.f32`` flushes subnormals, as the ISA specifies.

``cp.async`` copies are *deferred*: the source is read (and checked) when the
instruction executes, but the shared-memory destination is written only when
a ``cp.async.wait_group``/``wait_all`` retires the copy's group, so a kernel
(or a transformed one) that reads the destination too early sees stale data,
as it may on the GPU. Memory ordering instructions (``membar``, ``fence``)
are no-ops: execution is sequential.
"""

from __future__ import annotations

import numpy as np

from ptxopt.ptx import opcodes
from ptxopt.interp import dtypes, fp
from ptxopt.interp.dtypes import UINT
from ptxopt.interp.ops.op_helpers import pack16, split16
from ptxopt.interp.cta_state import ALL
from ptxopt.ptx.ir import Vec
from ptxopt.ptx.operand_facts import immediate

SPACE_MODS = opcodes.SPACE_MODIFIERS
MEM_MODS = opcodes.MEMORY_QUALIFIERS


def _mem_flags_ok(d, ins, extra=()):
    types = []
    for m in ins.modifiers:
        if m in opcodes.TYPE_BITS:
            types.append(m)
        elif m in SPACE_MODS or m in MEM_MODS or m in extra:
            continue
        elif m.startswith(("L1::", "L2::", "level::")):
            continue
        else:
            raise d.unsupported(f"modifier .{m}")
    return types


def _space(ins) -> str:
    sp = opcodes.mem_space(ins)
    if sp == "shared" and "shared::cluster" in ins.modifiers:
        return "shared"  # a single-CTA cluster: the CTA's own shared memory
    return sp


def _elem(t: str) -> int:
    return max(1, dtypes.bits(t) // 8)


def c_ld(ins, d):
    types = _mem_flags_ok(d, ins)
    if len(types) != 1:
        raise d.unsupported("ld needs one type")
    t = types[0]
    if t == "b128":
        raise d.unsupported(".b128 loads")
    space = _space(ins)
    ops = ins.operands
    if len(ops) not in (2, 3):
        raise d.unsupported("operand count")
    dst = ops[0]
    n = opcodes.vector_width(ins)
    items = list(dst.items) if type(dst) is Vec else [dst]
    if len(items) != n:
        raise d.unsupported("vector width does not match the destination")
    ws = [d.write(o, t) for o in items]
    ga = d.addr(ops[1], space)
    eb = _elem(t)
    vd = dtypes.value_dtype(t)
    ins_ = ins

    def run(fr, sel):
        cta = fr.cta
        idx = cta.all_idx if sel is ALL else sel
        vals = cta.mem.load(ga(fr, sel), eb, n, space, (ins_, cta), idx)
        for w, v in zip(ws, vals):
            w(fr, sel, v.view(vd))

    return run


def c_st(ins, d):
    types = _mem_flags_ok(d, ins)
    if len(types) != 1:
        raise d.unsupported("st needs one type")
    t = types[0]
    if t == "b128":
        raise d.unsupported(".b128 stores")
    space = _space(ins)
    ops = ins.operands
    if len(ops) != 2:
        raise d.unsupported("operand count")
    n = opcodes.vector_width(ins)
    src = ops[1]
    items = list(src.items) if type(src) is Vec else [src]
    if len(items) != n:
        raise d.unsupported("vector width does not match the source")
    rs = [d.read(o, t) for o in items]
    ga = d.addr(ops[0], space)
    eb = _elem(t)
    ut = UINT[eb * 8]
    ins_ = ins

    def run(fr, sel):
        cta = fr.cta
        idx = cta.all_idx if sel is ALL else sel
        vals = [r(fr, sel).view(ut) for r in rs]
        cta.mem.store(ga(fr, sel), eb, vals, space, (ins_, cta), idx)

    return run


# --------------------------------------------------------------------------
# atomics
# --------------------------------------------------------------------------

ATOM_OPS = opcodes.ATOMIC_OPERATIONS


def _atom_fn(op: str, t: str, d):
    k = dtypes.kind(t)
    if op == "exch":
        return lambda cur, b, c: b
    if op == "cas":
        return lambda cur, b, c: np.where(cur == b, c, cur)
    if op in ("and", "or", "xor"):
        if k == "f":
            raise d.unsupported(f"atom.{op}.{t}")
        return {"and": lambda cur, b, c: cur & b, "or": lambda cur, b, c: cur | b,
                "xor": lambda cur, b, c: cur ^ b}[op]
    if op == "inc":
        if t != "u32":
            raise d.unsupported("atom.inc needs .u32")
        return lambda cur, b, c: np.where(cur >= b, np.uint32(0), cur + np.uint32(1))
    if op == "dec":
        if t != "u32":
            raise d.unsupported("atom.dec needs .u32")
        return lambda cur, b, c: np.where((cur == 0) | (cur > b), b, cur - np.uint32(1))
    if op == "add":
        if t == "f32":
            return lambda cur, b, c: fp.add_f32(cur, b, "rn", ftz=True)
        if t == "f64":
            return lambda cur, b, c: fp.f64_op("add", (cur, b))
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            fmt = "f16" if t.startswith("f16") else "bf16"

            def lane(x, y):
                return fp.round_f16_op(fmt, "add", (x, y))

            if t.endswith("x2"):
                def add2(cur, b, c):
                    (cl, ch), (bl, bh) = split16(cur), split16(b)
                    return pack16(lane(cl, bl), lane(ch, bh))
                return add2
            return lambda cur, b, c: lane(cur, b)
        return lambda cur, b, c: cur + b
    if op in ("min", "max"):
        if k == "f":
            if t not in ("f32", "f64"):
                raise d.unsupported(f"atom.{op}.{t}")
            return lambda cur, b, c: fp.min_max(cur, b, op == "max", False, t)
        f = np.maximum if op == "max" else np.minimum
        return lambda cur, b, c: f(cur, b)
    raise d.unsupported(f"atom.{op}")


def c_atom(ins, d, red=False):
    types = _mem_flags_ok(d, ins, extra=ATOM_OPS | {"noftz", "acq_rel"})
    if len(types) != 1:
        raise d.unsupported("atom needs one type")
    t = types[0]
    ops_ = [m for m in ins.modifiers if m in ATOM_OPS]
    if len(ops_) != 1 or any(m in ("v2", "v4", "v8") for m in ins.modifiers):
        raise d.unsupported("atom operation")
    op = ops_[0]
    space = _space(ins)
    operands = ins.operands
    nsrc = 2 if op == "cas" else 1
    want = (1 if red else 2) + nsrc
    if len(operands) < want:
        raise d.unsupported("operand count")
    vt = {"f16x2": "b32", "bf16x2": "b32", "f16": "b16", "bf16": "b16"}.get(t, t)
    w = None if red else d.write(operands[0], vt)
    ga = d.addr(operands[0 if red else 1], space)
    base = 1 if red else 2
    rb = d.read(operands[base], vt)
    rc = d.read(operands[base + 1], vt) if op == "cas" else None
    fn = _atom_fn(op, t, d)
    eb = max(2, dtypes.bits(vt) // 8) if vt != "b16" else 2
    vd = dtypes.value_dtype(vt)
    ins_ = ins

    def run(fr, sel):
        cta = fr.cta
        idx = cta.all_idx if sel is ALL else sel
        n = len(idx)
        a = np.broadcast_to(ga(fr, sel), (n,))
        b = np.broadcast_to(rb(fr, sel), (n,))
        c = np.broadcast_to(rc(fr, sel), (n,)) if rc is not None else b
        mem = cta.mem
        site = (ins_, cta)
        mem.locate(a, eb, space, True, site, idx)
        order = np.argsort(a, kind="stable")  # equal addresses keep thread order
        sa = a[order]
        start = np.ones(n, dtype=bool)
        start[1:] = sa[1:] != sa[:-1]
        first = np.flatnonzero(start)
        rank = np.arange(n) - first[np.cumsum(start) - 1]
        old = np.empty(n, dtype=vd)
        if mem.race is not None:
            mem.race.muted += 1  # atomics do not race with each other
        try:
            for r in range(int(rank.max()) + 1 if n else 0):
                pos = np.sort(order[rank == r])
                cur = mem.load(a[pos], eb, 1, space, site, idx[pos])[0].view(vd)
                new = np.asarray(fn(cur, b[pos], c[pos]), dtype=vd)
                mem.store(a[pos], eb, [new.view(UINT[eb * 8])], space, site, idx[pos])
                old[pos] = cur
        finally:
            if mem.race is not None:
                mem.race.muted -= 1
        if w is not None:
            w(fr, sel, old)

    return run


# --------------------------------------------------------------------------
# cp.async
# --------------------------------------------------------------------------


class PendingCopy:
    """Copies issued by one ``cp.async`` for some threads, not yet retired."""

    __slots__ = ("threads", "groups", "dst", "data", "ins")

    def __init__(self, threads, groups, dst, data, ins):
        self.threads = threads
        self.groups = groups
        self.dst = dst
        self.data = data  # (n, cp_size) uint8
        self.ins = ins


def c_cp(ins, d):
    mods = ins.modifiers
    if not mods or mods[0] != "async":
        raise d.unsupported("cp without .async")
    rest = mods[1:]
    if rest == ("commit_group",):
        return _cp_commit
    if rest in (("wait_group",), ("wait_all",)):
        if rest == ("wait_all",):
            keep = 0
            commit = True
        else:
            keep_arr = d.read(ins.operands[0], "u32")
            keep = int(keep_arr(None, None)[0])
            commit = False

        def wait(fr, sel):
            cta = fr.cta
            idx = cta.all_idx if sel is ALL else sel
            if commit:
                cta.cp_groups[idx] += 1
            retire_copies(cta, idx, keep)

        return wait
    flags = set(rest)
    if not flags & {"ca", "cg"} or "shared" not in {m.split("::")[0] for m in flags}:
        raise d.unsupported(f"cp.async form .{'.'.join(rest)}")
    extra = {m for m in flags if not m.startswith(("L2::", "level::"))} - {
        "ca", "cg", "shared", "shared::cta", "global"}
    if extra:
        raise d.unsupported("modifier ." + " .".join(sorted(extra)))
    ops = ins.operands
    if len(ops) < 3:
        raise d.unsupported("operand count")
    gd = d.addr(ops[0], "shared")
    gs = d.addr(ops[1], "global")
    cp_size = int(d.read(ops[2], "u32")(None, None)[0])
    if cp_size not in (4, 8, 16):
        raise d.unsupported(f"cp-size {cp_size}")
    n_extra = len(ops) - 3 - (1 if "L2::cache_hint" in flags else 0)
    if n_extra > 1:
        raise d.unsupported("cp.async with an ignore-src operand")
    rsrc = d.read(ops[3], "u32") if n_extra == 1 else None
    ins_ = ins

    def run(fr, sel):
        cta = fr.cta
        idx = cta.all_idx if sel is ALL else sel
        n = len(idx)
        dst = np.broadcast_to(gd(fr, sel), (n,))
        src = np.broadcast_to(gs(fr, sel), (n,))
        site = (ins_, cta)
        cta.mem.locate(dst, cp_size, "shared", True, site, idx)
        sizes = np.broadcast_to(rsrc(fr, sel), (n,)).astype(np.int64) if rsrc is not None else \
            np.full(n, cp_size, dtype=np.int64)
        sizes = np.minimum(sizes, cp_size)
        if cta.mem.masked is not None and rsrc is not None:
            zero = int((cp_size - sizes).sum())
            if zero:
                cta.mem.note_masked(zero, ins_)  # the zero-filled bytes: masked reads
        data = np.zeros((n, cp_size), dtype=np.uint8)
        mis = ((src & np.uint64(cp_size - 1)) != 0) & (sizes > 0)
        if mis.any():
            bad = np.flatnonzero(mis)[0]
            cta.mem.locate(src[bad:bad + 1], cp_size, "global", False, site, idx[bad:bad + 1])
        for s in np.unique(sizes):
            if s == 0:
                continue  # nothing is read: the destination is zero-filled
            pos = np.flatnonzero(sizes == s)
            data[pos, :s] = _read_bytes(cta, src[pos], int(s), site, idx[pos])
        cta.cp_async.append(PendingCopy(idx.copy(), cta.cp_groups[idx].copy(), dst.copy(), data, ins_))

    return run


def global_read_bytes(ins) -> int:
    """Bytes of global memory one thread's ``ins`` reads: an ``ld``/``ldu``
    of the global or generic space (vector width x element size), a
    ``cp.async`` copy (its cp-size); 0 for every other instruction. A guarded
    one whose guard is false counts these bytes as masked
    (:meth:`ptxopt.interp.device_memory.Memory.note_masked`)."""
    if ins.opcode in ("ld", "ldu"):
        return (opcodes.access_bytes(ins) or 0) if opcodes.mem_space(ins) in ("global", "generic") else 0
    if ins.opcode == "cp" and ins.modifiers[:1] == ("async",) and len(ins.operands) >= 3:
        size = immediate(ins.operands[2])
        return size if type(size) is int else 0
    return 0


def _read_bytes(cta, src, s, site, idx):
    """``s`` bytes at each address (bounds-checked, alignment checked by the caller)."""
    parts = cta.mem.locate(src, s, "global", False, site, idx, align=False)
    cta.mem.note_reads(parts, s, site)  # the read footprint sees the copy's source bytes
    out = np.zeros((len(src), s), dtype=np.uint8)
    for r, pos, off in parts:
        rows = np.arange(len(src)) if pos is None else pos
        cols = off[:, None] + np.arange(s)
        rr = idx[rows][:, None] if r.per_thread else 0
        out[rows] = r.data[rr, cols]
    return out


def _cp_commit(fr, sel):
    cta = fr.cta
    idx = cta.all_idx if sel is ALL else sel
    cta.cp_groups[idx] += 1


def retire_copies(cta, idx, keep: int) -> None:
    """Complete the copies of threads ``idx`` in groups older than the
    ``keep`` most recent committed ones."""
    mine = np.zeros(cta.T, dtype=bool)
    mine[idx] = True
    still = []
    for pc in cta.cp_async:
        done = mine[pc.threads] & (pc.groups < cta.cp_groups[pc.threads] - keep)
        if done.any():
            pos = np.flatnonzero(done)
            cols = [pc.data[pos, k] for k in range(pc.data.shape[1])]
            cta.mem.store(pc.dst[pos], 1, cols, "shared", (pc.ins, cta), pc.threads[pos])
            if done.all():
                continue
            keep_pos = np.flatnonzero(~done)
            pc = PendingCopy(pc.threads[keep_pos], pc.groups[keep_pos], pc.dst[keep_pos],
                             pc.data[keep_pos], pc.ins)
        still.append(pc)
    cta.cp_async = still


# --------------------------------------------------------------------------
# no-ops and the rest
# --------------------------------------------------------------------------


def _noop(fr, sel):
    return None


def c_noop(ins, d):
    return _noop


def c_createpolicy(ins, d):
    w = d.write(ins.operands[0], "b64")
    zero = np.zeros(1, dtype=np.uint64)
    return lambda fr, sel: w(fr, sel, zero)


OPS = {
    "ld": c_ld,
    "ldu": c_ld,
    "st": c_st,
    "atom": c_atom,
    "red": lambda i, d: c_atom(i, d, red=True),
    "cp": c_cp,
    "prefetch": c_noop,
    "prefetchu": c_noop,
    "membar": c_noop,
    "fence": c_noop,
    "applypriority": c_noop,
    "createpolicy": c_createpolicy,
}
