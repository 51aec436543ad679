"""Demo inputs that the README's examples run on: a throwaway git history with a planted regression.

Abstractions
------------
make_history -- write a new git repository into an empty directory: a CPU stand-in kernel
                (`kernel.py`: producer threads feed a consumer through a ring of mbarrier-like
                barriers, real threads and real waits) and its build check (`build.py`), over 17
                commits. Tag `v1.0` works; `main` deadlocks. What is planted:
                - the regression: commit "barrier: count arrivals per thread, as the CUDA kernel
                  does" on the side branch `barrier-refactor` makes the full barrier expect
                  PRODUCERS * WARP arrivals where only PRODUCERS come: the consumer waits forever
                  (a real deadlock, caught by the watchdog). The commit has three hunks; only the
                  arrival count matters;
                - the branch is merged into `main` later (a merge commit: history is a DAG);
                - two "wip" commits that do not build (a syntax error `build.py` rejects), each
                  fixed by the next commit: `bisect` skips them.
Demo         -- what was written: the directory, the commits by name, the planted culprit.

Commits carry fixed authors and dates and git runs without the user's configuration, so the
same shas come out on every machine (the README shows them). Nothing is written into a
directory that is not empty.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.errors import BisectkError

AUTHOR = ("Kernel Author", "ka@example.com")
EPOCH = 1_767_600_000          # 2026-01-05T08:00:00Z; commit n is n hours later

KERNEL = '''"""A CPU stand-in for a warp-specialised pipeline (written by `bisectk demo history`).

Producer threads fill a ring of DEPTH slots and a consumer drains it. Every slot has a `full`
and an `empty` barrier that completes a phase once the expected number of arrivals came in, as
an mbarrier does. A barrier that expects more arrivals than ever come makes its waiter block
forever: a real deadlock, as on the GPU.{doc_note}
"""
import json
import sys
import threading
import time

DEPTH = {depth}          # ring slots
TILES = {tiles}         # tiles streamed through the ring
PRODUCERS = 2      # producer threads; each arrives once per tile on the slot's full barrier
WARP = 32          # threads per warp on the GPU
{arrivals}

class MBarrier:
    """Completes a phase after `count` arrivals; `wait(k)` blocks until phase k completed."""

    def __init__(self, count):
        self.count, self.pending, self.phases = count, count, 0
        self.cv = threading.Condition()

    def arrive(self):
        with self.cv:
            self.pending -= 1
            if self.pending == 0:
                self.pending, self.phases = self.count, self.phases + 1
                self.cv.notify_all()

    def wait(self, phase):
        with self.cv:
            self.cv.wait_for(lambda: self.phases > phase)   # no timeout: a missing arrival hangs


def producer(p, ring, full, empty):
    for t in range(TILES):
        slot, rnd = t % DEPTH, t // DEPTH
        if rnd:
            empty[slot].wait(rnd - 1)   # the consumer released this slot's previous tile
        ring[slot][p] = {value}
        full[slot].arrive()


def consumer(ring, full, empty, out):
    for t in range(TILES):
        slot, rnd = t % DEPTH, t // DEPTH
        full[slot].wait(rnd)
        out.append({epilogue})
        empty[slot].arrive()
{extra}

def main():
    full = [MBarrier({count}) for _ in range(DEPTH)]
    empty = [MBarrier(1) for _ in range(DEPTH)]
    ring = [[0] * PRODUCERS for _ in range(DEPTH)]
    out = []
    start = time.perf_counter()
    threads = [threading.Thread(target=producer, args=(p, ring, full, empty)) for p in range(PRODUCERS)]
    threads.append(threading.Thread(target=consumer, args=(ring, full, empty, out)))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    expected = [{expected} for t in range(TILES)]
    err = sum(a != b for a, b in zip(out, expected)) / TILES
    ms = (time.perf_counter() - start) * 1e3
    print("BISECTK_RESULT " + json.dumps({{"err": err, "time_ms": round(ms, 3){result_extra}}}))
    return 0 if err == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
'''

BUILD = '''"""The build step: byte-compile kernel.py (a syntax error fails the build)."""
import py_compile
import sys

try:
    py_compile.compile("kernel.py", doraise=True)
except py_compile.PyCompileError as exc:
    print(f"error: {exc.msg.strip().splitlines()[-1]}", file=sys.stderr)
    sys.exit(1)
'''

# The kernel's state, one knob per thing a commit edits.
START = {"doc_note": "", "depth": 2, "tiles": 64, "value": "t * PRODUCERS + p",
         "epilogue": "sum(ring[slot])", "extra": "", "count": "PRODUCERS", "arrivals": "", "result_extra": "",
         "expected": "sum(t * PRODUCERS + p for p in range(PRODUCERS))"}
NOTES = """# Notes

The consumer of a slot waits for its `full` barrier to complete a phase. If the barrier expects
more arrivals than the producers make (arrivals counted per thread while each producer thread
arrives once), that phase never completes and the kernel deadlocks.
"""
WIP = "\n\ndef split_consumer(:   # wip\n    pass\n"

# (branch, subject, kernel edits); "merge" merges the side branch into main
HISTORY: list[tuple[str, str, dict]] = [
    ("main", "pipeline: producer/consumer ring with mbarrier-style phases", {}),
    ("main", "raise the ring depth to 4", {"depth": 4}),                                    # v1.0
    ("main", "stream 96 tiles per launch", {"tiles": 96}),
    ("main", "docs: what a phase is", {"doc_note": "\n\nWaiters name the phase they need."}),
    ("main", "wip: split the consumer", {"extra": WIP}),
    ("main", "split the consumer (fixes the build)", {"extra": "\n\ndef release(empty, slot):\n"
                                                               "    empty[slot].arrive()\n"}),
    ("barrier-refactor", "barrier: name the arrival count",
     {"arrivals": "FULL_ARRIVALS = PRODUCERS   # arrivals that complete a full phase: one per producer\n",
      "count": "FULL_ARRIVALS"}),
    ("barrier-refactor", "barrier: count arrivals per thread, as the CUDA kernel does",
     {"arrivals": "FULL_ARRIVALS = PRODUCERS * WARP   # arrivals that complete a full phase, per thread\n",
      "doc_note": "\n\nArrivals are counted per thread, as the CUDA kernel counts them.",
      "result_extra": ', "arrivals": FULL_ARRIVALS'}),
    ("barrier-refactor", "barrier: comment the producer's write", {"value": "t * PRODUCERS + p   # this producer's half"}),
    ("main", "epilogue: sum a copy of the slot", {"epilogue": "sum(ring[slot][:])"}),
    ("main", "checksum in closed form", {"expected": "t * PRODUCERS * PRODUCERS + sum(range(PRODUCERS))"}),
    ("main", "wip: checksum epilogue", {"extra": "\n\ndef release(empty, slot):\n    empty[slot].arrive()\n" + WIP}),
    ("main", "checksum epilogue (fixes the build)", {"extra": "\n\ndef release(empty, slot):\n"
                                                              "    empty[slot].arrive()\n"}),
    ("main", "merge", {}),
    ("main", "tune: 128 tiles", {"tiles": 128}),
    ("main", "docs: the deadlock a miscounted barrier gives", {"NOTES.md": NOTES}),
    ("main", "epilogue: sum the slot in place", {"epilogue": "sum(ring[slot])"}),
]
GOOD_TAG = ("v1.0", 1)       # the tag and the commit (index into HISTORY) it names
CULPRIT = 7
SIDE_BRANCH = "barrier-refactor"
FORK = 5                     # the side branch starts from this commit


@dataclass
class Demo:
    root: Path
    shas: dict[str, str] = field(default_factory=dict)     # subject -> sha
    good: str = ""
    bad: str = ""
    culprit: str = ""

    def lines(self) -> list[str]:
        n = len(self.shas)
        return [f"demo history written to {self.root}: {n} commits, a side branch merged into main",
                f"good: v1.0 ({self.good[:10]}); bad: main ({self.bad[:10]}), which deadlocks",
                "try: bisectk bisect --repo DIR --good v1.0 --bad main --run 'python kernel.py' "
                "--build 'python build.py'"]


def _git(root: Path, *args: str, when: int = EPOCH) -> str:
    stamp = f"{when} +0000"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LANG": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1], "GIT_AUTHOR_DATE": stamp,
           "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_COMMITTER_DATE": stamp}
    try:
        p = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args], cwd=root,
                           env=env, capture_output=True, text=True)
    except FileNotFoundError:
        raise BisectkError("demo history needs git, and git is not on PATH") from None
    if p.returncode != 0:
        raise BisectkError(f"demo history: git {' '.join(args)} failed: {(p.stderr or p.stdout).strip()[:200]}")
    return p.stdout.strip()


def _refuse(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise BisectkError(f"{root}: exists and is not a directory; give a new or empty directory")
    if root.is_dir() and any(root.iterdir()):
        raise BisectkError(f"{root}: not empty; the demo writes a new git repository, give a new or empty directory")


def make_history(root: str | Path) -> Demo:
    root = Path(root)
    _refuse(root)
    created = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
        return _write(root)
    except BaseException:
        if created:
            shutil.rmtree(root, ignore_errors=True)
        else:   # it was empty: leave it empty
            for child in root.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
        raise


def _write(root: Path) -> Demo:
    demo = Demo(root)
    _git(root, "init", "-q", "-b", "main")
    (root / "build.py").write_text(BUILD, encoding="utf-8")
    (root / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    states = {"main": dict(START)}
    current = "main"
    for n, (branch, subject, edits) in enumerate(HISTORY):
        when = EPOCH + 3600 * n
        if n == FORK + 1:
            _git(root, "checkout", "-q", "-b", SIDE_BRANCH)
            states[SIDE_BRANCH] = dict(states["main"])
            current = SIDE_BRANCH
        if branch != current:
            _git(root, "checkout", "-q", branch)
            current = branch
        if subject == "merge":
            _git(root, "merge", "-q", "--no-ff", "-m", f"Merge branch '{SIDE_BRANCH}'", SIDE_BRANCH, when=when)
            side = states[SIDE_BRANCH]
            merged = states["main"]
            # the side branch's edits win where main did not touch the same knob since the fork
            for key in ("count", "arrivals", "doc_note", "value", "result_extra"):
                merged[key] = side[key]
            if (root / "kernel.py").read_text(encoding="utf-8") != KERNEL.format(**merged):
                raise BisectkError("demo history: the merge did not give the expected kernel (a bug in bisectk)")
            demo.shas[f"Merge branch '{SIDE_BRANCH}'"] = _git(root, "rev-parse", "HEAD")
            continue
        state = states[branch]
        for key, value in edits.items():
            if key.endswith(".md"):
                (root / key).write_text(value, encoding="utf-8")
            else:
                state[key] = value
        (root / "kernel.py").write_text(KERNEL.format(**state), encoding="utf-8")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "--allow-empty", "-m", subject, when=when)
        demo.shas[subject] = _git(root, "rev-parse", "HEAD")
        if n == GOOD_TAG[1]:
            _git(root, "tag", GOOD_TAG[0])
    demo.good = _git(root, "rev-parse", GOOD_TAG[0])
    demo.bad = _git(root, "rev-parse", "main")
    demo.culprit = demo.shas[HISTORY[CULPRIT][1]]
    return demo
