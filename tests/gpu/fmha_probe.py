#!/usr/bin/env python3
"""Run many configurations of kernels/cutedsl/fmha_wgmma.py in one process (imports paid once).

For the configurations that finish (correct or wrong results, slower variants, the SDPA timing);
configurations that hang must run in their own process under a watchdog (bisectk, evidence.py).
Prints one line per configuration and writes JSON lines to --out.  Exit 1 when the first
configuration (the correct default kernel) is not within --max-rel-err of the reference.

    python tests/gpu/fmha_probe.py --out probe.jsonl            # the built-in list
    python tests/gpu/fmha_probe.py NAME='--kv-len 128 --corr-sign new-old' ...
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "kernels" / "cutedsl" / "fmha_wgmma.py"
PERF = "--bh 16 --q-len 4096 --kv-len 4096 --iters 20 --sdpa"

CONFIGS = [
    ("good", ""),
    ("wgs1", "--consumer-wgs 1"),
    ("d128", "--head-dim 128"),
    ("d128_st1", "--head-dim 128 --kv-stages 1"),
    ("bn64", "--block-n 64"),
    ("bf16", "--dtype bf16"),
    ("st1", "--kv-stages 1"),
    ("st3", "--kv-stages 3"),
    ("kv128_one_tile", "--kv-len 128"),
    ("kv2048", "--kv-len 2048"),
    ("order0", "--order 0"),
    ("corr_rev_kv128", "--kv-len 128 --corr-sign new-old"),
    ("corr_rev_kv512", "--corr-sign new-old"),
    ("qslot0_wgs1", "--q-slot zero --consumer-wgs 1"),
    ("qslot0_wgs2", "--q-slot zero"),
    ("qkwait1", "--qk-wait 1"),
    ("nofence", "--pv-fence 0"),
    ("pvwait1_d128_st1_a", "--pv-wait 1 --head-dim 128 --kv-stages 1"),
    ("pvwait1_d128_st1_b", "--pv-wait 1 --head-dim 128 --kv-stages 1 --seed 1"),
    ("pvwait1_d128_st1_c", "--pv-wait 1 --head-dim 128 --kv-stages 1 --seed 2"),
    ("pvwait1_d64_st2", "--pv-wait 1"),
    ("pvwait1_d128_st2", "--pv-wait 1 --head-dim 128"),
    ("perf_d64", f"{PERF}"),
    ("perf_d64_st3", f"{PERF} --kv-stages 3"),
    ("perf_d64_wgs1", f"{PERF} --consumer-wgs 1"),
    ("perf_d64_order0", f"{PERF} --order 0"),
    ("perf_d64_qkwait1", f"{PERF} --qk-wait 1"),
    ("perf_d64_nofence", f"{PERF} --pv-fence 0"),
    ("perf_d128", f"{PERF} --head-dim 128"),
    ("perf_d128_bf16", f"{PERF} --head-dim 128 --dtype bf16"),
    ("perf_d64_pvwait1", f"{PERF} --pv-wait 1"),
]


def load():
    spec = importlib.util.spec_from_file_location("fmha_wgmma_probe", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(mod, argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    code, error = 0, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = mod.main(argv)
    except Exception as e:  # a launch failure is an exception, as in `python fmha_wgmma.py`
        code, error = 1, f"{type(e).__name__}: {e}"[:400]
    res = None
    for line in out.getvalue().splitlines():
        if line.startswith("BISECTK_RESULT "):
            res = json.loads(line[len("BISECTK_RESULT "):])
    return {"exit_code": code, "result": res, "error": error,
            "seconds": round(time.perf_counter() - t0, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", help="NAME='ARGS' (default: the built-in list)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--max-rel-err", type=float, default=2e-2)
    args = ap.parse_args()
    configs = [tuple(c.split("=", 1)) for c in args.configs] or CONFIGS
    mod = load()
    sink = open(args.out, "w") if args.out else None
    first_ok = None
    for name, argv in configs:
        rec = {"name": name, "argv": argv, **run(mod, shlex.split(argv))}
        r = rec["result"] or {}
        line = (f"{name:24} rc={rec['exit_code']} {rec['seconds']:6.2f}s rel_err={r.get('rel_err')} "
                f"cos={r.get('cos')} time_ms={r.get('time_ms')}")
        if "sdpa_ms" in r:
            line += f" sdpa_ms={r['sdpa_ms']} tflops={r['tflops']:.1f} sdpa_tflops={r['sdpa_tflops']:.1f}"
        if rec["error"]:
            line += f" error={rec['error']}"
        print(line, flush=True)
        if sink:
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
        if first_ok is None:
            first_ok = rec["exit_code"] == 0 and isinstance(r.get("rel_err"), float) \
                and r["rel_err"] < args.max_rel_err
    return 0 if first_ok else 1


if __name__ == "__main__":
    sys.exit(main())
