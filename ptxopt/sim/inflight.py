"""Bytes in flight: Little's law for the memory a launch moves (an ESTIMATE's bound).

Why: a memory-bound kernel reaches its bandwidth floor only when enough bytes are
in flight to cover the latency of the level that serves them (Little's law:
bytes in flight = bandwidth x latency).  Resident warps, vector width, unrolling
and loads issued ahead raise the bytes in flight; a per-SM limit on outstanding
misses caps them.  The bound, per SM and wave::

    memory time >= bytes x latency / min(in-flight bytes per SM, the per-SM limit)

and never below the bandwidth floors of the same bytes (:mod:`ptxopt.sim.throughput`
takes the max with the L2 and DRAM bounds), i.e. bytes / min(peak bandwidth,
in flight / latency).

What the single-warp walk measures (:class:`DepthTracker`, per thread):

* ``area``: the sum over the global-load misses the thread issues (L1 misses,
  L1-bypassing loads: the bytes charged to L2) of bytes x the latency of the level
  that served them (L2 hit, or DRAM for a first touch with L2 cold) -- loop
  trips included, as the walk counts them;
* ``depth``: the bytes a warp has issued before its first wait on them.  At the
  first wait on a miss not seen by an earlier wait, the bytes of every miss still
  in flight (or consumed by this wait) are that wait's depth ``d``, and the misses
  it sees for the first time (``c`` bytes) are marked seen; later waits on seen
  misses take no sample.  One load then its use: d = its bytes; four independent
  loads then the first use: d = four loads' bytes (the others are seen at that
  wait); a load of iteration i+1 issued before the use of iteration i: d = two
  loads.  A prefetch's fill is a miss nothing waits on: its bytes x latency count
  in ``area`` (the load it serves pays only what the fill did not bring, and
  those bytes too from the fill's issue to its landing: a prefetch moves bytes
  earlier, never removes them; every sector of a load counts from its own
  transfer's issue to its landing, :func:`ptxopt.sim.model._in_flight`) and its bytes count in the
  depth of the waits it is in flight at.  The per-thread depth is the byte-weighted harmonic mean
  ``sum(c) / sum(c / d)`` -- the one that makes ``area / depth`` the walk's own
  exposed round trips.

A wave of ``T`` resident threads then has ``T x depth`` bytes in flight (capped
at the device's :attr:`~ptxopt.sim.device.Device.inflight_cap_bytes_per_sm`) and
takes at least ``T x area / in flight`` cycles.  Uncapped that is ``area / depth``
whatever the occupancy, per wave: fewer resident warps mean more waves, so low
occupancy raises the launch's bound; more bytes per wait (vectorised or unrolled
independent loads, loads issued an iteration ahead) lower it.

Latency: the walk's per-level latencies (:mod:`ptxopt.sim.latency`: unloaded
pointer-chase figures).  Under load the mean latency is higher (NVIDIA, GTC'25:
Hopper needs more than 32 KiB in flight per SM to saturate DRAM, four times
bandwidth x unloaded latency), so this bound is a lower bound on the time, not
the time a kernel that is short of bytes in flight will take.  Loads that are
never waited on (their data unused before the end) take no depth sample; cp.async
copies (``LDGSTS``) are not sampled.
"""

from __future__ import annotations

#: misses remembered per walk before the oldest arrived ones are dropped (a thread that never waits on
#: its loads would otherwise keep them all)
_KEEP = 512


class DepthTracker:
    """The walk's record of global-load misses: latency x bytes, and the bytes in flight at first waits."""

    __slots__ = ("out", "by_bar", "sampled", "weight", "area", "fills", "peak")

    def __init__(self, barriers: int = 8):
        self.out: dict[int, list] = {}  # step -> [bytes, release, seen by a wait]
        self.by_bar: list[list[int]] = [[] for _ in range(barriers)]  # barrier -> steps of its misses
        self.sampled = 0.0  # sum of c: bytes seen at first waits
        self.weight = 0.0  # sum of c / d
        self.area = 0.0  # sum of bytes x latency of the level that served them (byte-cycles)
        self.fills: dict = {}  # sector key -> step of the prefetch fill that will serve it
        self.peak = 0.0  # most bytes in flight at one issue (the depth when no wait ever sampled one)

    def issue(self, step: int, barrier: int, nbytes: float, t: float, release: float, key=None,
              transfer: tuple[float, float] | None = None) -> None:
        """A miss of ``nbytes`` (per thread) issued at ``t``, its data in at ``release``, on ``barrier``
        (-1: nothing waits on it yet, e.g. a prefetch's fill of sector ``key``: a load that finds it
        :meth:`claim` s it). ``transfer``: ``(issue, landing)`` of the transfer that moves these bytes
        when it is not the load's own (a prefetch's fill, an earlier miss of the same sector): their
        bytes x latency are that transfer's; the load still waits until ``release``."""
        if nbytes <= 0:
            return
        self.area += nbytes * ((transfer[1] - transfer[0]) if transfer is not None else (release - t))
        self._add(step, barrier, [nbytes, release, False])
        if key is not None:
            self.fills[key] = step
        if not self.weight:  # only needed while no wait has sampled a depth
            inflight = sum(e[0] for e in self.out.values() if e[1] > t)
            if inflight > self.peak:
                self.peak = inflight

    def claim(self, key, step: int, barrier: int) -> None:
        """A load at ``step`` (on ``barrier``) finds sector ``key`` filled by a prefetch: the fill's
        bytes are this load's transfer, and its wait is the first wait on them."""
        s = self.fills.pop(key, None)
        if s is None or s not in self.out or barrier < 0:
            return
        self._add(step, barrier, self.out.pop(s))

    def _add(self, step: int, barrier: int, entry: list) -> None:
        """Record ``entry`` as the miss of ``step``; a second part of one load (another sector, the
        bytes beyond a prefetch's share) joins the first: one wait, one entry."""
        e = self.out.get(step)
        if e is not None:
            e[0] += entry[0]
            e[1] = max(e[1], entry[1])
            e[2] = e[2] and entry[2]
            return
        self.out[step] = entry
        if barrier >= 0:
            self.by_bar[barrier].append(step)
        if len(self.out) > _KEEP:
            for s in sorted(self.out)[: len(self.out) - _KEEP // 2]:
                del self.out[s]

    def wait(self, barrier: int, t: float, upto: float | None = None) -> None:
        """The warp waits at ``t`` on ``barrier``: all its misses (``upto`` None) or those whose data
        is in by ``upto`` (``DEPBAR``)."""
        steps = self.by_bar[barrier]
        out = self.out
        live = [s for s in steps if s in out]
        if upto is None:
            done, keep = live, []
        else:
            done = [s for s in live if out[s][1] <= upto]
            keep = [s for s in live if out[s][1] > upto]
        self.by_bar[barrier] = keep
        if not done:
            return
        if any(not out[s][2] for s in done):
            self._sample(set(done), t)
        for s in done:
            out.pop(s, None)  # _sample may have dropped it already (arrived, no longer waited on)

    def _sample(self, done: set, t: float) -> None:
        d = c = 0.0
        for s, e in self.out.items():
            if e[1] > t or s in done:
                d += e[0]
                if not e[2]:
                    c += e[0]
                    e[2] = True
        if d > 0 and c > 0:
            self.sampled += c
            self.weight += c / d
        waited = {s for steps in self.by_bar for s in steps}
        for s in [s for s, e in self.out.items() if e[1] <= t and s not in waited]:
            del self.out[s]  # arrived and nothing waits on it: no longer in flight

    # -- steady-state loops: the walk extrapolates measured iterations ----------------------------
    def snapshot(self) -> tuple[float, float, float]:
        return self.sampled, self.weight, self.area

    def extrapolate(self, snap: tuple[float, float, float], factor: float, delta: float) -> None:
        """Add ``factor`` times what happened since ``snap``; move outstanding releases on by ``delta``."""
        self.sampled += (self.sampled - snap[0]) * factor
        self.weight += (self.weight - snap[1]) * factor
        self.area += (self.area - snap[2]) * factor
        for e in self.out.values():
            e[1] += delta

    @property
    def depth(self) -> float:
        """Bytes one thread has in flight at its first waits (byte-weighted harmonic mean); when no
        wait sampled one (misses nothing waited on), the most bytes in flight at once; 0: no miss."""
        return self.sampled / self.weight if self.weight else self.peak


def per_sm_bytes(threads: int, facts, device) -> tuple[float, bool]:
    """Bytes in flight on one SM with ``threads`` resident, and whether the device's cap bound them."""
    want = threads * float(getattr(facts, "inflight_bytes", 0.0) or 0.0)
    cap = float(getattr(device, "inflight_cap_bytes_per_sm", 0.0) or 0.0)
    if cap and want > cap:
        return cap, True
    return want, False


def wave_cycles(threads: int, facts, device) -> float:
    """Cycles one wave of ``threads`` resident threads needs at least to move its misses' bytes with
    the bytes it has in flight (Little's law; 0 when the walk saw no waited-on miss)."""
    area = float(getattr(facts, "miss_latency_bytes", 0.0) or 0.0)
    inflight, _ = per_sm_bytes(threads, facts, device)
    if area <= 0 or inflight <= 0:
        return 0.0
    return threads * area / inflight


def note(threads: int, warps: int, facts, device) -> str | None:
    """What ``explain`` prints: bytes in flight per warp and per SM, against what streaming DRAM at
    its peak needs (bandwidth x the unloaded latency) and the cap."""
    depth = float(getattr(facts, "inflight_bytes", 0.0) or 0.0)
    if depth <= 0:
        return None
    per_sm, capped = per_sm_bytes(threads, facts, device)
    lanes = threads / max(1, warps)
    need = device.dram_bytes_per_cycle * device.latencies.dram
    cap = getattr(device, "inflight_cap_bytes_per_sm", 0.0)
    return (f"bytes in flight (Little's law, ESTIMATE): {depth * lanes:,.0f} B per warp at its first wait, "
            f"{per_sm:,.0f} B per SM ({warps} warps" + (f"; capped at {cap:,.0f} B)" if capped else ")")
            + f"; streaming DRAM at its peak needs {need:,.0f} B per SM at the unloaded latency"
            + (f" (NVIDIA measures more than {device.saturating_inflight_bytes_per_sm:,.0f} B on this device)"
               if getattr(device, "saturating_inflight_bytes_per_sm", None) else ""))


__all__ = ["DepthTracker", "per_sm_bytes", "wave_cycles", "note"]
