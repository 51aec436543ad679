"""Leak and sharing benchmark (issue 12): nothing left behind, nothing lost, through the real CLI.

1. Containment. Processes left behind are counted the way a user finds them: every process on the
   machine whose command line carries a marker unique to the scenario.
   - daemon:   `bisectk run --repeat N` of a subject that double-forks a `setsid` daemon and exits 0;
   - child:    the same with a subject that leaves a child in a session of its own and exits 0
               (half the runs) or 3 (the other half: a crash);
   - sigkill:  `bisectk run` of a subject that hangs with children, a `setsid` child, a shell
               background job and a daemon; bisectk is SIGKILLed once the whole tree is up, and what
               is still alive 5 s later is counted (K times).
2. Sharing one ledger.
   - 6 concurrent `bisectk run --repeat 3` of one spec: errors (exit codes other than the verdict's,
     "internal error", tracebacks) and how many subject executions each trial took (3 are needed);
   - 2 concurrent `bisectk ablate --strategy exhaustive` of a 5-factor spec (32 configurations):
     errors, and executions per configuration.

Usage: python bench/leak_bench.py [--runs 100] [--kills 20] [--trials 10] [--ablations 3]
                                  [--code DIR] [--out bench/results/leak_bench.txt]
`--code DIR` runs another checkout's bisectk (e.g. the commit before issue 12) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
SLEEPER = "import time; time.sleep(600)"

DAEMON = f"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", {SLEEPER!r}, sys.argv[1]])
    os._exit(0)
time.sleep(0.02)
"""

CHILD = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, sys.argv[1]], start_new_session=True)
sys.exit(int(sys.argv[2]))
"""

HANG = f"""
import os, subprocess, sys, time
m = sys.argv[1]
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, m])
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, m], start_new_session=True)
subprocess.Popen(["sh", "-c", sys.executable + " -c 'import time; time.sleep(600)' " + m + " & wait"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", {SLEEPER!r}, m])
    os._exit(0)
time.sleep(600)
"""
HANG_TREE_SIZE = 6  # the subject and five descendants carry the marker

LOGGED = """
import json, os, sys, time
with open(os.environ["EXEC_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
time.sleep(float(os.environ.get("SUBJECT_SLEEP", "0.2")))
cfg = dict(zip(sys.argv[1::2], sys.argv[2::2]))
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if cfg["a"] == "1" and cfg["c"] == "1" else 0.0}))
"""


def marked(marker: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(p.info["cmdline"] or []):
                out.append(p)
        except psutil.Error:
            pass
    return out


def kill_marked(marker: str) -> None:
    """Clean up after a leaking bisectk: these are processes this benchmark started."""
    for p in marked(marker):
        try:
            p.kill()
        except psutil.Error:
            pass


class Bench:
    def __init__(self, code: Path, work: Path):
        self.code, self.work = code, work
        self.env = {**os.environ, "PYTHONPATH": str(code), "XDG_CACHE_HOME": str(work / "cache")}

    def bisectk(self, *args, cwd: Path, env: dict | None = None, **kw) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd,
                                env={**self.env, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, **kw)

    def project(self, name: str, command: list[str], good: dict, bad: dict, extra: str = "") -> Path:
        d = self.work / name
        d.mkdir()
        (d / "pyproject.toml").touch()
        table = lambda c: "".join(f"{k} = {json.dumps(v)}\n" for k, v in c.items())  # noqa: E731
        (d / "spec.toml").write_text(f"[subject]\ncommand = {json.dumps(command)}\n{extra}"
                                     f"[good]\n{table(good)}[bad]\n{table(bad)}")
        return d

    # -- containment ---------------------------------------------------------------------
    def repeated(self, name: str, code: str, runs: list[tuple[str, int]]) -> dict:
        """`bisectk run --repeat n` per (config, n); then count what carries the marker."""
        marker = f"leakbench-{name}-{uuid.uuid4().hex[:8]}"
        (self.work / f"{name}.py").write_text(code)
        d = self.project(name, ["python", str(self.work / f"{name}.py"), marker, "{code}"],
                         {"code": 0}, {"code": 3}, extra="timeout = 60\n")
        errors, total, t0 = 0, 0, time.perf_counter()
        for config, n in runs:
            p = self.bisectk("run", "spec.toml", "--config", config, "--repeat", n, cwd=d)
            _, err = p.communicate(timeout=600)
            total += n
            errors += p.returncode not in (0, 1) or "internal error" in err or "Traceback" in err
        time.sleep(0.5)  # a leak shows up whatever its timing: give stragglers time to be seen
        left = len(marked(marker))
        kill_marked(marker)
        return {"runs": total, "left": left, "errors": errors, "wall_s": time.perf_counter() - t0}

    def sigkill(self, kills: int) -> dict:
        (self.work / "hang.py").write_text(HANG)
        results = []
        for i in range(kills):
            marker = f"leakbench-kill-{uuid.uuid4().hex[:8]}"
            d = self.project(f"kill{i}", ["python", str(self.work / "hang.py"), marker], {"x": 1}, {"x": 2},
                             extra="timeout = 300\n")
            p = self.bisectk("run", "spec.toml", "--config", "bad", cwd=d)
            deadline = time.monotonic() + 60
            while len(marked(marker)) < HANG_TREE_SIZE and time.monotonic() < deadline:
                time.sleep(0.05)
            up = len(marked(marker))
            p.send_signal(signal.SIGKILL)
            p.wait()
            t = time.monotonic()
            while marked(marker) and time.monotonic() - t < 5:
                time.sleep(0.02)
            gone_s = time.monotonic() - t
            left = len(marked(marker))
            results.append({"tree": up, "left": left, "gone_s": gone_s if not left else None})
            kill_marked(marker)
        times = sorted(r["gone_s"] for r in results if r["gone_s"] is not None)
        return {"kills": kills, "left": sum(r["left"] for r in results),
                "trials_leaking": sum(1 for r in results if r["left"]),
                "tree_sizes": sorted({r["tree"] for r in results}),
                "median_gone_s": times[len(times) // 2] if times else None, "max_gone_s": times[-1] if times else None}

    # -- sharing a ledger ------------------------------------------------------------------
    def logged_project(self, name: str, factors: str) -> Path:
        (self.work / "logged.py").write_text(LOGGED)
        argv = ["python", str(self.work / "logged.py")] + [x for f in factors for x in (f, "{" + f + "}")]
        d = self.project(name, argv, {f: 0 for f in factors}, {f: 1 for f in factors},
                         extra='timeout = 60\n[oracle]\nmetric = "err"\nmax = 0.5\n')
        return d

    def concurrent_runs(self, trials: int, n: int = 6, repeat: int = 3) -> dict:
        errors, trials_with_errors, executed = 0, 0, []
        for t in range(trials):
            d = self.logged_project(f"runs{t}", "abcde")
            log = d / "exec.log"
            procs = [self.bisectk("run", "spec.toml", "--repeat", repeat, "--ledger", d / "l.db", cwd=d,
                                  env={"EXEC_LOG": str(log)}) for _ in range(n)]
            outs = [p.communicate(timeout=600) for p in procs]
            bad = sum(1 for p, (_, e) in zip(procs, outs)
                      if p.returncode != 1 or "internal error" in e or "Traceback" in e)
            errors += bad
            trials_with_errors += bad > 0
            executed.append(len(log.read_text().splitlines()) if log.exists() else 0)
        return {"trials": trials, "processes": n * trials, "errors": errors, "trials_with_errors": trials_with_errors,
                "executed": executed, "needed_per_trial": repeat}

    def concurrent_ablations(self, trials: int) -> dict:
        errors, per_config, culprits = 0, Counter(), Counter()
        for t in range(trials):
            d = self.logged_project(f"ablate{t}", "abcde")
            log = d / "exec.log"
            procs = [self.bisectk("ablate", "spec.toml", "--strategy", "exhaustive", "--ledger", d / "l.db",
                                  "--json", cwd=d, env={"EXEC_LOG": str(log), "SUBJECT_SLEEP": "0.1"})
                     for _ in range(2)]
            outs = [p.communicate(timeout=900) for p in procs]
            for p, (out, err) in zip(procs, outs):
                if p.returncode != 0 or "internal error" in err or "Traceback" in err:
                    errors += 1
                else:
                    culprits[",".join(json.loads(out)["culprits"])] += 1
            ran = Counter(log.read_text().splitlines()) if log.exists() else Counter()
            per_config.update(ran.values())
        return {"trials": trials, "errors": errors, "configurations_run_k_times": dict(sorted(per_config.items())),
                "culprits": dict(culprits)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--ablations", type=int, default=3)
    ap.add_argument("--code", type=Path, default=ROOT, help="the bisectk checkout to measure")
    ap.add_argument("--label", default="", help="what --code is, for the results file")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    lines = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    rev = subprocess.run(["git", "-C", str(args.code), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or args.label or "?"
    say(f"leak_bench: bisectk at {args.code} ({rev}); {platform.node()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, Linux {platform.release()}")
    half = args.runs // 2
    with tempfile.TemporaryDirectory(prefix="leakbench-") as tmp:
        b = Bench(args.code.resolve(), Path(tmp))
        r = b.repeated("daemon", DAEMON, [("good", args.runs)])
        say(f"daemon (double fork + setsid), {r['runs']} runs: {r['left']} processes left behind, "
            f"{r['errors']} errors ({r['wall_s']:.1f} s)")
        r = b.repeated("child", CHILD, [("good", half), ("bad", args.runs - half)])
        say(f"child left after a clean exit ({half} exit 0, {args.runs - half} exit 3), {r['runs']} runs: "
            f"{r['left']} processes left behind, {r['errors']} errors ({r['wall_s']:.1f} s)")
        r = b.sigkill(args.kills)
        gone = (f"tree gone after median {r['median_gone_s']:.2f} s, max {r['max_gone_s']:.2f} s"
                if r["median_gone_s"] is not None else "the tree never went away")
        say(f"SIGKILL of bisectk mid-hang, {r['kills']} times (tree of {r['tree_sizes']} marked processes): "
            f"{r['left']} processes left 5 s later, in {r['trials_leaking']} of {r['kills']} trials; {gone}")
        r = b.concurrent_runs(args.trials)
        say(f"6 concurrent `bisectk run --repeat {r['needed_per_trial']}` on one ledger, {r['trials']} trials: "
            f"{r['errors']} of {r['processes']} processes failed (in {r['trials_with_errors']} trials); "
            f"subject executions per trial {r['executed']} ({r['needed_per_trial']} needed: the bad "
            f"endpoint's {r['needed_per_trial']} runs, shared by all six)")
        r = b.concurrent_ablations(args.ablations)
        say(f"2 concurrent `bisectk ablate --strategy exhaustive` (5 factors, 32 configurations) on one ledger, "
            f"{r['trials']} trials: {r['errors']} errors; configurations by times run: "
            f"{r['configurations_run_k_times']}; culprits {r['culprits']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
