"""Ray executor benchmark (issue 14): wall time of `bisectk bisect --jobs K` against K actors, with
the local executor's wall in the same run.

The subject is a CPU stand-in of about 1 s per run (`time.sleep(--seconds)` and a checksum; it
does not burn CPU, so 4 parallel runs fit on a 2-core machine as they would on 4 GPUs). A
generated history of --commits commits turns bad at a fixed commit (a wrong result, not a hang:
the bench times runs, not the watchdog). For each K in --actors, the same bisection runs twice,
each with a fresh ledger: `--executor local --jobs K` (K worktrees, K processes) and
`--executor ray --jobs K` (a local Ray instance started by the command, K actors; each commit is
sent as a `git archive` and materialised by the actor that runs it).

Columns: wall s (the whole command: for ray, starting the local instance and the actors too),
search s (the record's wall_s: endpoint checks and search, no start-up), rounds and runs, and
ray/local for both walls. The answer of every run is checked against the planted culprit.

Usage: python bench/ray_bench.py [--commits 128] [--actors 1,2,4] [--seconds 1.0] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KERNEL = '''import json, sys, time
BAD = {bad}
time.sleep({seconds})
acc = sum(i * i for i in range(20000)) % 9973
print("BISECTK_RESULT " + json.dumps({{"rel_err": 1.0 if BAD else 0.0, "acc": acc}}))
sys.exit(1 if BAD else 0)   # git bisect run's protocol: 0 good, 1 bad
# revision {i}
'''


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "Bench",
           "GIT_COMMITTER_EMAIL": "b@example.com", "HOME": str(cwd), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


def make_history(root: Path, n: int, culprit: int, seconds: float) -> list[str]:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    shas = []
    for i in range(n):
        (root / "kernel.py").write_text(KERNEL.format(bad=i >= culprit, seconds=seconds, i=i))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {i}")
        shas.append(git(root, "rev-parse", "HEAD"))
    return shas


def bisect(repo: Path, shas: list[str], executor: str, jobs: int, ledger: Path) -> dict:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "bisectk", "bisect", "--repo", str(repo), "--good", shas[0],
                        "--bad", shas[-1], "--run", "python kernel.py", "--jobs", str(jobs), "--executor", executor,
                        "--json", "--ledger", str(ledger)], capture_output=True, text=True, timeout=1800,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"bisect --executor {executor} --jobs {jobs} failed ({p.returncode}): "
                         f"{(p.stderr or p.stdout)[-2000:]}")
    doc = json.loads(p.stdout)
    return {"wall": wall, "search": doc["wall_s"], "rounds": doc["rounds"], "runs": doc["runs"],
            "first_bad": doc["first_bad"]["sha"] if doc["first_bad"] else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=128)
    ap.add_argument("--culprit", type=int, default=None, help="index of the first bad commit (default: 5/7 of the way)")
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per run of the subject")
    ap.add_argument("--out", type=Path, default=None)
    ns = ap.parse_args()
    culprit = ns.culprit if ns.culprit is not None else ns.commits * 5 // 7
    ks = [int(k) for k in ns.actors.split(",")]
    lines = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    with tempfile.TemporaryDirectory(prefix="bisectk-ray-bench-") as tmp:
        repo = Path(tmp) / "repo"
        shas = make_history(repo, ns.commits, culprit, ns.seconds)
        import ray
        say(f"# bisectk ray_bench: bisect --jobs K over {ns.commits} commits (culprit #{culprit}), subject "
            f"{ns.seconds:g} s per run")
        say(f"# machine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"ray {ray.__version__}; ray = a local instance started by each command")
        say("| actors (K) | local wall s | ray wall s | ray/local wall | local search s | ray search s | "
            "ray/local search | rounds local/ray | runs local/ray |")
        say("|---:|---:|---:|---:|---:|---:|---:|---|---|")
        ok = True
        for k in ks:
            res = {ex: bisect(repo, shas, ex, k, Path(tmp) / f"{ex}-{k}.db") for ex in ("local", "ray")}
            for ex, r in res.items():
                if r["first_bad"] != shas[culprit]:
                    ok = False
                    say(f"WRONG: {ex} K={k} answered {r['first_bad']}")
            lo, ra = res["local"], res["ray"]
            say(f"| {k} | {lo['wall']:.1f} | {ra['wall']:.1f} | {ra['wall'] / lo['wall']:.2f} | {lo['search']:.1f} | "
                f"{ra['search']:.1f} | {ra['search'] / lo['search']:.2f} | {lo['rounds']}/{ra['rounds']} | "
                f"{lo['runs']}/{ra['runs']} |")
        say(f"# every answer the planted culprit: {'yes' if ok else 'NO'}")
    if ns.out:
        ns.out.write_text("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
