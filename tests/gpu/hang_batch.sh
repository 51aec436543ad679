#!/usr/bin/env bash
# issue 13 on the GPU: `ablate --warm` of every hang pair, timed as the user sees it (the whole command).
#   bash tests/gpu/hang_batch.sh OUTDIR      (after the DSL prefix of ../shared/gpu/README.md)
set -u
OUTDIR=${1:?usage: hang_batch.sh OUTDIR}
W=$(mktemp -d)
mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1
for s in gpu-ws-hang-arrive gpu-ws-hang-nbar gpu-ws-hang-phase gpu-ws-hang-txbytes gpu-fmha-hang-regs \
         gpu-fmha-hang-orderarrive gpu-fmha-interact-barid; do
    t0=$(date +%s.%N)
    timeout 200 python3 -m bisectk ablate "variants/gpu/$s.toml" --warm --json --ledger "$W/$s.db" > "$W/$s.json" 2> "$W/$s.err"
    rc=$?
    python3 - "$W/$s.json" "$s" "$rc" "$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" >> "$OUTDIR/summary.txt" <<'PY'
import json, sys
path, name, rc, wall = sys.argv[1:]
try:
    d = json.loads(open(path).read())
except Exception as exc:
    print(name, "rc", rc, "command wall", wall, "no JSON", exc); raise SystemExit
hangs = [a["time_s"] for a in d.get("attempts", []) if a["outcome"] == "fail"]
print(name, "rc", rc, "command wall", wall, "s; record wall", d.get("wall_s"), "s; culprits", d.get("culprits"),
      "interaction", d.get("interaction"), "runs", d.get("runs"), "; failing hybrids' times", hangs)
PY
done
cat "$OUTDIR/summary.txt"
