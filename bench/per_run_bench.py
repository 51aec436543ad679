"""Per-run overhead of `bisectk ablate` and `bisectk diff` as the factor or hunk count grows (issue 27).

Each run of the subject stamps its start and end into a log, so the time bisectk spends *between*
two runs (choosing the next configuration, materialising it, the ledger, events, the process
start) is measured apart from the runs themselves and from the command's fixed start-up cost:

    per-run overhead = (end of the last run - start of the first run - time inside runs) / (runs - 1)

- ablate: a spec with N factors (good: every factor 0, bad: every factor 1), each passed to the
  subject in its environment (`F<k>="{f<k>}"`); the subject fails when the planted factor is 1.
- diff: two trees of N/50 files with 50 hunks each (one changed line every 6 lines); the
  subject (`--run`) fails when the planted hunk's line is in the hybrid tree.

The subject is `sh` reading its environment or one file: the runs are as cheap as a real run
can be. Part of what grows is the subject's own: `sh` started with 8,192 variables takes ~15 ms
longer to start than with 512 (it imports every one), whoever starts it. So each case also runs
the same subject directly (no bisectk), with the same environment, and measures its own start and
exit (process wall minus the time between its stamps): the "subject" column. bisectk's share of
the gap is the gap minus that. Goal: per-run overhead at 8,192 factors and at 5,000 hunks within
10 ms of the 512 case.

Usage: python bench/per_run_bench.py [--factors 512 8192] [--hunks 512 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# each run logs: start, end, and the CPU seconds bisectk itself (the supervisor's parent) has used
STAMP = ('printf "%s " "$(date +%s.%N)" >> "$BENCH_LOG"; ( {test} ); r=$?; '
         'b=$(ps -o ppid= -p $PPID | tr -d " "); '
         'printf "%s %s\\n" "$(date +%s.%N)" "$(cut -d" " -f14,15 /proc/$b/stat)" >> "$BENCH_LOG"; exit $r')
TICK = os.sysconf("SC_CLK_TCK")


def bisectk(*args: str, cwd: Path, env: dict) -> tuple[float, dict]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bisectk", *args, "--json", "--fresh"], cwd=cwd, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode not in (0, 1):
        raise RuntimeError(f"bisectk {args[0]} exit {p.returncode}: {p.stderr[-1500:]}")
    return wall, json.loads(p.stdout)


def gaps(log: Path) -> tuple[int, float, list[float], float]:
    """(runs, seconds inside runs, the seconds between one run's end and the next one's start,
    bisectk's own CPU seconds per run between the first run and the last)."""
    stamps = [tuple(map(float, line.split())) for line in log.read_text().splitlines() if len(line.split()) == 4]
    inside = sum(s[1] - s[0] for s in stamps)
    between = [b[0] - a[1] for a, b in zip(stamps, stamps[1:])]
    cpu = [(s[2] + s[3]) / TICK for s in stamps]
    per_run_cpu = (cpu[-1] - cpu[0]) / (len(cpu) - 1) if len(cpu) > 1 else float("nan")
    return len(stamps), inside, between, per_run_cpu


def subject_floor(argv: list[str], env: dict, cwd: Path, log: Path, times: int = 15) -> float:
    """Median seconds the subject spends outside its own stamps (starting, exiting) when started
    directly, not by bisectk: the part of the gap between two runs that is the subject's."""
    outside = []
    for _ in range(times):
        log.unlink(missing_ok=True)
        t = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env={**env, "BENCH_LOG": str(log)}, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        _, inside, _, _ = gaps(log) if log.exists() else (0, 0.0, [], 0.0)
        outside.append(wall - inside)
    log.unlink(missing_ok=True)
    return statistics.median(outside)


def ablate_case(n: int, tmp: Path, rng: random.Random) -> dict:
    culprit = rng.randrange(n)
    spec = tmp / f"ablate-{n}.toml"
    test = f'[ "$F{culprit}" = 1 ] && exit 1; exit 0'
    env_lines = ", ".join(f'F{k} = "{{f{k}}}"' for k in range(n))
    spec.write_text("\n".join([
        f'name = "factors-{n}"',
        "[subject]",
        f"command = {json.dumps(['sh', '-c', STAMP.format(test=test)])}",
        f"env = {{{env_lines}}}",
        "[good]", *(f"f{k} = 0" for k in range(n)),
        "[bad]", *(f"f{k} = 1" for k in range(n)), ""]))
    (tmp / "pyproject.toml").touch()
    log = tmp / f"ablate-{n}.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "BENCH_LOG": str(log), "PYTHONPATH": str(ROOT)}
    wall, doc = bisectk("ablate", str(spec), "--ledger", str(tmp / f"ablate-{n}.db"), cwd=tmp, env=env)
    runs, inside, between, cpu = gaps(log)
    right = [c.get("factor", c) if isinstance(c, dict) else c for c in doc.get("culprits", [])] == [f"f{culprit}"]
    floor = subject_floor(["sh", "-c", STAMP.format(test=test)], {**env, **{f"F{k}": "0" for k in range(n)}},
                          tmp, tmp / "floor.log")
    return {"case": f"ablate {n} factors", "runs": runs, "wall_s": wall, "inside_s": inside,
            "between": between, "cpu_ms": cpu * 1000, "right": right, "floor": floor}


def diff_case(n: int, tmp: Path, rng: random.Random) -> dict:
    per_file = 50
    files = max(1, n // per_file)
    good, bad = tmp / f"good-{n}", tmp / f"bad-{n}"
    for d in (good, bad):
        d.mkdir()
    culprit = rng.randrange(files * per_file)
    for f in range(files):
        lines_good, lines_bad = [], []
        for h in range(per_file):
            block = [f"// file {f} block {h} line {j}" for j in range(5)]
            lines_good += block + [f"value_{f}_{h} = 0"]
            lines_bad += block + [f"value_{f}_{h} = {'BUG' if f * per_file + h == culprit else 1}"]
        (good / f"src{f:04d}.c").write_text("\n".join(lines_good) + "\n")
        (bad / f"src{f:04d}.c").write_text("\n".join(lines_bad) + "\n")
    log = tmp / f"diff-{n}.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "BENCH_LOG": str(log), "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp / "cache")}
    test = "grep -q BUG src*.c && exit 1; exit 0"
    wall, doc = bisectk("diff", str(good), str(bad), "--run", f"sh -c '{STAMP.format(test=test)}'", "--no-lines",
                        cwd=tmp, env=env)
    runs, inside, between, cpu = gaps(log)
    hunks = doc.get("culprit_hunks") or doc.get("culprits") or []
    floor = subject_floor(["sh", "-c", STAMP.format(test=test)], env, good, tmp / "floor.log")
    return {"case": f"diff {files * per_file} hunks", "runs": runs, "wall_s": wall, "inside_s": inside,
            "between": between, "cpu_ms": cpu * 1000, "right": len(hunks) == 1, "floor": floor}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factors", type=int, nargs="*", default=[512, 8192])
    ap.add_argument("--hunks", type=int, nargs="*", default=[512, 5000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    rows: dict[str, list[dict]] = {}
    for r in range(a.repeats):
        for n in a.factors:
            with tempfile.TemporaryDirectory(prefix="bisectk-perrun-") as d:
                row = ablate_case(n, Path(d), rng)
                rows.setdefault(row["case"], []).append(row)
        for n in a.hunks:
            with tempfile.TemporaryDirectory(prefix="bisectk-perrun-") as d:
                row = diff_case(n, Path(d), rng)
                rows.setdefault(row["case"], []).append(row)
    print(f"{'case':<20} {'runs':>5} {'wall s':>7} {'between runs ms':>16} {'(min)':>7} {'subject ms':>11}"
          f" {'bisectk ms':>11} {'bisectk CPU ms/run':>19}  right")
    print(f"{'':<20} {'':>5} {'':>7} {'median':>16} {'':>7} {'own start':>11} {'the rest':>11} {'median':>19}")
    med, cpu, own = {}, {}, {}
    for case, rs in rows.items():
        gaps_ms = [g * 1000 for x in rs for g in x["between"]]
        med[case] = statistics.median(gaps_ms)
        cpu[case] = statistics.median(x["cpu_ms"] for x in rs)
        floor = statistics.median(x["floor"] for x in rs) * 1000
        own[case] = med[case] - floor
        print(f"{case:<20} {statistics.median(x['runs'] for x in rs):>5.0f} {statistics.median(x['wall_s'] for x in rs):>7.2f} "
              f"{med[case]:>16.1f} {min(gaps_ms):>7.1f} {floor:>11.1f} {own[case]:>11.1f} {cpu[case]:>19.1f}"
              f"  {sum(x['right'] for x in rs)}/{len(rs)}")
    ok = True
    for kind in ("ablate", "diff"):
        cases = [c for c in med if c.startswith(kind)]
        if len(cases) >= 2:
            small, big = cases[0], cases[-1]
            delta, dcpu, downs = med[big] - med[small], cpu[big] - cpu[small], own[big] - own[small]
            ok &= downs <= 10
            print(f"goal: {big} within 10 ms of {small}: bisectk's share of the gap {downs:+.1f} ms "
                  f"{'PASS' if downs <= 10 else 'FAIL'} (whole gap {delta:+.1f} ms; bisectk's own CPU {dcpu:+.1f} ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
