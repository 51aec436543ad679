"""Generated git histories for the scale benchmarks, written with one `git fast-import` stream.

Shapes (all planted with one first bad commit, the *culprit*, which adds the file `BUG`; a commit
is bad exactly when the culprit is among its ancestors, so `test ! -e BUG` is the oracle):

- `linear`: the good commit (the root) and N commits on one line, each rewriting `id.txt`.
- `merges`: the same N commits with a merge every 10th commit: each block of 10 forks a side
  branch from the mainline, puts 4 commits on it and 5 on the mainline, and merges it (the merge
  is the block's 10th commit). A culprit on a side branch reaches the mainline at its merge.
- `--files F`: the root also holds F source files (in directories of 100) and every commit
  rewrites 3 of them: a big tree, where checkouts cost.

Candidates are numbered in the order written (a topological order, parents first): the good
commit is the root, not a candidate; the bad commit is the last one (the tip of `main`). The
stream names every commit by a mark, so no sha is computed here; `git fast-import --export-marks`
gives them back. 300,000 commits take about 10 s.

Usage: python bench/repogen.py PATH --commits N [--shape linear|merges] [--files F]
                                [--culprit K | --seed S]
Prints one JSON line: {"good", "bad", "culprit", "culprit_index", "commits", "merges"}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
BLOCK, SIDE = 10, 4          # a merge every 10th commit; 4 of the other 9 on the side branch


@dataclass(frozen=True)
class Generated:
    path: Path
    good: str
    bad: str
    culprit: str
    culprit_index: int
    commits: int
    merges: int

    def to_dict(self) -> dict:
        return {"path": str(self.path), "good": self.good, "bad": self.bad, "culprit": self.culprit,
                "culprit_index": self.culprit_index, "commits": self.commits, "merges": self.merges}


def shape_parents(n: int, shape: str) -> list[tuple[int, ...]]:
    """Parents of candidates 0..n-1 (-1 = the good commit), in the order they are written."""
    if shape == "linear":
        return [(i - 1,) for i in range(n)]
    if shape != "merges":
        raise ValueError(f"unknown shape {shape!r}")
    parents: list[tuple[int, ...]] = []
    main = -1
    while len(parents) < n:
        fork, left = main, n - len(parents)
        if left < BLOCK:                       # a short tail: plain mainline commits
            for _ in range(left):
                parents.append((main,))
                main = len(parents) - 1
            break
        side = fork
        for _ in range(SIDE):                  # the side branch first: topological either way
            parents.append((side,))
            side = len(parents) - 1
        for _ in range(BLOCK - 1 - SIDE):
            parents.append((main,))
            main = len(parents) - 1
        parents.append((main, side))           # the merge: mainline first parent
        main = len(parents) - 1
    return parents


def _bad(parents: list[tuple[int, ...]], culprit: int) -> bytearray:
    bad = bytearray(len(parents))
    for i, ps in enumerate(parents):
        bad[i] = i == culprit or any(p >= 0 and bad[p] for p in ps)
    return bad


def stream(parents: list[tuple[int, ...]], culprit: int, files: int, rng: random.Random) -> Iterator[bytes]:
    """The fast-import stream: marks 1..files for blobs, root = files + 1, candidate i = files + 2 + i."""
    def blob_text(k: int, rev: int) -> bytes:
        return f"// file {k} revision {rev}\nint f{k}(int x) {{ return x + {rev}; }}\n".encode()

    for k in range(files):
        body = blob_text(k, 0)
        yield b"blob\nmark :%d\ndata %d\n%s\n" % (k + 1, len(body), body)
    root = files + 1
    when = 1_700_000_000
    yield b"commit refs/heads/main\nmark :%d\ncommitter bench <b@x> %d +0000\ndata 4\nroot\n" % (root, when)
    yield b"M 100644 inline id.txt\ndata 5\nroot\n\n"
    for k in range(files):
        yield b"M 100644 :%d src/d%03d/f%05d.c\n" % (k + 1, k // 100, k)
    yield b"\n"
    bad = _bad(parents, culprit)
    for i, ps in enumerate(parents):
        marks = [root if p < 0 else files + 2 + p for p in ps]
        msg = b"commit %d" % i
        out = [b"commit refs/heads/main\nmark :%d\ncommitter bench <b@x> %d +0000\ndata %d\n%s\n"
               % (files + 2 + i, when + i + 1, len(msg), msg),
               b"from :%d\n" % marks[0]]
        out += [b"merge :%d\n" % m for m in marks[1:]]
        out.append(b"M 100644 inline id.txt\ndata %d\n%s\n" % (len(msg) + 1, msg))
        for k in (rng.sample(range(files), 3) if files else ()):
            body = blob_text(k, i + 1)
            out.append(b"M 100644 inline src/d%03d/f%05d.c\ndata %d\n%s\n" % (k // 100, k, len(body), body))
        # The tree starts as the first parent's: add BUG where this commit is bad and that one not.
        first_bad = ps[0] >= 0 and bad[ps[0]]
        if bad[i] and not first_bad:
            out.append(b"M 100644 inline BUG\ndata 1\nx\n")
        out.append(b"\n")
        yield b"".join(out)


def generate(path: Path | str, commits: int, *, shape: str = "linear", files: int = 0,
             culprit: int | None = None, seed: int = 0) -> Generated:
    """Write a new repository at `path` (which must not exist or be empty) and check out its tip."""
    path = Path(path).resolve()    # git fast-import runs in it: a relative marks path would land a level down
    rng = random.Random(seed)
    parents = shape_parents(commits, shape)
    if culprit is None:
        culprit = rng.randrange(commits)
    if not 0 <= culprit < commits:
        raise ValueError(f"culprit {culprit} is not among the {commits} candidates")
    path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    marks = path / ".git" / "bench-marks"
    proc = subprocess.Popen(["git", "fast-import", "--quiet", f"--export-marks={marks}"], cwd=path,
                            stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    buf: list[bytes] = []
    for chunk in stream(parents, culprit, files, rng):
        buf.append(chunk)
        if len(buf) >= 4096:
            proc.stdin.write(b"".join(buf))
            buf.clear()
    proc.stdin.write(b"".join(buf))
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    sha = {}
    want = {files + 1, files + 2 + culprit, files + 1 + commits}
    for line in marks.read_text().splitlines():
        mark, value = line.split()
        if int(mark[1:]) in want:
            sha[int(mark[1:])] = value
    marks.unlink()
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=path, check=True, env=env)
    return Generated(path, sha[files + 1], sha[files + 1 + commits], sha[files + 2 + culprit], culprit,
                     commits, sum(len(p) > 1 for p in parents))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--commits", type=int, required=True)
    ap.add_argument("--shape", choices=("linear", "merges"), default="linear")
    ap.add_argument("--files", type=int, default=0)
    ap.add_argument("--culprit", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    g = generate(a.path, a.commits, shape=a.shape, files=a.files, culprit=a.culprit, seed=a.seed)
    print(json.dumps(g.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
