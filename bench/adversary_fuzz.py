"""Adversarial fuzzers for issue 22 (items 8 and 9), through the real CLI, printing one table:
case, figure, goal. Exit status 0 when every goal is met.

Cases
-----
ledger-bitflip   N copies of a real ledger (an ablation's runs, session, events), each with a few
                 seeded bit flips; `bisectk ledger check` and an `ablate` that reads the same ledger
                 must agree: when the ablation calls the ledger damaged (or cannot use it), check
                 must not say ok. Goal: agree N/N, 0 exit 3.
odd-metrics      `bisectk run` of subjects whose BISECTK_RESULT line is hostile: a 5,000-digit
                 integer, deep nesting, +-Infinity, NaN, control characters, binary bytes, a line of
                 1 MB. Goal: 0 exit 3, and every infinity against a bound is FAIL.
odd-env-json     `bisectk env --diff` of N seeded odd captures (deep nesting, huge integers, odd
                 key names, values of every JSON type, control characters). Goal: 0 exit 3.
damaged-records  `bisectk report` of N seeded mutations of a stored result (a field replaced by a
                 value of another JSON type, dropped, or nested). Goal: 0 exit 3.
binary-logs      `bisectk replay` of N seeded files: random bytes, a real log with bytes flipped or
                 lines cut, unbalanced quotes. Goal: 0 exit 3.
odd-repos        a shallow clone whose --good lies beyond the cut (said: shallow, `git fetch
                 --unshallow`, not "swap them"); a history whose subjects, author and file names
                 carry terminal escape sequences and XML-invalid control characters, triaged with
                 --junit (the XML parses; no ESC or C1 byte reaches the terminal). Goal: all hold.
ledger-deleted   the ledger deleted while an ablation runs: its observations are all in the
                 ledger at the end, the command says so. Goal: observations kept, exit as usual.
late-sigint      SIGINT delivered at chosen points after the search has results (the event that
                 triggers it is the point being reached, not a sleep). Goal: 0 exits 130 without
                 a printed result.
two-sets         ablate of variants/cpu/softmax-two-sets.toml: both sets named, fixes shown, no
                 table line whose verdict contradicts its cells. Goal: 2 sets, 0 contradictions.

Usage: python bench/adversary_fuzz.py [--n 40] [--code DIR] [--only CASE ...]
       [--out bench/results/adversary_fuzz.txt]
`--code DIR` runs another checkout's bisectk (e.g. 4eb19c7 extracted with `git archive`) for the
before figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ROOT
ROWS: list[tuple[str, str, str, bool]] = []   # case, figure, goal, met


def env(**extra) -> dict:
    e = dict(os.environ, PYTHONPATH=str(CODE), COLUMNS="120", **extra)
    e.pop("BISECTK_DEBUG", None)
    return e


def cli(*args, cwd=None, timeout=300, **kw) -> subprocess.CompletedProcess:
    """`python -m bisectk ARGS` of the checkout under test (`python -m` puts its working directory
    first on sys.path, so it runs from CODE unless told otherwise)."""
    return subprocess.run([sys.executable, "-m", "bisectk", *map(str, args)], cwd=cwd or CODE, capture_output=True,
                          text=True, errors="replace", timeout=timeout, env=env(), **kw)


def internal(p: subprocess.CompletedProcess) -> bool:
    return p.returncode == 3 or "internal error" in p.stderr or "Traceback" in p.stderr


def row(case: str, figure: str, goal: str, met: bool) -> None:
    ROWS.append((case, figure, goal, met))
    print(f"  {case}: {figure} (goal {goal}) {'ok' if met else 'NOT MET'}", flush=True)


# -- a small subject ----------------------------------------------------------------------------

SUBJECT = '''
import json, sys
args = dict(a.split("=", 1) for a in sys.argv[1:])
bad = args["mode"] == "x" and args["size"] == "2"
print("BISECTK_RESULT " + json.dumps({"err": 1.0 if bad else 0.0}))
'''


def small_spec(d: Path) -> Path:
    (d / "pyproject.toml").touch()
    (d / "subject.py").write_text(SUBJECT)
    spec = d / "spec.toml"
    spec.write_text('name = "small"\n[subject]\ncommand = ["python", "subject.py", "mode={mode}", "size={size}", '
                    '"seed={seed}", "tile={tile}"]\n[oracle]\nmetric = "err"\nmax = 0.5\n'
                    '[good]\nmode = "o"\nsize = 1\nseed = 0\ntile = 8\n[bad]\nmode = "x"\nsize = 2\nseed = 1\ntile = 16\n')
    return spec


# -- ledger-bitflip -------------------------------------------------------------------------------

def flip_bits(src: Path, dest: Path, rng: random.Random, bits: int) -> None:
    data = bytearray(src.read_bytes())
    for _ in range(bits):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    dest.write_bytes(bytes(data))


def record_spans(path: Path) -> list[tuple[int, int]]:
    """Where the stored JSON texts (runs, sessions, events) lie in the file: SQLite checks its
    pages, not what is inside a record, so a flip there is the damage only decoding finds."""
    data = path.read_bytes()
    db = sqlite3.connect(path)
    texts = [r[0] for r in db.execute("SELECT run_json FROM runs UNION ALL SELECT args_json FROM sessions "
                                      "UNION ALL SELECT result_json FROM sessions WHERE result_json IS NOT NULL "
                                      "UNION ALL SELECT data_json FROM events")]
    db.close()
    spans = []
    for t in texts:
        raw = t.encode()
        at = data.find(raw)
        if at >= 0:
            spans.append((at, at + len(raw)))
    return spans


def flip_in_records(src: Path, dest: Path, rng: random.Random, spans: list[tuple[int, int]]) -> None:
    data = bytearray(src.read_bytes())
    lo, hi = rng.choice(spans)
    i = rng.randrange(lo, hi)
    data[i] ^= 1 << rng.randrange(8)
    dest.write_bytes(bytes(data))


def ledger_bitflip(work: Path, n: int) -> None:
    spec = small_spec(work)
    base = work / "base.db"
    p = cli("ablate", spec, "--ledger", base)
    assert p.returncode == 0, p.stderr
    cli("ablate", spec, "--ledger", base, "--exhaustive")   # more runs, events and sessions
    spans = record_spans(base)
    agree = exit3 = check_ok_ablate_rejects = flips_seen = 0
    for seed in range(n):
        rng = random.Random(seed)
        target = work / f"flip{seed}.db"
        if seed % 2:   # half anywhere in the file, half inside a stored record
            flip_bits(base, target, rng, bits=rng.choice([1, 4, 16, 64]))
        else:
            flip_in_records(base, target, rng, spans)
        chk = cli("ledger", "check", target)
        ab = cli("ablate", spec, "--ledger", target, "--exhaustive", timeout=120)
        rep = cli("report", target)
        exit3 += internal(chk) + internal(ab) + internal(rep)
        for what, p in (("check", chk), ("ablate", ab), ("report", rep)):
            if internal(p):
                print(f"    seed {seed}: {what} exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}", flush=True)
        rejects = (ab.returncode != 0 or "bisectk: ledger" in ab.stderr
                   or rep.returncode != 0 and "damaged" in rep.stderr)
        flips_seen += chk.returncode != 0 or rejects
        if rejects and chk.returncode == 0:
            check_ok_ablate_rejects += 1
            print(f"    seed {seed}: ablate {ab.returncode} {ab.stderr.strip().splitlines()[-1:]}; check ok", flush=True)
        else:
            agree += 1
    row("ledger-bitflip", f"ledger check agrees with ablate/report in {agree}/{n} ({check_ok_ablate_rejects} 'ok' "
                          f"that they reject; {flips_seen} flipped ledgers noticed by either); exit 3: {exit3}",
        f"{n}/{n}, 0 exit 3", agree == n and exit3 == 0)


# -- main ---------------------------------------------------------------------------------------------

CASES = {"ledger-bitflip": ledger_bitflip}


def main(argv: list[str] | None = None) -> int:
    global CODE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="seeded cases per fuzzer")
    ap.add_argument("--code", type=Path, default=ROOT, help="the bisectk checkout to run")
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="run only these cases")
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    CODE = args.code.resolve()
    start = time.monotonic()
    for name, fn in CASES.items():
        if args.only and name not in args.only:
            continue
        print(f"== {name}", flush=True)
        with tempfile.TemporaryDirectory(prefix=f"bisectk-fuzz-{name}-") as d:
            fn(Path(d), args.n)
    lines = ["| case | figure | goal | met |", "|---|---|---|---|"]
    lines += [f"| {c} | {f} | {g} | {'yes' if m else 'NO'} |" for c, f, g, m in ROWS]
    lines.append(f"\ncode: {CODE}; n = {args.n}; {time.monotonic() - start:.0f} s; python {sys.version.split()[0]}")
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
    return 0 if all(m for *_, m in ROWS) else 1


if __name__ == "__main__":
    sys.exit(main())
