#!/usr/bin/env bash
# issue 25 on the GPU: `ablate --warm` of hang pairs with hang snapshots (cuda-gdb) or without, timed as
# the user sees it (the whole command). After the DSL prefix of ../shared/gpu/README.md:
#   bash tests/gpu/snapshot_batch.sh OUTDIR SNAPSHOTS SPEC...     (SNAPSHOTS: --snapshots N; 0 = off)
set -u
OUTDIR=${1:?usage: snapshot_batch.sh OUTDIR SNAPSHOTS SPEC...}; N=${2:?}; shift 2
W=$(mktemp -d)
mkdir -p "$OUTDIR"
export PYTHONUNBUFFERED=1
for s in "$@"; do
    t0=$(date +%s.%N)
    timeout 280 python3 -m bisectk ablate "variants/gpu/$s.toml" --warm --snapshots "$N" --json --ledger "$W/$s.db" \
        > "$OUTDIR/$s.json" 2> "$OUTDIR/$s.err"
    rc=$?
    wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
    python3 - "$OUTDIR/$s.json" "$s" "$rc" "$wall" "$N" >> "$OUTDIR/summary.txt" <<'PY'
import json, sys
path, name, rc, wall, n = sys.argv[1:]
try:
    d = json.loads(open(path).read())
except Exception as exc:
    print(name, "rc", rc, "wall", wall, "no JSON", exc); raise SystemExit
h = d.get("hangs") or {}
def read(e):
    if not e or not e.get("snapshot"):
        return "none"
    s = e["snapshot"]
    gpu = [g for g in s["groups"] if g.get("device")]
    return (f"{s.get('took_s')} s by {'+'.join(s.get('tools', []))}: "
            + "; ".join(f"{g['role']} at {g['place']} {g['instruction']} ({g['wait']})" for g in gpu[:4])
            + (f" notes {s.get('notes')}" if s.get("notes") else ""))
print(f"{name} --snapshots {n}: rc {rc}, command wall {wall} s, record wall {d.get('wall_s')} s, culprits {d.get('culprits')}, "
      f"runs {d.get('runs')}, same {h.get('same')}\n  bad: {read(h.get('bad'))}\n  culprit: {read(h.get('culprit'))}")
PY
done
cat "$OUTDIR/summary.txt"
