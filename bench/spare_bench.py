"""Hot-spare bench (issue 13): how long a warm pool needs to serve again after a worker is killed
(a hang), with and without a hot spare. Workers preload torch (CPU here), as GPU workers preload
torch and cutlass; each round runs a short script, then one that hangs (killed at 0.5 s), then the
short script again, and times that last run (the recovery) from the moment the hang was called.

Usage: python bench/spare_bench.py [--rounds 5] [--preload torch]
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
from bisectk.run.pool import WorkerPool  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--preload", default="torch")
    ap.add_argument("--out", default=str(HERE / "results" / "spare_bench.txt"))
    args = ap.parse_args()
    preload = tuple(p for p in args.preload.split(",") if p)
    out = [f"# bench/spare_bench.py --rounds {args.rounds} --preload {args.preload}  (2-core dev machine)"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "ok.py").write_text("print('ok')\n")
        (tmp / "hang.py").write_text("import time\nwhile True: time.sleep(1)\n")
        for spares in (True, False):
            with WorkerPool(gpus=None, preload=preload, spares=spares, ready_timeout=300) as pool:
                pool.start()
                recover = []
                for _ in range(args.rounds):
                    time.sleep(0.5 if not spares else 0.0)
                    if spares:   # a fair start: the spare is warm (it is started right after the worker)
                        deadline = time.monotonic() + 300
                        while pool.slots[0].spare is None and time.monotonic() < deadline:
                            time.sleep(0.05)
                    pool.run([sys.executable, "ok.py"], cwd=tmp, timeout=300)
                    pool.run([sys.executable, "hang.py"], cwd=tmp, timeout=0.5)
                    t = time.monotonic()
                    raw = pool.run([sys.executable, "ok.py"], cwd=tmp, timeout=300)
                    assert raw.exit_code == 0
                    recover.append(time.monotonic() - t)
                out.append(f"spares={'on ' if spares else 'off'}: next run done {statistics.mean(recover):.2f} s "
                           f"(median {statistics.median(recover):.2f}, max {max(recover):.2f}) after a killed worker; "
                           f"stats {dict((k, v) for k, v in pool.stats.items() if k != 'recovery_s')}")
                print(out[-1], flush=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
