"""Counting the distinct bytes (and 32-byte sectors) an affine access touches over a box of index
variables, exactly, or saying why not.

An access is ``base + sum(coef * var) + const`` over variables in ``[0, n)``, with constraints (affine
forms that must be >= 0: the guards of :mod:`ptxopt.analysis.global_footprint`).  Variables that every
form and constraint uses only together as one mixed-radix number are merged, single-variable
constraints clip their variable's range, and the image of the box is counted with interval
arithmetic (a pattern either tiles, is disjoint, or is an interval that overlaps itself).  Several
accesses of one buffer that differ by a constant step, or only by their constants, are one pattern;
small boxes are enumerated point by point.  :class:`Inexact` says the count could not be decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The DRAM transfer unit (bytes).
SECTOR = 32
#: Points (index-variable combinations) an access may enumerate when the algebra cannot decide.
MAX_ENUMERATE = 1 << 20
#: Widest byte range an enumeration marks in a bitmap.
MAX_BITMAP = 1 << 28
#: Largest explicit pattern (bytes or sectors) the interval algebra keeps as an array.
MAX_EXPLICIT = 1 << 16


class NotAffine(Exception):
    """An address or a loop bound that is not affine in the launch's index variables."""


class Inexact(Exception):
    """A guard the counting cannot apply exactly: the count is an upper bound."""


@dataclass(frozen=True)
class Form:
    """``base + sum(coef * var) + const``; ``base`` a pointer parameter name or None."""

    terms: tuple = ()  # sorted (var, coef), coef != 0
    const: int = 0
    base: str | None = None

    @staticmethod
    def of(terms: dict, const: int = 0, base: str | None = None) -> "Form":
        return Form(tuple(sorted((v, c) for v, c in terms.items() if c)), int(const), base)

    @property
    def coefs(self) -> dict:
        return dict(self.terms)

    @property
    def is_const(self) -> bool:
        return not self.terms and self.base is None

    def add(self, other: "Form", sign: int = 1) -> "Form":
        t = self.coefs
        for v, c in other.terms:
            t[v] = t.get(v, 0) + sign * c
        if sign > 0:
            if self.base and other.base:
                raise NotAffine("a sum of two pointers")
            base = self.base or other.base
        else:
            if other.base and other.base != self.base:
                raise NotAffine("a difference of unrelated pointers")
            base = None if other.base else self.base
        return Form.of(t, self.const + sign * other.const, base)

    def scale(self, k: int) -> "Form":
        if self.base is not None and k != 1:
            raise NotAffine("a scaled pointer")
        return Form.of({v: c * k for v, c in self.terms}, self.const * k, self.base)

    def substitute(self, var: str, shift: int) -> "Form":
        """``var -> var + shift``."""
        return Form(self.terms, self.const + self.coefs.get(var, 0) * shift, self.base)


def bounds(form: Form, ranges: dict) -> tuple[int, int]:
    lo = hi = form.const
    for v, c in form.terms:
        n = ranges[v]
        lo += min(0, c * (n - 1))
        hi += max(0, c * (n - 1))
    return lo, hi


@dataclass(frozen=True)
class Access:
    """One global access: ``kind`` read/write/both, its address form, width and constraints (forms that
    must be >= 0), or ``why`` it is not affine / ``inexact`` why a guard was dropped."""

    iid: int
    buffer: str | None
    kind: str
    form: Form | None
    width: int
    constraints: tuple = ()
    why: str = ""
    inexact: str = ""


@dataclass(frozen=True)
class NotEqual:
    """``form != 0``."""

    form: Form


@dataclass(frozen=True)
class AfterEntry:
    """``form >= 0`` for iterations ``k >= 1``; at ``k = 0`` the loop's entry decides."""

    form: Form
    k: str


# -- counting ---------------------------------------------------------------------------------------


class _Pattern:
    """A set of integers: an interval ``[0, span)``, or a small explicit sorted array, or a summary
    (count, span) of disjoint translates."""

    def __init__(self, arr=None, count=0, span=0, interval=False, gap=None):
        if arr is not None:
            count = len(arr)
            span = int(arr[-1] - arr[0] + 1) if count else 0
            interval = count == span
            gap = int(np.diff(arr).max()) - 1 if count > 1 else 0
            if interval or count > MAX_EXPLICIT:
                arr = None
        self.arr = arr
        self.count, self.span, self.interval = count, span, interval
        # the longest run of integers missing between two members (None: not known); under a sector,
        # every sector from the first member's to the last's holds a member
        self.gap = 0 if interval else gap

    def add(self, c: int, n: int) -> "_Pattern":
        """The union of ``self + c*x`` for ``x`` in ``[0, n)`` (``c > 0``)."""
        if n <= 1 or self.count == 0:
            return self
        if c >= self.span:  # disjoint translates, in order
            count, span = self.count * n, c * (n - 1) + self.span
            if self.interval and c == self.span:
                return _Pattern(None, count, span, True)
            if self.arr is not None and count <= MAX_EXPLICIT:
                return _Pattern((self.arr[None, :] + c * np.arange(n, dtype=np.int64)[:, None]).ravel())
            if self.interval and count <= MAX_EXPLICIT:
                base = np.arange(self.span, dtype=np.int64)
                return _Pattern((base[None, :] + c * np.arange(n, dtype=np.int64)[:, None]).ravel())
            gap = None if self.gap is None else max(self.gap, c - self.span)
            return _Pattern(None, count, span, False, gap)
        if self.interval:  # overlapping translates of an interval: one interval
            span = c * (n - 1) + self.span
            return _Pattern(None, span, span, True)
        if self.arr is not None and self.arr.size * n <= 4 * MAX_EXPLICIT:
            return _Pattern(np.unique((self.arr[None, :] + c * np.arange(n, dtype=np.int64)[:, None]).ravel()))
        raise Inexact("an overlapping pattern too large to enumerate")


def _image(terms: list, const: int, width: int) -> tuple[int, int | None]:
    """(bytes, sectors) of ``{const + sum(c*x) + [0, width)}`` over ``x`` in ``[0, n)``, terms ``(c, n)``;
    sectors None when only the bytes could be decided."""
    pos = []
    for c, n in terms:
        if n <= 0:
            return 0, 0
        if c < 0:
            const += c * (n - 1)
            c = -c
        if c and n > 1:
            pos.append((c, n))
    pos.sort()
    p = _Pattern(None, width, width, True)
    for c, n in pos:
        p = p.add(c, n)
    nbytes = p.count
    # sectors: the terms whose coefficient is a multiple of the sector move whole sectors
    split = len(pos)
    while split and pos[split - 1][0] % SECTOR == 0:
        split -= 1
    inner = _Pattern(None, width, width, True)
    try:
        for c, n in pos[:split]:
            inner = inner.add(c, n)
    except Inexact:
        return nbytes, None
    if inner.interval or inner.arr is None and inner.gap is not None and inner.gap < SECTOR:
        first, last = const // SECTOR, (const + inner.span - 1) // SECTOR
        q = _Pattern(None, last - first + 1, last - first + 1, True)
    elif inner.arr is not None:
        q = _Pattern(np.unique((inner.arr + const) // SECTOR))
    else:
        return nbytes, None  # bytes exact; sectors not decided (the floor then counts bytes)
    try:
        for c, n in pos[split:]:
            q = q.add(c // SECTOR, n)
    except Inexact:
        return nbytes, None
    return nbytes, q.count


def _merge(form: Form, cons: list, ranges: dict):
    """Merge variables used only as one mixed-radix number; returns (form, cons, ranges)."""
    forms = [form] + cons
    changed = True
    while changed:
        changed = False
        vs = sorted({v for f in forms for v, _ in f.terms}, key=lambda v: (min(abs(f.coefs.get(v, 0)) or 1 << 62
                                                                              for f in forms), v))
        for u in vs:
            nu = ranges[u]
            for w in vs:
                if w == u:
                    continue
                if all(f.coefs.get(w, 0) == f.coefs.get(u, 0) * nu for f in forms):
                    name = f"({u}+{nu}*{w})"
                    ranges = {**ranges, name: nu * ranges[w]}
                    forms = [Form.of({**{v: c for v, c in f.terms if v not in (u, w)},
                                      **({name: f.coefs[u]} if f.coefs.get(u) else {})}, f.const, f.base)
                             for f in forms]
                    changed = True
                    break
            if changed:
                break
    return forms[0], forms[1:], ranges


def _clip(form: Form, cons: list, ranges: dict):
    """Apply single-variable constraints to their variable's range; drop those always true.
    Returns (form, remaining constraints, ranges) or None when the access never runs."""
    ranges = dict(ranges)
    rest = []
    cons = list(cons)
    for i in range(len(cons)):
        c = cons[i]  # the later constraints are shifted with each clip: read them from the list
        lo, hi = bounds(c, ranges)
        if lo >= 0:
            continue
        if hi < 0:
            return None
        if len(c.terms) != 1:
            rest.append(c)
            continue
        (v, a), = c.terms
        n = ranges[v]
        # a*v + const >= 0
        vlo, vhi = (max(0, -(c.const // a)), n - 1) if a > 0 else (0, min(n - 1, c.const // -a))
        if vhi < vlo:
            return None
        if vlo:
            form = form.substitute(v, vlo)
            cons = [x.substitute(v, vlo) for x in cons]
            rest = [x.substitute(v, vlo) for x in rest]
        ranges[v] = vhi - vlo + 1
    # a clip may make another constraint decidable
    out = []
    for c in rest:
        lo, hi = bounds(c, ranges)
        if lo >= 0:
            continue
        if hi < 0:
            return None
        out.append(c)
    return form, out, ranges


def _not_equal(f: Form, ranges: dict) -> list | None:
    """``f != 0`` as plain constraints: [] when it always holds, a clip when it leaves out an end of one
    variable's range; None when neither (an inner value, several variables)."""
    lo, hi = bounds(f, ranges)
    if lo > 0 or hi < 0:
        return []
    if len(f.terms) != 1:
        return None
    (v, a), = f.terms
    if f.const % a:
        return []  # never zero
    v0, n = -f.const // a, ranges[v]
    if not 0 <= v0 < n:
        return []
    if v0 == 0:
        return [Form.of({v: 1}, -1)]
    if v0 == n - 1:
        return [Form.of({v: -1}, n - 2)]
    return None


def _resolve(cons: list, ranges: dict, keep_ne: bool = False) -> list:
    """``NotEqual``/``AfterEntry`` markers to plain constraints where that is exact, else Inexact
    (``keep_ne``: a ``NotEqual`` not decided here stays, for after the merge)."""
    plain = [c for c in cons if isinstance(c, Form)]
    out = list(plain)
    for c in cons:
        if isinstance(c, NotEqual):
            got = _not_equal(c.form, ranges)
            if got is not None:
                out += got
            elif keep_ne:
                out.append(c)
            else:
                raise Inexact("a != condition on a varying value")
        if isinstance(c, AfterEntry):
            # for k = 0 the entry decides: exact when the test at k=0 is implied (always true, or a guard)
            at0 = c.form.substitute(c.k, 0) if False else Form.of({v: x for v, x in c.form.terms if v != c.k},
                                                                  c.form.const)
            if bounds(at0, ranges)[0] >= 0 or any(at0 == p for p in plain):
                out.append(c.form)
                continue
            raise Inexact("a loop entered without its test (a do-while over a varying start)")
    return out


def count_access(acc: Access, ranges: dict, max_points: int = MAX_ENUMERATE) -> tuple[int, int]:
    """(bytes, sectors) one access touches over the launch, exactly; Inexact when not decidable."""
    cons = _resolve(list(acc.constraints), ranges, keep_ne=True)
    nes = [c.form for c in cons if isinstance(c, NotEqual)]
    cons = [c for c in cons if isinstance(c, Form)]
    used = {v for f in [acc.form] + cons + nes for v, _ in f.terms}
    rng = {v: ranges[v] for v in used}
    form = Form.of(acc.form.coefs, acc.form.const)
    form, merged, rng = _merge(form, cons + nes, rng)  # a != over a merged number may be one variable's
    cons = merged[:len(cons)]
    for f in merged[len(cons):]:
        got = _not_equal(f, rng)
        if got is None:
            raise Inexact("a != condition on a varying value")
        cons += got
    clipped = _clip(form, cons, rng)
    if clipped is None:
        return 0, 0
    form, cons, rng = clipped
    if not cons:
        return _image([(c, rng[v]) for v, c in form.terms], form.const, acc.width)
    return _enumerate([form], [cons], rng, acc.width, max_points)


#: Points an upper bound may enumerate to apply an access's guards (more: the guards are dropped).
MAX_BOUND_ENUMERATE = 1 << 14


def upper_bound(acc: Access, ranges: dict) -> tuple[int, int]:
    """(bytes, sectors) the access touches AT MOST: counted with its constraints where that is decided,
    else without them, else the smaller of its address interval and one ``width`` per point of the
    launch (every execution a distinct address).  Always a superset count, never exact."""
    for cons in (acc.constraints, ()):
        try:
            return count_access(Access(acc.iid, acc.buffer, acc.kind, acc.form, acc.width, tuple(cons)), ranges,
                                MAX_BOUND_ENUMERATE)
        except Inexact:
            continue
    form = Form.of(acc.form.coefs, acc.form.const)
    rng = {v: ranges[v] for v, _ in form.terms}
    lo, hi = bounds(form, rng)
    points = math.prod(rng.values()) if rng else 1
    w = acc.width
    aligned = w and SECTOR % w == 0 and form.const % w == 0 and all(c % w == 0 for _, c in form.terms)
    per = 1 if aligned else -(-(w - 1) // SECTOR) + 1  # sectors one execution may touch
    nbytes = min(hi - lo + w, points * w)
    nsect = min((hi + w - 1) // SECTOR - lo // SECTOR + 1, points * per)
    return nbytes, nsect


def _enumerate(forms: list, conses: list, ranges: dict, width: int,
               max_points: int = MAX_ENUMERATE) -> tuple[int, int]:
    """Exact (bytes, sectors) of the union of several accesses by listing every point (small launches)."""
    vs = sorted({v for f, cs in zip(forms, conses) for g in [f] + list(cs) for v, _ in g.terms})
    points = math.prod(ranges[v] for v in vs) if vs else 1
    if points * len(forms) > max_points:
        raise Inexact(f"a guard over several index variables at {points:,} points (too many to enumerate)")
    grids = np.indices([ranges[v] for v in vs], dtype=np.int64).reshape(len(vs), -1) if vs else np.zeros((0, 1),
                                                                                                          np.int64)

    def value(f: Form):
        out = np.full(grids.shape[1], f.const, dtype=np.int64)
        for v, c in f.terms:
            out += c * grids[vs.index(v)]
        return out

    addrs = []
    for f, cs in zip(forms, conses):
        a = value(f)
        mask = np.ones(a.shape, dtype=bool)
        for c in cs:
            mask &= value(c) >= 0
        addrs.append(a[mask])
    a = np.concatenate(addrs) if addrs else np.zeros(0, np.int64)
    if not a.size:
        return 0, 0
    lo, hi = int(a.min()), int(a.max()) + width
    if a.size * width * 8 < hi - lo:  # sparse: the touched bytes themselves, not a bitmap of the span
        where = np.unique((np.unique(a)[:, None] + np.arange(width, dtype=np.int64)[None, :]).ravel())
        sectors = where // SECTOR
        return int(where.size), int(1 + np.count_nonzero(np.diff(sectors)))
    if hi - lo > MAX_BITMAP:
        raise Inexact(f"accesses spread over {hi - lo:,} bytes (too many to mark)")
    base = lo - lo % SECTOR  # the bitmap starts on a sector boundary: its rows of 32 are sectors
    mark = np.zeros(-(-(hi - base) // SECTOR) * SECTOR, dtype=bool)
    for j in range(width):
        mark[a - base + j] = True
    return int(np.count_nonzero(mark)), int(np.count_nonzero(mark.reshape(-1, SECTOR).any(axis=1)))


def sum_counts(parts: list) -> tuple[int, int | None]:
    """Summed (bytes, sectors); sectors None when one part's are."""
    return sum(p[0] for p in parts), (None if any(p[1] is None for p in parts) else sum(p[1] for p in parts))


def _simplified(acc: Access, ranges: dict) -> Access:
    """``acc`` less the guards that hold everywhere in the box (so that accesses compare equal)."""
    def always(c) -> bool:
        f = c if isinstance(c, Form) else c.form
        if any(v not in ranges for v, _ in f.terms):
            return False
        lo, hi = bounds(f, ranges)
        return lo >= 0 if isinstance(c, Form) else (lo > 0 or hi < 0) if isinstance(c, NotEqual) else False

    kept = tuple(c for c in acc.constraints if not always(c))
    return acc if len(kept) == len(acc.constraints) else Access(acc.iid, acc.buffer, acc.kind, acc.form, acc.width,
                                                                 kept, acc.why, acc.inexact)


def count_union(accs: list, ranges: dict) -> tuple[int, int]:
    """(bytes, sectors) of the union of the accesses of one buffer and kind; Inexact when undecidable."""
    accs = _distinct([_simplified(a, ranges) for a in accs], ranges)
    if len(accs) == 1:
        return count_access(accs[0], ranges)
    # one variable more: accesses that differ only by a constant step (in the address and in each guard)
    stepped = _stepped(accs, ranges)
    if stepped is not None:
        return count_access(*stepped)
    # accesses over the same index box that differ only by their constants: one pattern of offsets
    shifted = _offsets(accs, ranges)
    if shifted is not None:
        return shifted
    # one merged variable each, one stride, their own intervals (a stencil's halo): segment by segment
    segments = _segments(accs, ranges)
    if segments is not None:
        return segments
    # disjoint address ranges: a plain sum
    spans = []
    for a in accs:
        used = {v for f in [a.form] for v, _ in f.terms}
        spans.append(bounds(Form.of(a.form.coefs, a.form.const), {v: ranges[v] for v in used}))
    spans_sorted = sorted((lo, hi + accs[i].width, i) for i, (lo, hi) in enumerate(spans))
    if all(spans_sorted[i][0] >= spans_sorted[i - 1][1] and spans_sorted[i][0] // SECTOR
           > (spans_sorted[i - 1][1] - 1) // SECTOR for i in range(1, len(spans_sorted))):
        return sum_counts([count_access(a, ranges) for a in accs])
    # small launches: list every point of every access
    forms, conses, rng, width = [], [], {}, max(a.width for a in accs)
    if any(a.width != width for a in accs):
        raise Inexact("overlapping accesses of different widths")
    for a in accs:
        cons = _resolve(list(a.constraints), ranges)
        forms.append(Form.of(a.form.coefs, a.form.const))
        conses.append(cons)
        for g in [a.form] + cons:
            for v, _ in g.terms:
                rng[v] = ranges[v]
    return _enumerate(forms, conses, rng, width)


def _reduced(acc: Access, ranges: dict):
    """The access's form, merged and clipped, when its guards leave no constraint (else None)."""
    cons = _resolve(list(acc.constraints), ranges)
    used = {v for f in [acc.form] + cons for v, _ in f.terms}
    form, cons, rng = _merge(Form.of(acc.form.coefs, acc.form.const), cons, {v: ranges[v] for v in used})
    clipped = _clip(form, cons, rng)
    if clipped is None or clipped[1]:
        return None
    return clipped[0], {v: clipped[2][v] for v, _ in clipped[0].terms}


def _segments(accs: list, ranges: dict):
    """(bytes, sectors) of accesses that each reduce to ``c * x + d`` over one interval of one variable,
    with one stride ``c`` for all and ``d mod c + width <= c`` (no access spills into the next period):
    between the intervals' ends the same accesses are active, so each stretch is a pattern of one
    period repeated.  Sectors need ``c`` a multiple of the sector (else None: bytes only).  None when
    the accesses are not of this form."""
    segs, stride = [], None
    for a in accs:
        try:
            red = _reduced(a, ranges)
        except Inexact:
            return None
        if red is None or len(red[0].terms) != 1:
            return None
        (v, c), = red[0].terms
        if c <= 0 or (stride is not None and c != stride):
            return None
        stride = c
        q, r = divmod(red[0].const, c)
        if r + a.width > c:
            return None
        segs.append((q, q + red[1][v], r, a.width))
    if stride is None or stride > MAX_EXPLICIT:
        return None
    edges = sorted({e for s in segs for e in s[:2]})
    nbytes, nsect = 0, 0
    for lo, hi in zip(edges, edges[1:]):
        active = [s for s in segs if s[0] <= lo and hi <= s[1]]
        if not active:
            continue
        mask = np.zeros(stride, dtype=bool)
        for _, _, r, w in active:
            mask[r:r + w] = True
        nbytes += int(mask.sum()) * (hi - lo)
        nsect += int(np.unique(np.flatnonzero(mask) // SECTOR).size) * (hi - lo)
    return nbytes, (nsect if stride % SECTOR == 0 else None)


def _offsets(accs: list, ranges: dict):
    """(bytes, sectors) of accesses whose reduced forms share every term and range and differ only in
    their constants: the union of the offsets (a small explicit pattern) swept by the common terms."""
    try:
        red = [_reduced(a, ranges) for a in accs]
    except Inexact:
        return None
    if any(r is None for r in red):
        return None
    terms, rng = red[0][0].terms, red[0][1]
    if any(f.terms != terms or r != rng for f, r in red):
        return None
    consts = sorted({f.const for f, _ in red})
    widths = {a.width for a in accs}
    lo = consts[0]
    if consts[-1] - lo + max(widths) > MAX_EXPLICIT:
        return None
    seed = np.unique(np.concatenate([np.arange(f.const - lo, f.const - lo + a.width, dtype=np.int64)
                                     for (f, _), a in zip(red, accs)]))
    pos = []
    for v, c in terms:
        n = rng[v]
        if c < 0:
            lo += c * (n - 1)
            c = -c
        if n > 1:
            pos.append((c, n))
    pos.sort()
    p = _Pattern(seed)
    for c, n in pos:
        p = p.add(c, n)
    split = len(pos)
    while split and pos[split - 1][0] % SECTOR == 0:
        split -= 1
    inner = _Pattern(seed)
    for c, n in pos[:split]:
        inner = inner.add(c, n)
    if inner.interval or inner.arr is None and inner.gap is not None and inner.gap < SECTOR:
        first, last = lo // SECTOR, (lo + inner.span - 1) // SECTOR
        q = _Pattern(None, last - first + 1, last - first + 1, True)
    elif inner.arr is not None:
        q = _Pattern(np.unique((inner.arr + lo) // SECTOR))
    else:
        return p.count, None
    for c, n in pos[split:]:
        q = q.add(c // SECTOR, n)
    return p.count, q.count


def _canonical(acc: Access, ranges: dict):
    """The access with its loop counters renamed in order of appearance (two loops over one row read
    the same bytes), and the renamed counters' ranges."""
    names: dict = {}
    for f in [acc.form] + [c if isinstance(c, Form) else c.form for c in acc.constraints]:
        for v, _ in f.terms:
            if v.startswith("k:") and v not in names:
                names[v] = f"k#{len(names)}"

    def ren(f: Form) -> Form:
        return Form.of({names.get(v, v): c for v, c in f.terms}, f.const, f.base)

    cons = tuple(ren(c) if isinstance(c, Form) else
                 (AfterEntry(ren(c.form), names.get(c.k, c.k)) if isinstance(c, AfterEntry) else NotEqual(ren(c.form)))
                 for c in acc.constraints)
    return (ren(acc.form), cons, acc.width, tuple(sorted((n, ranges[v]) for v, n in names.items())))


def _distinct(accs: list, ranges: dict) -> list:
    """``accs`` less those touching exactly the bytes of an earlier one (the same form up to loop names)."""
    seen, out = set(), []
    for a in accs:
        key = _canonical(a, ranges)
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _stepped(accs: list, ranges: dict):
    """``(access, ranges)``: the accesses as one with a variable ``u`` more, when every access has the
    same terms and width and its constant (and each guard's constant) is ``first + step * u``; None
    otherwise."""
    first = accs[0]
    if any(a.width != first.width or a.form.terms != first.form.terms or len(a.constraints) !=
           len(first.constraints) for a in accs):
        return None
    order = sorted(accs, key=lambda a: a.form.const)
    offs = [a.form.const for a in order]
    if len(set(offs)) != len(offs):
        return None
    step = offs[1] - offs[0]
    if any(offs[i] - offs[i - 1] != step for i in range(1, len(offs))):
        return None
    u = f"u:{first.iid}"
    cons = []
    for j, c0 in enumerate(order[0].constraints):
        cs = [a.constraints[j] for a in order]
        if any(type(c) is not type(c0) for c in cs):
            return None
        fs = [c.form if not isinstance(c, Form) else c for c in cs]
        if any(f.terms != fs[0].terms for f in fs):
            return None
        d = fs[1].const - fs[0].const
        if any(fs[i].const - fs[i - 1].const != d for i in range(1, len(fs))):
            return None
        f = Form.of({**fs[0].coefs, u: d}, fs[0].const)
        cons.append(f if isinstance(c0, Form) else type(c0)(f, *([c0.k] if isinstance(c0, AfterEntry) else [])))
    f = Form.of({**order[0].form.coefs, u: step}, offs[0], first.form.base)
    return Access(first.iid, first.buffer, first.kind, f, first.width, tuple(cons)), {**ranges, u: len(offs)}


__all__ = ["SECTOR", "NotAffine", "Inexact", "Form", "Access", "NotEqual", "AfterEntry", "bounds", "count_access",
           "count_union", "sum_counts", "upper_bound"]
