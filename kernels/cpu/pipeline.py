"""CPU stand-in for a warp-specialized TMA -> MMA mbarrier pipeline (a ring buffer of `depth` stages).

Real GPU bugs this reproduces, without a GPU:
  * CUTLASS/CuTe DSL `PipelineTmaAsync`: one producer (the TMA warp) fills shared-memory stages and
    signals a per-stage *full* mbarrier; a consumer warpgroup reads the stage and signals the per-stage
    *empty* mbarrier so the producer may overwrite it. Each mbarrier has an expected arrival count, a
    pending transaction-byte count and a phase bit that flips when both reach zero; waiters wait for a
    phase *parity*, not for a count.
  * seed 003 (flashinfer fmha_v2, FP8 V transpose): "DMA thread 0 can race ahead ... while warps 1-3
    still poll" -- a leader that releases a slot without first synchronising its group.
  * ../shared/gpu/README.md: consumer group sized in threads instead of warps -> hang; producer pipeline
    state starting at phase 0 -> hang; transaction byte count too high or too low -> hang; 1 stage
    instead of 4 -> correct but slower.

Producer and consumers are real threads; every wait is a real blocking wait on a condition variable
(no polling with a timeout), so a deadlock here is a real deadlock: the main thread blocks in join()
forever and only the watchdog's SIGTERM/SIGKILL ends the process.

Factors (command-line flags) and what the wrong values do:
  --depth N               stages in the ring. Any N >= 1 is correct; 1 serialises load and compute
                          (correct but slower when --load-us/--compute-us are set).
  --consumers C           consumer threads (think: consumer warps) in the group. Benign on its own.
  --arrive A              expected arrival count of each *empty* barrier. The group leader arrives once
                          per tile on behalf of the whole group (count = C), so A must equal C.
                          A > C: the empty phase never completes -> the producer blocks -> HANG
                          (the "sized in threads instead of warps" bug: A = 32 * C).
                          A < C: undefined on hardware; here the surplus carries into the next phase,
                          the producer overruns the consumers (corruption, sometimes a hang).
  --producer-phase 0|1    initial phase of the producer's pipeline state. CUTLASS starts the producer
                          at phase 1 so its first wait on each (never yet completed) empty barrier
                          passes. 0 -> the producer waits for a release that never comes -> HANG.
  --leader-sync on|off    whether the group leader waits for its whole group (a named barrier) before
                          releasing the slot. off -> the fast leader releases while the other consumer
                          threads are still reading; the producer overwrites the slot -> WRONG
                          (mismatches > 0). Needs C >= 2 to show (a group of one has nobody to race).
  --release-before-read on|off
                          release the slot right after the full-barrier wait, before reading it -> the
                          producer overwrites data being read -> WRONG.
  --tiles T               tiles the producer loads.
  --consumer-tiles T2     tiles the consumers expect (default: --tiles). T2 > T: the consumers wait
                          for a tile that is never produced -> HANG. T2 < T: the producer (or its
                          producer_tail, which waits until every issued stage was released) blocks
                          forever -> HANG.
  --tx-bytes B            bytes the producer announces with arrive_expect_tx (default: the tile's real
                          size, 4 bytes per element). Too high or too low: the full barrier's
                          transaction count never returns to exactly zero -> HANG.
  --tile-elems E, --seed S, --load-us, --compute-us
                          benign: tile size, data pattern, simulated TMA latency and per-tile compute.

On success the last line is `BISECTK_RESULT {json}` with mismatches, rel_err (of the checksum against
the reference), checksum, reference, tiles, time_ms and us_per_tile; exit status 0. A run with
mismatches also says "ok": false so it is WRONG even without an oracle.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time


class MBarrier:
    """An mbarrier: expected arrivals, pending transaction bytes and a phase counter.

    `phase` counts completed phases; its low bit is the current phase parity. `wait(parity)` returns
    once the phase of that parity has completed, i.e. while the current parity differs from it --
    which is also why a wait on parity 1 passes at once on a fresh barrier (mbarrier.try_wait.parity).
    """

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.pending = expected
        self.tx = 0
        self.phase = 0
        self.cv = threading.Condition()

    def _maybe_complete(self) -> None:
        # The phase completes only when the arrivals are in AND the transaction count is exactly
        # zero; a count that over- or undershoots never completes it, as on hardware.
        if self.pending <= 0 and self.tx == 0:
            self.phase += 1
            # Surplus arrivals (pending < 0) carry into the next phase: undefined behaviour on the
            # GPU, modelled as "the next phase starts partly arrived".
            self.pending += self.expected
            self.cv.notify_all()

    def arrive(self, count: int = 1) -> None:
        with self.cv:
            self.pending -= count
            self._maybe_complete()

    def arrive_expect_tx(self, nbytes: int) -> None:
        with self.cv:
            self.tx += nbytes
            self.pending -= 1
            self._maybe_complete()

    def complete_tx(self, nbytes: int) -> None:
        with self.cv:
            self.tx -= nbytes
            self._maybe_complete()

    def wait(self, parity: int) -> None:
        with self.cv:
            while (self.phase & 1) == parity:
                self.cv.wait()  # no timeout: a phase that never completes is a real deadlock


def tile_data(t: int, elems: int, seed: int) -> list[int]:
    """Content of global tile t: distinct per tile, so reading the wrong tile is detectable."""
    return [((t + 1) * 7919 + k * 31 + seed * 104729) % 65521 + 1 for k in range(elems)]


def on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on|off, got {value!r}")
    return value == "on"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depth", type=int, default=4, help="pipeline stages (>= 1)")
    p.add_argument("--consumers", type=int, default=2, help="consumer threads (warps)")
    p.add_argument("--arrive", type=int, default=None,
                   help="expected arrivals of each empty barrier (default: --consumers)")
    p.add_argument("--producer-phase", type=int, choices=(0, 1), default=1)
    p.add_argument("--leader-sync", type=on_off, default=True, metavar="on|off")
    p.add_argument("--release-before-read", type=on_off, default=False, metavar="on|off")
    p.add_argument("--tiles", type=int, default=32)
    p.add_argument("--consumer-tiles", type=int, default=None, help="default: --tiles")
    p.add_argument("--tile-elems", type=int, default=64)
    p.add_argument("--tx-bytes", type=int, default=None, help="default: 4 * --tile-elems")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--load-us", type=float, default=0.0, help="simulated TMA latency per tile")
    p.add_argument("--compute-us", type=float, default=500.0,
                   help="per-tile work of the slow consumer threads (opens the race window)")
    a = p.parse_args(argv)
    if a.arrive is None:
        a.arrive = a.consumers
    if a.consumer_tiles is None:
        a.consumer_tiles = a.tiles
    if a.tx_bytes is None:
        a.tx_bytes = 4 * a.tile_elems
    if a.depth < 1 or a.consumers < 1 or a.arrive < 1 or a.tiles < 0 or a.tile_elems < 1:
        p.error("depth, consumers, arrive and tile-elems must be >= 1, tiles >= 0")
    return a


def run(a: argparse.Namespace) -> dict:
    depth, C, E = a.depth, a.consumers, a.tile_elems
    slots = [[0] * E for _ in range(depth)]        # shared memory: `depth` stages of E elements
    full = [MBarrier(1) for _ in range(depth)]     # producer's arrive_expect_tx + TMA bytes
    empty = [MBarrier(a.arrive) for _ in range(depth)]
    group = threading.Barrier(C)                   # the consumer warpgroup's named barrier
    strip = -(-E // C)                             # elements each consumer thread reads
    results = [(0, 0)] * C                         # (mismatches, checksum) per consumer thread

    def producer() -> None:
        phase = a.producer_phase
        for t in range(a.tiles):
            s = t % depth
            empty[s].wait(phase)                   # producer_acquire
            full[s].arrive_expect_tx(a.tx_bytes)
            if a.load_us:
                time.sleep(a.load_us * 1e-6)       # the copy is in flight
            slots[s][:] = tile_data(t, E, a.seed)  # the "TMA" lands the tile ...
            full[s].complete_tx(4 * E)             # ... and its bytes complete the transaction
            if s == depth - 1:
                phase ^= 1
        # producer_tail: before the CTA may exit, wait until every issued stage was released.
        for t in range(a.tiles, a.tiles + depth):
            s = t % depth
            empty[s].wait(phase)
            if s == depth - 1:
                phase ^= 1

    def consumer(tid: int) -> None:
        phase = 0                                  # consumers start at phase 0: wait for the fill
        # The leader reads its strip at once; the others are slower (their share of the MMA, a
        # longer dependency chain), which is what opens the leader-ahead race window.
        delay = a.compute_us * 1e-6 if (tid != 0 or C == 1) else 0.0
        lo, hi = tid * strip, min(E, (tid + 1) * strip)
        bad = total = 0

        def release(s: int) -> None:
            if a.leader_sync:
                group.wait()                       # the fix: leader waits for the whole group
            if tid == 0:
                empty[s].arrive(C)                 # leader arrives on behalf of the group

        for i in range(a.consumer_tiles):
            s = i % depth
            full[s].wait(phase)                    # consumer_wait
            group.wait()                           # group-collective start of the tile
            if a.release_before_read:
                release(s)
            if delay:
                time.sleep(delay)
            got = slots[s][lo:hi]
            want = tile_data(i, E, a.seed)[lo:hi]
            bad += sum(1 for x, y in zip(got, want) if x != y)
            total += sum(got)
            if not a.release_before_read:
                release(s)
            if s == depth - 1:
                phase ^= 1
        results[tid] = (bad, total)

    # Daemon threads so that Ctrl-C works; the main thread still blocks in join() for as long as
    # they are deadlocked, so a hang is a hang, never a quiet exit.
    threads = [threading.Thread(target=producer, name="producer", daemon=True)]
    threads += [threading.Thread(target=consumer, args=(i,), name=f"consumer{i}", daemon=True)
                for i in range(C)]
    t0 = time.perf_counter()
    phase("launch")
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    phase("synchronized")

    mismatches = sum(r[0] for r in results)
    checksum = sum(r[1] for r in results)
    reference = sum(sum(tile_data(t, E, a.seed)) for t in range(a.tiles))
    rel_err = abs(checksum - reference) / abs(reference) if reference else float(checksum != 0)
    m = {
        "mismatches": mismatches,
        "rel_err": rel_err,
        "checksum": checksum,
        "reference": reference,
        "tiles": a.tiles,
        "time_ms": round(dt * 1e3, 3),
        "us_per_tile": round(dt * 1e6 / max(1, a.tiles), 3),
    }
    if mismatches:
        m["ok"] = False
        m["error"] = f"{mismatches} elements read from a slot that was overwritten or never filled"
    return m


def phase(name: str) -> None:
    """The subject protocol's progress line (bisectk's watchdog follows it)."""
    print(f"BISECTK_PHASE {name}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    m = run(a)
    print("BISECTK_RESULT " + json.dumps(m), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
