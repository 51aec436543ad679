"""Hot-spare bench (issue 13): how long a warm pool needs to serve again after workers are killed
(hangs), with 0, 1 or 2 hot spares per slot. Workers preload torch (CPU here), as GPU workers
preload torch and cutlass; each round waits until the pool is full, runs a short script, then
`--hangs` scripts that hang (each killed at 0.5 s) one right after the other, then the short script
again, and times that last run (the recovery) from the moment the last hang was called. One more
round first, untimed, brings up what the first hang starts (with no spare, the template).

With --fork both, each cell is measured with workers started fresh (each imports torch) and with
workers forked from a template that imported it once (run/template.py).

Usage: python bench/spare_bench.py [--rounds 5] [--preload torch] [--hangs 1,2] [--fork off,on]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from bisectk.run.executor import run_command  # noqa: E402
from bisectk.run.pool import WorkerPool  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--preload", default="torch")
    ap.add_argument("--hangs", default="1,2", help="hangs in a row per round, comma-separated")
    ap.add_argument("--spares", default="0,1,2", help="spare counts to compare, comma-separated")
    ap.add_argument("--fork", default="on", help="off, on or off,on: workers fresh or forked from a template")
    ap.add_argument("--out", default=str(HERE / "results" / "spare_bench.txt"))
    args = ap.parse_args()
    preload = tuple(p for p in args.preload.split(",") if p)
    out = [f"# bench/spare_bench.py --rounds {args.rounds} --preload {args.preload} --hangs {args.hangs} "
           f"--spares {args.spares} --fork {args.fork}  (2-core dev machine)"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "ok.py").write_text("print('ok')\n")
        (tmp / "hang.py").write_text("import time\nwhile True: time.sleep(1)\n")
        for hangs in (int(h) for h in args.hangs.split(",")):
            for spares, fork in ((int(k), f == "on") for k in args.spares.split(",") for f in args.fork.split(",")):
                with WorkerPool(gpus=None, preload=preload, spares=spares, ready_timeout=300, fork=fork) as pool:
                    pool.start()
                    recover = []
                    # round 0 is not timed: the pool's first worker starts fresh (pool.py), so with
                    # no spare the template (fork on) starts only when the first hang's worker is
                    # replaced; from then on the pool is full as every later round finds it
                    for r in range(args.rounds + 1):
                        deadline = time.monotonic() + 300   # a fair start: worker and spares warm
                        while (pool.slots[0].worker is None or len(pool.slots[0].spares) < spares) \
                                and time.monotonic() < deadline:
                            time.sleep(0.05)
                        run_command(pool, [sys.executable, "ok.py"], cwd=tmp, timeout=300)
                        for _ in range(hangs):
                            run_command(pool, [sys.executable, "hang.py"], cwd=tmp, timeout=0.5)
                        t = time.monotonic()
                        raw = run_command(pool, [sys.executable, "ok.py"], cwd=tmp, timeout=300)
                        assert raw.exit_code == 0
                        if r:
                            recover.append(time.monotonic() - t)
                    out.append(f"hangs in a row={hangs} spares={spares} {'forked' if fork else 'fresh '}: next run done {statistics.mean(recover):.2f} s "
                               f"(median {statistics.median(recover):.2f}, max {max(recover):.2f}) after the last "
                               f"killed worker; worker starts {pool.stats['worker_starts']}, "
                               f"spare promotions {pool.stats['spare_promotions']}")
                    print(out[-1], flush=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
