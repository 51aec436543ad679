#!/usr/bin/env bash
# One device call for kernels/cutedsl/fmha_wgmma.py on a Hopper GPU: probe (many configurations in
# one process, SDPA timing), then `bisectk ablate --warm` on the gpu-fmha-* variant pairs, then
# `bisectk diff` on variants/gpu/fmha-diff. The later phases run only when the correct kernel passed.
# Usage (GPU machine, after the DSL prefix of ../shared/gpu/README.md): tests/gpu/fmha_batch.sh OUTDIR
# PHASES (default "probe ablate diff"), ABLATE_BUDGET (s, default 230), DIFF_LIMIT (s, default 200).
out=${1:-fmha-out}
mkdir -p "$out"
phases=${PHASES:-probe ablate diff}
t0=$(date +%s)
stamp() { echo "# $(( $(date +%s) - t0 )) s: $*" | tee -a "$out/batch.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
ok=0
if [[ " $phases " == *" probe "* ]]; then
  stamp probe
  timeout -s KILL 150 python3 tests/gpu/fmha_probe.py --out "$out/probe.jsonl" 2>"$out/probe.stderr" | tee "$out/probe.txt"
  ok=${PIPESTATUS[0]}
  [[ $ok == 0 ]] || { stamp "probe: the correct kernel did not pass (rc=$ok)"; tail -30 "$out/probe.stderr"; }
fi
if [[ $ok == 0 && " $phases " == *" ablate "* ]]; then
  stamp ablate
  python3 bench/gpu_ablate.py --warm --budget "${ABLATE_BUDGET:-230}" --out "$out/ablate.jsonl" \
    ${SPECS:-variants/gpu/gpu-fmha-*.toml} 2>&1 | tee "$out/ablate.txt"
fi
if [[ $ok == 0 && " $phases " == *" diff "* ]]; then
  stamp diff
  export GIT_PYTHON_REFRESH=quiet
  timeout -s KILL "${DIFF_LIMIT:-200}" python3 -m bisectk diff variants/gpu/fmha-diff/good \
    variants/gpu/fmha-diff/bad variants/gpu/fmha-diff/spec.toml --no-lines --json \
    --ledger "$out/diff-ledger.db" --report "$out/diff-report.md" >"$out/diff.json" 2>"$out/diff.stderr"
  echo "diff rc=$?" | tee -a "$out/batch.txt"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('culprit hunks:', [h['file'] + ':' + str(h['bad_lines']) for h in d['culprit_hunks']], 'runs:', d['runs'])" "$out/diff.json" 2>&1 | tee -a "$out/batch.txt"
fi
stamp done
