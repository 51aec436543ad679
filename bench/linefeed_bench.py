"""Output reader bench: what reading a subject's output costs bisectk, in ms per MB, for the
streams a kernel's subject prints (per-iteration logs, a printf per thread, a debug print in a
loop). The pipe holds 64 KiB: a reader slower than the subject writes makes the subject wait on
it, and a subject waiting long enough looks hung.

Each stream goes through, in 64 KiB reads as run/output.py's pump makes them:
  linefeed -- LineFeed alone, keyed as a run's is (its emit does nothing)
  watch    -- LineFeed feeding the real progress watch (a ProgressWatch)
  capture  -- a whole stdout Capture as run/process.py makes it: the tails, the BISECTK_RESULT
              catcher, the capped log on disk, and the watch

Usage: python bench/linefeed_bench.py [--mb 12] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bisectk.run.output import LineFeed  # noqa: E402
from bisectk.run.process import captures  # noqa: E402
from bisectk.run.progress import ProgressWatch, Timeline  # noqa: E402

READ = 65536


def streams(mb: float) -> dict[str, bytes]:
    size = int(mb * 1e6)
    rng = random.Random(0)

    def fill(line) -> bytes:
        out, n, i = [], 0, 0
        while n < size:
            i += 1
            s = line(i)
            out.append(s)
            n += len(s)
        return b"".join(out)

    return {
        "numbered (step i)": fill(lambda i: b"step %d\n" % i),
        "floats (loss x step i)": fill(lambda i: b"loss %.17g step %d\n" % (rng.random(), i)),
        "printf per thread": fill(lambda i: b"tid %d val %.4f at 0x%x\n" % (i % 4096, rng.random(), 0x7f00 + 16 * i)),
        "one repeated line": fill(lambda i: b"waiting for barrier\n"),
        "y flood": b"y\n" * (size // 2),
        "long lines (10 KB)": fill(lambda i: b"row %d: " % i + b"1.5 " * 2500 + b"\n"),
        "hex words (no 0x)": fill(lambda i: b"%08x\n" % rng.getrandbits(32)),
    }


def watch() -> ProgressWatch:
    return ProgressWatch(Timeline((("compiling kernel", 0.1), ("launching kernel", 0.2), ("done", 0.25)), 0.3),
                         fixed_s=5.0)


def once(kind: str, data: bytes, tmp: Path) -> float:
    t0 = time.monotonic()
    if kind == "linefeed":
        feed = LineFeed(lambda text: None, keyed=True).feed
    elif kind == "watch":
        w = watch()
        feed = LineFeed(lambda text: w.feed(text, time.monotonic() - t0), keyed=True).feed
    else:
        w = watch()
        cap = captures(tmp, 64 << 10, lambda text: w.feed(text, time.monotonic() - t0))[0]
        feed = cap.feed
    start = time.perf_counter()
    for at in range(0, len(data), READ):
        feed(data[at:at + READ])
    if kind == "capture":
        cap.close()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=12.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    kinds = ["linefeed", "watch", "capture"]
    print(f"{'stream':26}" + "".join(f"{k + ' ms/MB':>18}" for k in kinds))
    with tempfile.TemporaryDirectory(prefix="bisectk-linefeed-") as d:
        for name, data in streams(args.mb).items():
            mb = len(data) / 1e6
            cells = [min(once(k, data, Path(d)) for _ in range(args.repeat)) * 1000 / mb for k in kinds]
            print(f"{name:26}" + "".join(f"{c:18.1f}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
