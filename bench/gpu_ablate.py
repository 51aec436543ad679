"""Run `bisectk ablate` on every variant pair and check the isolated culprits against the planted ones.

For each spec in variants/gpu/ (or those named, e.g. variants/cpu/*.toml), runs the real CLI
`python -m bisectk ablate SPEC --json [--warm]` with a private ledger, and records the planted
culprits (parsed from the spec's description, 'culprit: a, b (...)'), the isolated ones, the
interaction flag, runs and wall time. Prints a table and writes JSON lines to --out. Stops starting
new variants once --budget seconds have passed, so it fits a time-limited device call.

Usage: python bench/gpu_ablate.py [--warm] [--executor ray [--ray-address HOST:PORT]] [--out results.jsonl]
       [--budget 540] [SPEC ...]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def planted(spec: Path) -> list[str]:
    """The factor names written after 'culprit:' / 'culprits:' in the spec's description."""
    doc = tomllib.loads(spec.read_text())
    m = re.search(r"culprits?:\s*([^(.]*)", doc.get("description", ""))
    words = re.findall(r"[A-Za-z_]\w*", m.group(1)) if m else []
    return sorted({w for w in words if w in doc.get("good", {})})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--executor", default="local", help="local, or ray: one actor (num_gpus=1) per ablation")
    ap.add_argument("--ray-address", default=None, help="with --executor ray: a running cluster (one per GPU host)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--budget", type=float, default=540.0)
    args = ap.parse_args()
    specs = [Path(s) for s in args.specs] or sorted((ROOT / "variants" / "gpu").glob("*.toml"))
    start = time.monotonic()
    mode = "warm" if args.warm else "cold"
    print(f"{'variant':32} {'mode':5} {'planted':34} {'isolated':34} {'inter':5} {'runs':>4} {'wall s':>7} ok", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            if time.monotonic() - start > args.budget:
                print(f"# budget spent: {spec.name} and later not run", flush=True)
                break
            cmd = [sys.executable, "-m", "bisectk", "ablate", str(spec), "--json", "--ledger", f"{tmp}/{spec.stem}.db"]
            t = time.monotonic()
            cmd += ["--executor", args.executor] + (["--ray-address", args.ray_address] if args.ray_address else [])
            p = subprocess.run(cmd + (["--warm"] if args.warm else []), cwd=ROOT, capture_output=True, text=True)
            wall = time.monotonic() - t
            try:
                doc = json.loads(p.stdout)
            except json.JSONDecodeError:
                doc = {"error": (p.stderr or p.stdout)[-600:]}
            found = sorted(doc.get("culprits") or [])
            ok = found == planted(spec)
            row = {"variant": spec.stem, "mode": mode, "planted": planted(spec), "culprits": found,
                   "interaction": doc.get("interaction"), "runs": doc.get("runs"), "wall_s": round(wall, 1),
                   "ok": ok, "exit": p.returncode, "bad": (doc.get("endpoints") or {}).get("bad", {}).get("signature"),
                   "problem": (doc.get("endpoints") or {}).get("problem"), "error": doc.get("error")}
            print(f"{spec.stem:32} {mode:5} {','.join(row['planted']):34} {','.join(found):34} "
                  f"{str(row['interaction']):5} {str(row['runs']):>4} {wall:7.1f} {ok}", flush=True)
            if not ok:
                print(f"#   bad: {row['bad']}  problem: {row['problem']}  error: {row['error']}", flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
