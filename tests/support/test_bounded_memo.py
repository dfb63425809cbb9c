"""The bounded memo keeps the hand-written LRUs' order and bounds; the
registry clears a group."""

from collections import OrderedDict

from ptxopt.support.bounded_memo import BoundedMemo, clear_group, register, registered


def _reference_lru(ops, cap):
    """The hand-written pattern the memos used: get+move_to_end, set+move_to_end+popitem(last=False)."""
    d = OrderedDict()
    out = []
    for op, k in ops:
        if op == "get":
            v = d.get(k)
            if v is not None:
                d.move_to_end(k)
            out.append(v)
        else:
            d[k] = k * 10
            d.move_to_end(k)
            while len(d) > cap:
                d.popitem(last=False)
    return out, list(d.items())


def test_same_order_as_the_hand_written_lru():
    import random

    rng = random.Random(7)
    for cap in (1, 2, 5):
        ops = [(rng.choice(["get", "put"]), rng.randrange(8)) for _ in range(300)]
        m = BoundedMemo(cap)
        got = []
        for op, k in ops:
            if op == "get":
                got.append(m.lookup(k))
            else:
                m.remember(k, k * 10)
        assert (got, list(m.items())) == _reference_lru(ops, cap)


def test_callable_capacity_is_read_at_each_insertion():
    limit = [3]
    m = BoundedMemo(lambda: limit[0])
    for i in range(5):
        m.remember(i, i)
    assert list(m) == [2, 3, 4]
    limit[0] = 1
    m.remember(9, 9)
    assert list(m) == [9]


def test_weight_bound_keeps_the_newest():
    m = BoundedMemo(10, weight=len, max_weight=5)
    m.remember("a", "xxx")
    m.remember("b", "xxx")
    assert list(m) == ["b"]
    m.remember("c", "x" * 9)  # over the weight alone: still kept
    assert list(m) == ["c"]


def test_clear_group_empties_every_kind():
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def f(x):
        return x

    f(1)
    d, memo = {1: 2}, BoundedMemo(4)
    memo.remember(1, 1)
    register("test-group", "d", d)
    register("test-group", "memo", memo)
    register("test-group", "f", f)
    assert set(registered("test-group")) == {"d", "memo", "f"}
    clear_group("test-group")
    assert not d and not memo and f.cache_info().currsize == 0


def test_clear_group_holds_a_memo_lock_but_not_another_objects():
    import threading

    lock = threading.Lock()
    memo = BoundedMemo(4, lock=lock)
    memo.remember(1, 1)

    class SelfLocking:  # clears under its own (non-reentrant) lock, as cubin_memo's LRU does
        def __init__(self):
            self.lock, self.items = threading.Lock(), {1: 1}

        def clear(self):
            with self.lock:
                self.items.clear()

    other = SelfLocking()
    seen = []
    memo.clear = lambda: (seen.append(lock.locked()), BoundedMemo.clear(memo))
    register("test-locks", "memo", memo)
    register("test-locks", "other", other)
    clear_group("test-locks")
    assert seen == [True] and not memo and not other.items and not lock.locked()
