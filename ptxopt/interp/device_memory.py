"""Memory: buffers at fake device addresses, every access checked.

Model, and why:

* **One 64-bit generic address space of regions.** Every buffer, variable and
  parameter block is a :class:`Region` with a base address, a size and bytes.
  Kernels do pointer arithmetic on 64-bit integers and compare, mask and
  convert pointers (``cvta``), so addresses are plain integers and a load
  first finds the region its address falls into.
* **State spaces are windows.** ``.shared``, ``.local``, ``.param`` and
  ``.const`` addresses are small offsets inside their space; the generic
  address of such an offset is ``WINDOW[space] + offset`` (``cvta.shared``
  adds the window, ``cvta.to.shared`` subtracts it). Global buffers live at
  ``GLOBAL_BASE`` and up, and a global address equals its generic address.
  ``ld.shared [a]`` therefore looks up ``WINDOW["shared"] + a`` and must land
  in a shared region; ``ld [a]`` (generic) may land in any region.
* **Distinct ranges with gaps.** Each region starts on a 256-byte boundary
  (what ``cudaMalloc`` guarantees) and is followed by an unmapped gap of at
  least 256 bytes, so running off the end of one buffer faults instead of
  reading its neighbour. Shared variables get separate ranges too, which is
  stricter than the hardware (one contiguous window) but only for accesses
  that leave the variable they were computed from.
* **Checks like the hardware.** An access must lie entirely inside one
  region of the right space, be naturally aligned to its full size (``.v4``
  of ``.f32`` needs 16 bytes), and stores must not hit read-only memory
  (``.const``, kernel parameters). A violation raises :class:`MemoryFault`
  naming the instruction, the first offending thread and the address.
* **Per-thread regions.** ``.local`` frames and the ``.param`` blocks of
  function calls hold one row of bytes per thread (every thread sees the same
  addresses, with private contents); other regions have a single row.

Data is a ``uint8`` array of shape ``(rows, padded size)``; accesses index a
``view`` of it as ``uint16/32/64`` with ``offset // element size``, which is
valid because every access is checked to be aligned first.
"""

from __future__ import annotations

import bisect

import numpy as np

from ptxopt.interp.dtypes import UINT
from ptxopt.interp.errors import MemoryFault, describe, thread_name

GLOBAL_BASE = 0x7F00_0000_0000
WINDOW = {
    "global": 0,
    "generic": 0,
    "const": 0x7E00_0000_0000,
    "param": 0x7D00_0000_0000,
    "shared": 0x7C00_0000_0000,
    "local": 0x7B00_0000_0000,
}
ALIGN = 256  # base alignment of every region
GAP = 256  # unmapped bytes after every region


def round_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


#: The tag bit of a load no ``read_tags`` entry names (read footprints).
OTHER_READ = 1 << 31
#: The tag bit a non-coherent load (``ld.global.nc``) adds to its loop's or
#: OTHER_READ (:mod:`ptxopt.equivalence.nc_reads`); loops use the bits below COHERENT_READ.
NC_READ = 1 << 30
#: Set in a read footprint by every store to the byte (while reads are recorded):
#: a byte read through ``.nc`` must not be written during the launch.
STORED = 1 << 29
#: The tag bit an original's loads other than ``ld.global.nc`` add when its
#: ``.nc`` reads are compared (:mod:`ptxopt.equivalence.nc_reads`).
COHERENT_READ = 1 << 28


class Region:
    """A contiguous range of addresses holding bytes."""

    __slots__ = ("name", "space", "base", "size", "end", "data", "per_thread", "readonly", "views", "written",
                 "read")

    def __init__(self, name: str, space: str, base: int, size: int, rows: int = 1,
                 per_thread: bool = False, readonly: bool = False, fill=None):
        self.name = name
        self.space = space
        self.base = base
        self.size = size
        self.end = base + size
        padded = max(16, round_up(size, 16))
        self.data = np.zeros((rows, padded), dtype=np.uint8) if fill is None else fill(rows, padded)
        self.per_thread = per_thread
        self.readonly = readonly
        self.views = {1: self.data}
        self.written = None  # coverage: a bool per byte, set by stores (when the launch tracks it)
        self.read = None  # read footprint: a uint32 of tag bits per byte, set by loads (when tracked)
        for nb in (2, 4, 8):
            self.views[nb] = self.data.view(UINT[nb * 8])

    def write_bytes(self, raw: bytes | np.ndarray, row: int | None = None) -> None:
        """Initialise the first bytes (every row, or one)."""
        b = np.frombuffer(bytes(raw), dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw.view(np.uint8).ravel()
        if row is None:
            self.data[:, : b.size] = b
        else:
            self.data[row, : b.size] = b

    def read_bytes(self, row: int = 0) -> bytes:
        return self.data[row, : self.size].tobytes()

    def __repr__(self) -> str:
        return f"Region({self.space} {self.name!r} [{self.base:#x}, {self.end:#x}))"


class Memory:
    """The regions of one launch, sorted by base address."""

    def __init__(self) -> None:
        self._regions: list[Region] = []
        self._bases: list[int] = []
        self._np_bases = np.zeros(0, dtype=np.uint64)
        self._np_ends = np.zeros(0, dtype=np.uint64)
        self.last: Region | None = None
        self._next_global = GLOBAL_BASE
        # coverage: which threads of the launch stored to global memory
        # (linear index ``thread_base + idx``); None when not tracked
        self.stored_threads: np.ndarray | None = None
        self.thread_base = 0
        # race detection (ptxopt.interp.races.RaceTracker), None when off
        self.race = None
        # read footprints: id(instruction) -> the tag bit its loads set (OTHER_READ when absent)
        self.read_tags: dict | None = None
        # loads tagged NC_READ that read a global region whose reads are not recorded (a .global variable)
        self.nc_unrecorded = 0
        # masked reads (while reads are recorded): read tag -> bytes a global read did not read because
        # the program masked it (a false guard, a cp.async zero-fill); see note_masked
        self.masked: dict | None = None
        # shared-memory read footprints per CTA and barrier interval (ptxopt.interp.shared_reads), None when off
        self.shared_reads = None

    # -- regions -----------------------------------------------------------

    def add(self, region: Region) -> Region:
        i = bisect.bisect_left(self._bases, region.base)
        if i < len(self._regions) and self._regions[i].base < region.end + GAP:
            raise ValueError(f"{region} overlaps {self._regions[i]}")
        if i > 0 and self._regions[i - 1].end + GAP > region.base:
            raise ValueError(f"{region} overlaps {self._regions[i - 1]}")
        self._regions.insert(i, region)
        self._bases.insert(i, region.base)
        self._reindex()
        return region

    def remove(self, region: Region) -> None:
        i = self._regions.index(region)
        del self._regions[i]
        del self._bases[i]
        if self.last is region:
            self.last = None
        self._reindex()

    def _reindex(self) -> None:
        self._np_bases = np.array(self._bases, dtype=np.uint64)
        self._np_ends = np.array([r.end for r in self._regions], dtype=np.uint64)

    def alloc_global(self, name: str, size: int, space: str = "global", readonly: bool = False,
                     fill=None) -> Region:
        """A new region in the global (or const) window, after all others."""
        if space == "global":
            base = self._next_global
            self._next_global = round_up(base + max(size, 1) + GAP, ALIGN)
        else:
            raise ValueError(space)
        return self.add(Region(name, space, base, size, readonly=readonly, fill=fill))

    def region_at(self, addr: int) -> Region | None:
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0 and addr < self._regions[i].end:
            return self._regions[i]
        return None

    @property
    def regions(self) -> list[Region]:
        return list(self._regions)

    # -- access ------------------------------------------------------------

    def locate(self, gaddr: np.ndarray, nbytes: int, space: str, write: bool, site, idx,
               align: bool = True):
        """Check an access of ``nbytes`` at each generic address; return
        ``[(region, positions or None, offsets)]`` (positions index ``gaddr``;
        None means all). ``site`` is ``(instruction, cta)``, used only to word
        a fault. Raises :class:`MemoryFault`."""
        if align and nbytes > 1 and (gaddr & np.uint64(nbytes - 1)).any():
            bad = int(np.flatnonzero(gaddr & np.uint64(nbytes - 1))[0])
            raise self._fault(site, idx, bad, gaddr, f"misaligned {nbytes}-byte access", space)
        lo = int(gaddr.min())
        hi = int(gaddr.max()) + nbytes
        r = self.last
        if r is None or not (r.base <= lo and hi <= r.end):
            i = bisect.bisect_right(self._bases, lo) - 1
            r = self._regions[i] if i >= 0 else None
            if r is None or hi > r.end:
                return self._locate_many(gaddr, nbytes, space, write, site, idx)
            self.last = r
        self._check_region(r, space, write, site, idx, 0, gaddr)
        return [(r, None, (gaddr - np.uint64(r.base)).astype(np.intp))]

    def _locate_many(self, gaddr, nbytes, space, write, site, idx):
        ri = np.searchsorted(self._np_bases, gaddr, side="right").astype(np.intp) - 1
        ok = ri >= 0
        if ok.any():
            ends = self._np_ends[np.where(ok, ri, 0)]
            ok &= (gaddr + np.uint64(nbytes)) <= ends
            ok &= gaddr >= self._np_bases[np.where(ri >= 0, ri, 0)]
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise self._fault(site, idx, bad, gaddr, f"{nbytes}-byte access out of bounds", space)
        out = []
        for k in np.unique(ri):
            pos = np.flatnonzero(ri == k)
            r = self._regions[int(k)]
            self._check_region(r, space, write, site, idx, int(pos[0]), gaddr)
            out.append((r, pos, (gaddr[pos] - np.uint64(r.base)).astype(np.intp)))
        return out

    def _check_region(self, r: Region, space, write, site, idx, pos, gaddr) -> None:
        if space != "generic" and r.space != space:
            raise self._fault(site, idx, pos, gaddr,
                              f".{space} access to {r.space} memory ({r.name!r})", space)
        if write and r.readonly:
            raise self._fault(site, idx, pos, gaddr, f"store to read-only {r.space} memory ({r.name!r})",
                              space)

    def _fault(self, site, idx, pos, gaddr, what, space) -> MemoryFault:
        addr = int(gaddr[pos])
        ins, cta = site if site is not None else (None, None)
        where = describe(ins) if ins is not None else "access"
        thread = ""
        if cta is not None and idx is not None:
            t = int(idx[pos]) if np.ndim(idx) else int(idx)
            thread = f", thread {thread_name(cta, t)}"
        near = self._nearest(addr)
        space_txt = "" if space in ("generic", "global") else f" (.{space} address {addr - WINDOW[space]:#x})"
        return MemoryFault(f"{where}: {what} at address {addr:#x}{space_txt}{thread}{near}")

    def _nearest(self, addr: int) -> str:
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0:
            r = self._regions[i]
            if addr < r.end:
                return f"; inside {r.space} {r.name!r} [{r.base:#x}, {r.end:#x}) at offset {addr - r.base}"
            return f"; {addr - r.end} bytes past the end of {r.space} {r.name!r} [{r.base:#x}, {r.end:#x})"
        return "; below every buffer"

    def _log(self, parts, nbytes: int, idx, write: bool, site, new=None) -> None:
        """Tell the race tracker about the shared-memory part of an access
        (``new``: the bytes each thread stores, one row per thread)."""
        for r, pos, off in parts:
            if r.space == "shared":
                self.race.access(r, off, nbytes, idx if pos is None else idx[pos], write, site,
                                 None if new is None else (new if pos is None else new[pos]))

    def note_reads(self, parts, nbytes: int, site, idx=None) -> None:
        """Add the reads of ``nbytes`` at each located address (``parts``, as
        :meth:`locate` returns them) to the read footprint, tagged with the
        reading instruction's bit (``read_tags``): every instruction that
        reads a parameter buffer calls this (``ld``/``ldu``, atomics, and the
        source side of ``cp.async``), so a loop whose extra iterations read
        only through ``cp.async`` changes the footprint like any load.
        Reads of ``.shared`` memory by threads ``idx`` go to the shared read
        footprint (:mod:`ptxopt.interp.shared_reads`) when it is recorded."""
        for r, pos, off in parts:
            if r.space == "shared":
                if self.shared_reads is not None and idx is not None:
                    self.shared_reads.note(r, off, nbytes, idx if pos is None else idx[pos])
            elif r.read is not None:
                tag = self.read_tags.get(id(site[0]), OTHER_READ) if self.read_tags else OTHER_READ
                r.read[(np.reshape(off, (-1, 1)) + np.arange(nbytes)).ravel()] |= tag
            elif self.read_tags and r.space == "global" and self.read_tags.get(id(site[0]), 0) & NC_READ:
                self.nc_unrecorded += 1

    def note_masked(self, nbytes: int, ins) -> None:
        """Count ``nbytes`` of global memory that ``ins`` (a load or a
        ``cp.async``) did *not* read because the program masked them: threads
        whose guard is false, the zero-filled part of a copy (src-size below
        cp-size). Their values are fixed (the register's previous value, zero),
        so no input can vary them: a candidate whose loop masks more or fewer
        bytes than the original's runs work whose effect rests on those fixed
        values alone (:func:`ptxopt.equivalence.footprint.masked_difference`)."""
        tag = self.read_tags.get(id(ins), OTHER_READ) if self.read_tags else OTHER_READ
        self.masked[tag] = self.masked.get(tag, 0) + nbytes

    def load(self, gaddr, elem: int, count: int, space: str, site, idx):
        """``count`` consecutive elements of ``elem`` bytes per address:
        a list of ``count`` unsigned arrays."""
        parts = self.locate(gaddr, elem * count, space, False, site, idx)
        if self.race is not None:
            self._log(parts, elem * count, idx, False, site)
        self.note_reads(parts, elem * count, site, idx)
        if len(parts) == 1:
            r, _, off = parts[0]
            v = r.views[elem]
            col = off // elem
            rows = idx if r.per_thread else 0
            return [v[rows, col + k] for k in range(count)]
        out = [np.empty(gaddr.shape, dtype=UINT[elem * 8]) for _ in range(count)]
        for r, pos, off in parts:
            v = r.views[elem]
            col = off // elem
            rows = idx[pos] if r.per_thread else 0
            for k in range(count):
                out[k][pos] = v[rows, col + k]
        return out

    def store(self, gaddr, elem: int, values, space: str, site, idx) -> None:
        """Store ``values`` (list of unsigned arrays, one per element).

        Several threads storing to one location behave like the hardware: one
        value wins, always the last thread's in ``idx`` order, so original and
        transformed runs agree. A uniform address (a symbol such as
        ``st.global [flag], %r``: one address for every thread) takes the last
        thread's value explicitly (each thread's own, for per-thread
        ``.local`` rows); addresses computed equal rely on numpy assigning
        repeated indices in order."""
        n = len(idx) if np.ndim(idx) else 1
        uniform = n > 1 and gaddr.shape[0] == 1
        parts = self.locate(gaddr, elem * len(values), space, True, site, idx[:1] if uniform else idx)
        if self.race is not None:
            n_all = len(idx) if np.ndim(idx) else 1
            raw = np.stack([np.broadcast_to(np.asarray(v, dtype=UINT[elem * 8]), (n_all,)) for v in values], axis=1)
            self._log(parts, elem * len(values), idx, True, site, np.ascontiguousarray(raw).view(np.uint8))
        for r, pos, off in parts:
            v = r.views[elem]
            col = off // elem
            if r.written is not None:
                nb = elem * len(values)
                r.written[(off[:, None] + np.arange(nb)).ravel()] = True
            if r.read is not None:
                r.read[(off[:, None] + np.arange(elem * len(values))).ravel()] |= STORED
            if self.stored_threads is not None and r.space == "global":
                t = idx if pos is None else idx[pos]
                self.stored_threads[self.thread_base + np.asarray(t)] = True
            if uniform:
                if r.per_thread:
                    for k, val in enumerate(values):
                        v[idx, col + k] = val
                else:
                    for k, val in enumerate(values):
                        v[0, col + k] = val[-1:] if np.ndim(val) and np.size(val) > 1 else val
            elif pos is None:
                rows = idx if r.per_thread else 0
                for k, val in enumerate(values):
                    v[rows, col + k] = val
            else:
                rows = idx[pos] if r.per_thread else 0
                for k, val in enumerate(values):
                    v[rows, col + k] = val[pos] if np.ndim(val) and np.size(val) > 1 else val
