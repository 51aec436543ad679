#!/usr/bin/env bash
# issue 14 on the GPU: `ablate --executor ray --warm` on variants/gpu pairs, one actor per GPU.
#   bash tests/gpu/ray_batch.sh OUTDIR PAIR...   (after the DSL prefix of ../shared/gpu/README.md,
#                                                 with ray==2.60.0 importable)
# A Ray head is started once (`ray start --head`, token auth, as a user's cluster would be) and every
# command joins it with --ray-address; the first pair also runs with a local instance of its own
# (no --ray-address: what a user gets by default). One line per command in OUTDIR/summary.txt.
set -u
OUTDIR=${1:?usage: ray_batch.sh OUTDIR PAIR...}; shift
W=$(mktemp -d)
mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1 RAY_USAGE_STATS_ENABLED=0
PORT=6391
nvidia-smi -L >> "$OUTDIR/summary.txt"
t0=$(date +%s.%N)
python3 -m ray.scripts.scripts start --head --port=$PORT --include-dashboard=false --disable-usage-stats \
    > "$W/ray-head.log" 2>&1 || { echo "ray start failed"; tail -20 "$W/ray-head.log"; }
echo "ray head started in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a "$OUTDIR/summary.txt"

summarise() {  # json name rc wall
    python3 - "$@" >> "$OUTDIR/summary.txt" <<'PY'
import json, sys
path, name, rc, wall = sys.argv[1:]
try:
    d = json.loads(open(path).read())
except Exception as exc:
    print(name, "rc", rc, "command wall", wall, "no JSON", exc); raise SystemExit
e = d.get("endpoints") or {}
print(name, "rc", rc, "command wall", wall, "s; record wall", d.get("wall_s"), "s; culprits", d.get("culprits"),
      "interaction", d.get("interaction"), "runs", d.get("runs"), "target", e.get("target"),
      "problem", e.get("problem"))
PY
}
first=1
for s in "$@"; do
    if [ $first = 1 ]; then
        first=0
        t1=$(date +%s.%N)
        timeout 240 python3 -m bisectk ablate "variants/gpu/$s.toml" --executor ray --warm --json \
            --ledger "$W/$s-local.db" > "$W/$s-localray.json" 2> "$W/$s-localray.err"
        rc=$?
        summarise "$W/$s-localray.json" "$s(own local Ray instance)" $rc "$(python3 -c "print(round($(date +%s.%N) - $t1, 1))")"
    fi
    t1=$(date +%s.%N)
    RAY_AUTH_MODE=token timeout 240 python3 -m bisectk ablate "variants/gpu/$s.toml" --executor ray \
        --ray-address 127.0.0.1:$PORT --warm --json --ledger "$W/$s.db" > "$W/$s.json" 2> "$W/$s.err"
    rc=$?
    summarise "$W/$s.json" "$s" $rc "$(python3 -c "print(round($(date +%s.%N) - $t1, 1))")"
    cp "$W/$s.json" "$W/$s.err" "$OUTDIR/" 2>/dev/null
done
python3 -m ray.scripts.scripts stop --force > /dev/null 2>&1
cp "$W"/*localray* "$OUTDIR/" 2>/dev/null
tail -5 "$W/ray-head.log" > "$OUTDIR/ray-head-tail.log"
cat "$OUTDIR/summary.txt"
