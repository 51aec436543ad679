"""Hang bench (issue 13): what a hang costs with a watchdog that follows progress, against today's rule.

The subject (tests/fixtures/jit.py) is shaped like a JIT kernel script: --startup seconds of imports,
a compile (0.5 s; 3 s longer with slow_compile=1, a benign factor), a 50 ms kernel, and
hang=1 (silence after 'launch', the culprit), among benign factors. Two ablations of the same spec
through the real CLI, cold:
- `progress`: the subject prints BISECTK_PHASE lines, so the watchdog follows each run's progress;
- `old rule`: the same subject with --quiet (no progress lines): max(floor, 5 x the good run).
Reported: the culprit, total wall, each hang's detection latency after the point where the good run
had finished (from the run's own report), and whether any slow-compiling configuration was called a
hang; each ablation's runs, and how many of them (and how many seconds of runs) confirmed the
answer before it was given (issue 23). Usage: python bench/hang_bench.py [--startup 2.0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
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


def spec(directory: Path, startup: float, quiet: bool) -> Path:
    argv = ["python", str(JIT), "--startup", str(startup), "--hang", "{hang}", "--slow-compile", "{slow_compile}",
            "--kernel", "{kernel}", "--benign", "{benign}"] + (["--quiet"] if quiet else [])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").touch()
    p = directory / "hang.toml"
    p.write_text(f'name = "jit-hang"\n[subject]\ncommand = {json.dumps(argv)}\n'
                 "[good]\nhang = 0\nslow_compile = 0\nkernel = 0.05\nbenign = 0\n"
                 "[bad]\nhang = 1\nslow_compile = 1\nkernel = 0.08\nbenign = 1\n")
    return p


def ablate(path: Path, ledger: Path) -> tuple[dict, float]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bisectk", "ablate", str(path), "--json", "--ledger", str(ledger)],
                       capture_output=True, text=True, timeout=3600)
    return json.loads(p.stdout), time.perf_counter() - t


def confirming(doc: dict) -> tuple[int, float]:
    """The runs of the answer's confirmation (issue 23) and the seconds they took."""
    mine = [a for a in doc["attempts"] if a.get("phase") == "confirm" and not a.get("from_ledger")]
    return sum(a.get("runs", 1) for a in mine), sum(a.get("time_s") or 0.0 for a in mine)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--startup", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results" / "hang_bench.txt"))
    args = ap.parse_args()
    rows = {"progress": [], "old rule": []}
    counts: dict[str, list[tuple[int, int, float]]] = {"progress": [], "old rule": []}
    latencies, slow_hangs, culprits = [], 0, []
    with tempfile.TemporaryDirectory(prefix="hangb-") as tmp:
        for rep in range(args.repeats):
            for mode, quiet in (("progress", False), ("old rule", True)):
                d = Path(tmp) / f"{mode.replace(' ', '_')}{rep}"
                doc, wall = ablate(spec(d, args.startup, quiet), d / "l.db")
                rows[mode].append(wall)
                counts[mode].append((doc["runs"], *confirming(doc)))
                culprits.append((mode, doc.get("culprits")))
                good = doc["endpoints"]["good"]["runs"][0]["duration_s"]
                for a in doc["attempts"]:
                    applied = set(a["applied"])
                    if "slow_compile" in applied and "hang" not in applied and a["outcome"] != "pass":
                        slow_hangs += 1
                if mode == "progress":
                    for run in doc["endpoints"]["bad"]["runs"]:
                        m = re.search(r"([\d.]+) s past the point where the good run had finished", run["signature"])
                        if m:
                            latencies.append(float(m.group(1)))
                    hang_durations = [a["time_s"] for a in doc["attempts"] if "hang" in a["applied"]]
                    rows.setdefault("hang runs (progress)", []).extend(hang_durations)
                rows.setdefault(f"good run ({mode})", []).append(good)
    lines = [f"# bench/hang_bench.py --startup {args.startup} --repeats {args.repeats}  "
             "(2-core dev machine; cold processes)",
             f"culprits: {sorted(set((m, tuple(c or ())) for m, c in culprits))}",
             f"hang detection latency after the good run's finish point (progress): "
             f"{', '.join(f'{x:.2f}' for x in latencies)} s (max {max(latencies):.2f}; goal <= 1.5)",
             f"slow-compiling configurations called a hang: {slow_hangs}",
             "| mode | mean ablation wall s | runs | mean runs an ablation | of them confirming | s of confirming runs |",
             "|---|---|---|---|---|---|"]
    for mode in ("progress", "old rule"):
        runs, conf, secs = (statistics.mean(c[i] for c in counts[mode]) for i in range(3))
        lines.append(f"| {mode} | {statistics.mean(rows[mode]):.1f} | {len(rows[mode])} ablations | {runs:.1f} | "
                     f"{conf:.1f} | {secs:.1f} |")
    ratio = statistics.mean(rows["old rule"]) / statistics.mean(rows["progress"])
    lines.append(f"old rule / progress wall: {ratio:.2f}x; good run {statistics.mean(rows['good run (progress)']):.2f} s")
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
