#!/usr/bin/env bash
# Calibration sweep for the CuTe DSL kernels on a Hopper GPU (one cold process per line).
# Usage (GPU machine, after the DSL prefix of ../shared/gpu/README.md): tests/gpu/explore.sh OUTDIR
out=${1:-explore-out}
mkdir -p "$out"
run() {  # name, args...
  local name=$1; shift
  local t0=$(date +%s%N)
  timeout -s KILL ${T:-20} python3 "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local t1=$(date +%s%N)
  printf '%-28s rc=%-4s wall=%6sms %s\n' "$name" "$rc" "$(( (t1 - t0) / 1000000 ))" \
    "$(grep -o 'BISECTK_RESULT.*' "$out/$name.log" | grep -o '"\(rel_err\|cos\|time_ms\|wall_ms\)": [^,}]*' | tr '\n' ' ')" | tee -a "$out/summary.txt"
}
W=kernels/cutedsl/ws_pipeline.py
A=kernels/cutedsl/attention.py
run ws_good $W
run ws_good_again $W
for s in 1 2 3 4 6 8; do run ws_stages$s $W --stages $s; done
run ws_wgs2 $W --consumer-wgs 2
for w in 0 0 0 100 500 2000; do run ws_relbefore_w$w $W --release before --consumer-work $w; done
run ws_relafter_w2000 $W --consumer-work 2000
run attn_good $A
run attn_good_kv64 $A --kv-len 64
run attn_norescale_kv64 $A --o-rescale 0 --kv-len 64
run attn_norescale_kv512 $A --o-rescale 0
run attn_wgs2 $A --consumer-wgs 2
