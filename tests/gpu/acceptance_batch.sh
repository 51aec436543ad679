#!/usr/bin/env bash
# GPU acceptance runs of issues 10 and 13 in one device call (see docs/gpu.md for what they showed).
#   bash tests/gpu/acceptance_batch.sh OUTDIR      (after the DSL prefix of ../shared/gpu/README.md)
# - issue 10: the 6-vs-10-warp attention pair whose bad output is garbage, among kv_len/q_len/bh/
#   kv_stages differences: `ablate --warm` and cold must isolate consumer_wgs alone;
# - issue 13: `ablate --warm` of every hang pair (goal <= 20 s each), and `diff --warm` on the
#   10-hunk fmha_wgmma tree pair with its hang culprit against the same pair with a wrong-result
#   culprit instead (goal: hang wall <= 2 x wrong wall), the spec's fixed timeout removed so the
#   watchdog follows progress.
set -u
OUTDIR=${1:?usage: acceptance_batch.sh OUTDIR}
W=$(mktemp -d)
mkdir -p "$OUTDIR" "$W/ledgers"
export PYTHONUNBUFFERED=1
B="python3 -m bisectk"
run() {  # name cmd...: JSON and stderr into $W, one summary line
    local name=$1; shift
    local t0; t0=$(date +%s.%N)
    timeout "${TMO:-240}" "$@" > "$W/$name.json" 2> "$W/$name.err"
    local rc=$?
    echo "$name rc=$rc wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee -a "$OUTDIR/summary.txt"
}
nvidia-smi -L > "$OUTDIR/summary.txt"
run garbage-warm $B ablate variants/gpu/gpu-attn-garbage-warps.toml --warm --json --ledger "$W/ledgers/g1.db"
run garbage-cold $B ablate variants/gpu/gpu-attn-garbage-warps.toml --json --ledger "$W/ledgers/g2.db"
for s in gpu-ws-hang-arrive gpu-ws-hang-nbar gpu-ws-hang-phase gpu-ws-hang-txbytes gpu-fmha-hang-regs \
         gpu-fmha-hang-orderarrive; do
    run "hang-$s" $B ablate "variants/gpu/$s.toml" --warm --json --ledger "$W/ledgers/$s.db"
done
sed '/^timeout = /d' variants/gpu/fmha-diff/spec.toml > "$W/fmha-diff.toml"
cp -r variants/gpu/fmha-diff/bad "$W/bad-wrong"
python3 - "$W/bad-wrong/fmha_wgmma.py" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("a.consumer_regs = 256", "a.consumer_regs = 240 if a.consumer_wgs == 2 else 256")
s = s.replace('p.add_argument("--corr-sign", default="old-new"', 'p.add_argument("--corr-sign", default="new-old"')
open(p, "w").write(s)
PY
run diff-hang $B diff variants/gpu/fmha-diff/good variants/gpu/fmha-diff/bad "$W/fmha-diff.toml" --warm --no-lines \
    --json --ledger "$W/ledgers/d1.db"
run diff-wrong $B diff variants/gpu/fmha-diff/good "$W/bad-wrong" "$W/fmha-diff.toml" --warm --no-lines \
    --json --ledger "$W/ledgers/d2.db"
python3 - "$W" >> "$OUTDIR/summary.txt" <<'PY'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        d = json.loads(p.read_text())
    except Exception as exc:
        print(p.stem, "no JSON:", exc); continue
    e = d.get("endpoints") or {}
    what = d.get("culprits") or [h.get("where") or h.get("id") for h in d.get("culprit_hunks", [])]
    print(p.stem, "culprits", what, "runs", d.get("runs"), "wall_s", d.get("wall_s"), "interaction",
          d.get("interaction"), "target", e.get("target"), "problem", e.get("problem"))
    for r in (e.get("bad") or {}).get("runs", [])[:2]:
        print("   bad run:", r.get("signature", "")[:200])
PY
tar czf "$OUTDIR/results.tgz" -C "$W" --exclude ledgers .
