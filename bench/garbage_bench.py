"""Garbage bench (issue 10): seeded ablations of the stale-shared-memory attention variant, whose bad
output is garbage of a different form every run (NaN, inf, 2.5e+33, ...), with the lone culprit
(consumer_wgs) among six benign differences in a seeded order (bench/garbage.py). Cold (a fresh
process per run) and warm (--warm: one worker process, torch imported once). Optionally the same
ablations with an older bisectk (--baseline-rev REV, checked out into a temporary worktree).
The runs include the answer's confirmation before it is given (issue 23: the culprit fails again,
bad without it passes again); 'of them confirming' counts those.

Usage: python bench/garbage_bench.py [--seeds 50] [--modes cold,warm] [--baseline-rev 6dbe8b9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from garbage import garbage_spec  # noqa: E402


def ablate(spec: Path, ledger: Path, warm: bool, pythonpath: str | None, cwd: Path) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", str(spec), "--json", "--ledger", str(ledger),
                        *(["--warm"] if warm else [])], capture_output=True, text=True, env=env, cwd=cwd, timeout=1800)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        doc = {}
    confirming = sum(a.get("runs", 1) for a in doc.get("attempts", ())
                     if a.get("phase") == "confirm" and not a.get("from_ledger"))
    return {"culprits": doc.get("culprits"), "runs": doc.get("runs"), "confirming": confirming, "exit": p.returncode,
            "wall_s": time.perf_counter() - t0, "different": len(doc.get("different_failures") or [])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--baseline-rev", default=None, help="also run this older revision of bisectk (cold)")
    ap.add_argument("--baseline-seeds", type=int, default=10)
    ap.add_argument("--out", default=str(HERE / "results" / "garbage_bench.txt"))
    args = ap.parse_args()
    lines = [f"# bench/garbage_bench.py --seeds {args.seeds} --modes {args.modes}"
             + (f" --baseline-rev {args.baseline_rev} --baseline-seeds {args.baseline_seeds}" if args.baseline_rev else "")]
    lines += ["| bisectk | mode | right | mean runs | of them confirming | mean wall s | exits |",
              "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="garbage-") as tmp:
        tmp = Path(tmp)
        plans = [("this", m, args.seeds, None) for m in args.modes.split(",")]
        if args.baseline_rev:
            old = tmp / "old"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(old), args.baseline_rev], cwd=ROOT, check=True)
            plans.append((args.baseline_rev, "cold", args.baseline_seeds, str(old)))
        try:
            for who, mode, seeds, pythonpath in plans:
                rows = []
                for seed in range(seeds):
                    d = tmp / f"{who}-{mode}-{seed}"
                    spec = garbage_spec(d, seed)
                    rows.append(ablate(spec, d / "l.db", mode == "warm", pythonpath, cwd=tmp))
                right = sum(r["culprits"] == ["consumer_wgs"] for r in rows)
                exits = {}
                for r in rows:
                    exits[r["exit"]] = exits.get(r["exit"], 0) + 1
                runs = [r["runs"] for r in rows if r["runs"]]
                lines.append(f"| {who} | {mode} | {right}/{len(rows)} | "
                             f"{statistics.mean(runs) if runs else float('nan'):.1f} | "
                             f"{statistics.mean(r['confirming'] for r in rows):.1f} | "
                             f"{statistics.mean(r['wall_s'] for r in rows):.1f} | {exits} |")
                print(lines[-1], flush=True)
        finally:
            if args.baseline_rev:
                subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "old")], cwd=ROOT)
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
