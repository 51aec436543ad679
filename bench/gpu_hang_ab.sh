#!/usr/bin/env bash
# issue 25 on the GPU: `ablate --warm --snapshots 0` of hang pairs, the tree under test and a base
# tree (a `git archive REV bisectk` unpacked in BASE) taken in turns on the same machine, so machine
# and page-cache drift fall on both alike. After the DSL prefix of ../shared/gpu/README.md:
#   bash bench/gpu_hang_ab.sh BASE ROUNDS SPEC...
# BASE may be . (this tree on both sides); BASE_ARGS / NEW_ARGS add options to one side's command,
# e.g. NEW_ARGS="--jobs 4" bash bench/gpu_hang_ab.sh . 1 gpu-ws-hang-phase; SIDES=new runs one side only.
# Prints, per run: command wall, runs, culprits, when the first run started (the worker's preload)
# and the gaps between runs after it (waits for a worker), from the ledger (bench/ledger_timeline.py).
set -u
BASE=${1:?usage: gpu_hang_ab.sh BASE ROUNDS SPEC...}; ROUNDS=${2:?}; shift 2
W=${KEEP:-$(mktemp -d)}   # KEEP=DIR: the ledgers, JSON and pool traces stay there (e.g. under $OUT)
mkdir -p "$W"
HERE=$PWD
for r in $(seq "$ROUNDS"); do
  for s in "$@"; do
    for side in ${SIDES:-base new}; do
      root=$HERE; [ "$side" = base ] && root=$(cd "$BASE" && pwd)
      extra=${NEW_ARGS:-}; [ "$side" = base ] && extra=${BASE_ARGS:-}
      db="$W/$side-$s-$r.db"
      t0=$(date +%s.%N)
      (cd "$root" && BISECTK_POOL_TRACE="$W/$side-$s-$r.trace" PYTHONPATH="$root:${PYTHONPATH:-}" timeout 280 python3 -m bisectk ablate "$HERE/variants/gpu/$s.toml" \
          --warm --snapshots 0 $extra --json-out "$W/$side-$s-$r.json" --ledger "$db" > "$W/$side-$s-$r.txt" 2>&1)
      rc=$?
      wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
      python3 - "$W/$side-$s-$r.json" "$db" "$side" "$s" "$rc" "$wall" "$W/$side-$s-$r.trace" <<'PY'
import json, sys
sys.path.insert(0, "bench")
from ledger_timeline import timeline, waits
path, db, side, name, rc, wall, trace = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as exc:
    print(f"{side:4} {name}: rc {rc}, wall {wall} s, no JSON ({exc})"); raise SystemExit
_, t0, _, runs = timeline(db)
first, gaps = waits(t0, runs)
try:   # the pool's trace (BISECTK_POOL_TRACE): workers forked or fresh, waits for a worker
    events = [json.loads(line) for line in open(trace)]
    ready = [e for e in events if e["event"] == "ready"]
    forked = sum(1 for e in ready if (e.get("preload") or {}).get("forked"))
    waited = [e["waited"] for e in events if e["event"] == "acquired"]
    pool = (f"; workers {forked} forked, {len(ready) - forked} fresh; waits for a worker after the first "
            f"{sum(waited[1:]):.2f} s")
except (OSError, ValueError, KeyError):
    pool = "; no pool trace"
print(f"{side:4} {name}: rc {rc}, command wall {wall} s, runs {d.get('runs')}, culprits {d.get('culprits')}, "
      f"first run at {first:.2f} s, gaps after it {gaps:.2f} s, runs' own {d.get('run_s')} s{pool}")
PY
    done
  done
done
