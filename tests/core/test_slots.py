"""engine/slots.py: each run under way holds its own slot (its GPU with --gpus) while there is one free."""
import threading
import time

from bisectk.engine.slots import Slots


def test_runs_under_way_hold_distinct_slots_and_a_freed_slot_is_taken_again():
    slots = Slots(3)
    with slots.held() as a, slots.held() as b:
        assert {a, b} == {0, 1} and slots.taken() == [0, 1]
        with slots.held() as c:
            assert c == 2
        with slots.held() as c:          # 2 was given back
            assert c == 2
    assert slots.taken() == []
    with slots.held() as b:
        with slots.held() as c:
            pass
        assert b == 0
        with slots.held() as c:          # the lowest free one, not the next in turn
            assert c == 1


def test_more_runs_than_slots_share_the_least_held_one_and_never_wait():
    slots = Slots(2)
    got = []
    with slots.held() as a, slots.held() as b, slots.held() as c, slots.held() as d:
        got = [a, b, c, d]
    assert got == [0, 1, 0, 1]


def test_threads_taking_slots_at_once_never_get_one_twice():
    slots, seen, lock = Slots(8), [], threading.Lock()
    ready = threading.Barrier(8)
    release = threading.Event()

    def run():
        ready.wait()
        with slots.held() as s:
            with lock:
                seen.append(s)
            release.wait(5)
    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    while True:
        with lock:
            if len(seen) == 8:
                break
        time.sleep(0.001)
    release.set()
    for t in threads:
        t.join()
    assert sorted(seen) == list(range(8))
