"""`bisectk diff` on a 200-hunk difference with one culprit hunk, side by side with picire.

For each seed a pair of stand-in kernel trees (tests/fixtures/diffsrc/kernelpair.py) is generated
with `--hunks` hunks: one culprit (a wrong result), two build breakers (hunk pairs that are each a
syntax error alone) and harmless edits. Then:
- bisectk: the real CLI, `bisectk diff GOOD BAD SPEC --json --no-lines` (endpoint checks included);
- picire: its ddmin (picire.DD) over the same hunk list, each test materialising the hybrid in a
  scratch tree and running build + subject through bisectk's Runner (same cost per run), with
  picire's own cache; a build failure or other non-FAIL is "not failing" to picire.
Prints runs and wall time per seed and the mean, and whether each found the planted hunk. bisectk's
runs include its confirmation (the culprit failing again, the configurations the answer rests on
passing again: issue 23), which picire does not do; they are also given without it.

Usage: python bench/diff_vs_picire.py [--hunks 200] [--seeds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from picire_import import import_picire  # noqa: E402  (bench/picire_import.py)
from bisectk.outcome import Outcome  # noqa: E402
from bisectk.run.runner import Runner  # noqa: E402
from bisectk.spaces.hunkspace import HunkSpace  # noqa: E402
from bisectk.spec import load_spec  # noqa: E402

SPEC = """name = "kernelpair"
[subject]
command = ["python", "run.py"]
build = ["python", "-m", "compileall", "-q", "kernel"]
timeout = 30
[oracle]
metric = "err"
max = 0
"""


def kernelpair():
    spec = importlib.util.spec_from_file_location("kernelpair", ROOT / "tests/fixtures/diffsrc/kernelpair.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kernelpair"] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def run_bisectk(work: Path, pair) -> tuple[int, float, bool, int]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bisectk", "diff", str(pair.good), str(pair.bad), str(work / "spec.toml"),
                        "--json", "--no-lines", "--ledger", str(work / "bk.db")],
                       cwd=work, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t
    doc = json.loads(p.stdout)
    found = [h["text"] for h in doc.get("culprit_hunks", [])]
    ok = len(found) == 1 and any(line.strip() in found[0] for line in pair.culprit_lines)
    confirming = sum(a.get("runs", 1) for a in doc.get("attempts", ())
                     if a.get("phase") == "confirm" and not a.get("from_ledger"))
    return doc["runs"], wall, ok, confirming


def run_picire(work: Path, pair, picire) -> tuple[int, float, bool, int]:
    spec = load_spec(work / "spec.toml")
    space = HunkSpace(pair.good, pair.bad, work / "picire-scratch")
    runner = Runner(spec, cwd=space.workdir)
    t = time.perf_counter()
    runs = 0

    def test(config, config_id):
        nonlocal runs
        runs += 1
        run = runner.observe(space.workload(config))
        return picire.Outcome.FAIL if run.outcome is Outcome.FAIL else picire.Outcome.PASS
    ids = [h.id for h in space.hunks]
    # picire checks the full configuration itself; count it like bisectk's endpoint checks
    result = picire.DD(test, cache=picire.ConfigCache())(ids)
    runs += 1  # the good endpoint, which picire assumes instead of checking
    runner.observe(space.workload([]))
    wall = time.perf_counter() - t
    texts = [space.by_id[i].unified() for i in result]
    ok = len(result) == 1 and any(line.strip() in texts[0] for line in pair.culprit_lines)
    space.close()
    return runs, wall, ok, 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hunks", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    kp, picire = kernelpair(), import_picire()
    rows = []
    print(f"{'seed':>4} {'method':8} {'runs':>5} {'wall s':>8}  found")
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as d:
            work = Path(d)
            pair = kp.make_pair(work / "src", hunks=args.hunks, culprit="one", breakers=2, seed=seed)
            (work / "spec.toml").write_text(SPEC)
            for name, fn in (("bisectk", lambda: run_bisectk(work, pair)), ("picire", lambda: run_picire(work, pair, picire))):
                runs, wall, ok, confirming = fn()
                rows.append((name, runs, wall, ok, confirming))
                more = f"  ({confirming} of them confirming)" if confirming else ""
                print(f"{seed:>4} {name:8} {runs:>5} {wall:>8.2f}  {ok}{more}", flush=True)
    for name in ("bisectk", "picire"):
        mine = [r for r in rows if r[0] == name]
        print(f"mean {name:8} runs {statistics.mean(r[1] for r in mine):6.1f}  wall {statistics.mean(r[2] for r in mine):7.2f} s  "
              f"correct {sum(r[3] for r in mine)}/{len(mine)}")
    b = statistics.mean(r[1] for r in rows if r[0] == "bisectk")
    c = statistics.mean(r[4] for r in rows if r[0] == "bisectk")
    p = statistics.mean(r[1] for r in rows if r[0] == "picire")
    print(f"goal fewer runs than picire: {'PASS' if b < p else 'FAIL'} ({b:.1f} vs {p:.1f}, ratio {b / p:.2f})")
    print(f"the same without bisectk's confirmation (picire confirms nothing): {'PASS' if b - c < p else 'FAIL'} "
          f"({b - c:.1f} vs {p:.1f}, ratio {(b - c) / p:.2f})")


if __name__ == "__main__":
    main()
