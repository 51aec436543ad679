"""What hangs cost (issue 25): seconds past the good run's finish point, and warm against cold walls.

Cases, each through the real CLI, against this checkout and (with --base DIR) another one -- e.g.
the commit before issue 25, extracted with `git archive 4eb19c7 | tar -x -C DIR`:

- latency: the JIT-shaped subject (tests/fixtures/jit.py: start-up, compile, a 50 ms kernel)
  hangs after its launch; `bisectk run --config bad` reports how far past the point where the good
  run had finished the hang was called. Once with the BISECTK_PHASE protocol, once with plain log
  lines ("compiling kernel", "launching kernel"), the mode the issue measured at 3.3 s, and once
  with those lines printed to stdout by a plain print() that never flushes (block-buffered into
  the pipe unless the subject's PYTHONUNBUFFERED is set; stop 45).
Every command runs without this shell's PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE, as on a
user's machine.
- failing exits: an OFAT ablation (2 x 16 factors + endpoints = 34 runs) of a 50 ms Python subject
  whose culprit exits 1 with a wrong result, cold and --warm: the issue measured 4.0 s cold
  against 11.9-16.3 s warm, a worker retired after every failing exit.
- jit hang: `ablate` of the JIT-shaped hang pair (the hang among 3 benign factors), cold and --warm.

Usage: python bench/hang_cost_bench.py [--base DIR] [--repeats 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
JIT = ROOT / "tests" / "fixtures" / "jit.py"
PAST = re.compile(r"([\d.]+) s past the point where the good run had finished")

FAST = '''import argparse, json, sys, time
p = argparse.ArgumentParser()
for i in range(16):
    p.add_argument(f"--f{i}", type=int)
a = p.parse_args()
time.sleep(0.05)
if a.f7:                       # the culprit: a wrong result, reported by a failing exit
    print("rel_err 2.7 > 1e-4", file=sys.stderr)
    sys.exit(1)
print("BISECTK_RESULT " + json.dumps({"rel_err": 0.0}))
'''


def cli(code: Path, *args, cwd: Path, timeout: float = 1800) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(code)
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    return p, time.perf_counter() - t


def jit_spec(d: Path, mode: str) -> Path:
    extra = {"protocol": [], "plain": ["--plain"], "plain-unflushed": ["--plain", "--buffered"]}[mode]
    argv = ["python", str(JIT), "--startup", "2.0", "--hang", "{hang}", "--kernel", "{kernel}",
            "--benign", "{benign}", "--compile", "{compile}", *extra]
    d.mkdir(parents=True, exist_ok=True)
    (d / "pyproject.toml").touch()
    p = d / "jit.toml"
    p.write_text(f'name = "jit-hang"\n[subject]\ncommand = {json.dumps(argv)}\n'
                 "[good]\nhang = 0\nkernel = 0.05\nbenign = 0\ncompile = 0.5\n"
                 "[bad]\nhang = 1\nkernel = 0.06\nbenign = 1\ncompile = 0.6\n")
    return p


def fast_spec(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "pyproject.toml").touch()
    (d / "fast.py").write_text(FAST)
    argv = ["python", "fast.py"]
    for i in range(16):
        argv += [f"--f{i}", "{f%d}" % i]
    good = "\n".join(f"f{i} = 0" for i in range(16))
    bad = "\n".join(f"f{i} = 1" for i in range(16))
    p = d / "fast.toml"
    p.write_text(f'name = "fast-fail"\n[subject]\ncommand = {json.dumps(argv)}\n[good]\n{good}\n[bad]\n{bad}\n')
    return p


def latency(code: Path, tmp: Path, mode: str) -> float | None:
    """Seconds past the good run's finish point when the hang was called: as the report says it,
    or, where the watchdog saw no progress point ("hung before its first progress point"), the
    hung run's duration less the good run's."""
    spec = jit_spec(tmp / f"lat-{mode}", mode)
    g, _ = cli(code, "run", spec, "--config", "good", "--json", "--ledger", tmp / f"lat-{mode}.db", cwd=tmp)
    p, _ = cli(code, "run", spec, "--config", "bad", "--json", "--ledger", tmp / f"lat-{mode}.db", cwd=tmp)
    try:
        bad, good = json.loads(p.stdout), json.loads(g.stdout)
    except ValueError:
        return None
    m = PAST.search(bad.get("signature", ""))
    if m:
        return float(m.group(1))
    if bad.get("kind") == "hang" and bad.get("duration_s") and good.get("duration_s"):
        return round(float(bad["duration_s"]) - float(good["duration_s"]), 2)
    return None


def ablation(code: Path, tmp: Path, spec: Path, warm: bool, *extra) -> tuple[float, list, int]:
    db = tmp / f"{spec.stem}-{'warm' if warm else 'cold'}-{time.monotonic_ns()}.db"
    p, wall = cli(code, "ablate", spec, "--json", "--ledger", db, *extra, *(["--warm"] if warm else []), cwd=tmp)
    try:
        doc = json.loads(p.stdout)
        return wall, doc.get("culprits"), doc.get("runs", 0)
    except ValueError:
        return wall, ["error: " + p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "no output"], 0


def measure(code: Path, repeats: int) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="hangcost-") as t:
        tmp = Path(t)
        for mode in ("protocol", "plain", "plain-unflushed"):
            out[f"latency {mode}"] = [latency(code, tmp, mode) for _ in range(repeats)]
        fast = fast_spec(tmp / "fast")
        jit = jit_spec(tmp / "jitabl", "protocol")
        for warm in (False, True):
            key = "warm" if warm else "cold"
            out[f"failing exits {key}"] = [ablation(code, tmp, fast, warm, "--strategy", "ofat") for _ in range(repeats)]
            out[f"jit hang {key}"] = [ablation(code, tmp, jit, warm) for _ in range(repeats)]
    return out


def summary(label: str, res: dict) -> list[str]:
    lines = [f"## {label}"]
    for k, v in res.items():
        if k.startswith("latency"):
            vals = [x for x in v if x is not None]
            lines.append(f"{k}: hang called {', '.join(f'{x:.2f}' for x in vals) or 'never/unknown'} s past the "
                         f"good run's finish point" + (f" (median {statistics.median(vals):.2f})" if vals else ""))
        else:
            walls = [w for w, _, _ in v]
            lines.append(f"{k}: wall {', '.join(f'{w:.1f}' for w in walls)} s (median {statistics.median(walls):.1f}); "
                         f"culprits {v[0][1]}; runs {v[0][2]}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, help="another checkout to measure beside this one (the 'before')")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "hang_cost_bench.txt"))
    args = ap.parse_args()
    lines = [f"# bench/hang_cost_bench.py --repeats {args.repeats} ({os.cpu_count()} cores; cold = a process per run)"]
    if args.base:
        lines += summary(f"before: {args.base}", measure(args.base.resolve(), args.repeats))
    lines += summary(f"after: {ROOT}", measure(ROOT, args.repeats))
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
