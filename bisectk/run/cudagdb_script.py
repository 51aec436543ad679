# Run by cuda-gdb's own Python (`cuda-gdb -p PID --batch -x THIS`), never imported by bisectk.
# It collects the raw text of the commands that show where a hung kernel's warps are, and prints it
# as one JSON line after a marker; bisectk/run/cudagdb.py parses it (so the parsing is tested on
# the CPU, from captured output). Bounded: at most MAX_SMS SMs walked and MAX_PCS distinct PCs read.
import json
import os
import re

import gdb  # noqa: F401  (cuda-gdb's module)

MAX_SMS = int(os.environ.get("BISECTK_CUDAGDB_MAX_SMS", "8"))
MAX_PCS = int(os.environ.get("BISECTK_CUDAGDB_MAX_PCS", "24"))


def run(cmd):
    try:
        return gdb.execute(cmd, to_string=True)
    except Exception as exc:   # gdb.error, and anything else: the text says what failed
        return "ERROR %s: %s\n" % (cmd, exc)


out = {"kernels": run("info cuda kernels"), "blocks": run("info cuda blocks"), "sms": run("info cuda sms"),
       "warps": {}, "pcs": {}}
sms = []
for line in out["sms"].splitlines():
    m = re.match(r"^\s*\*?\s*(\d+)\s+0x[0-9a-f]+", line)
    if m:
        sms.append(int(m.group(1)))
if not sms:   # no SM table: the warps of the SM in focus
    sms = [None]
pcs = {}   # pc -> (sm, warp slot) of the first warp seen there
for sm in sms[:MAX_SMS]:
    text = run("info cuda warps") if sm is None else (run("cuda sm %d" % sm) and run("info cuda warps"))
    out["warps"][str(sm)] = text
    for line in text.splitlines():
        m = re.match(r"^\*?\s*(\d+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s", line)
        if m and m.group(2) not in pcs:
            pcs[m.group(2)] = (sm, int(m.group(1)))
for pc, (sm, warp) in list(pcs.items())[:MAX_PCS]:
    info = {"x": run("x/4i %s" % pc), "before": run("x/4i %s-64" % pc), "line": run("info line *%s" % pc),
            "around": run("disassemble /s %s-96,%s+64" % (pc, pc))}
    # the inlined frames at that PC (a barrier inside a helper maps to the helper's caller there)
    if sm is not None and "ERROR" not in run("cuda sm %d warp %d lane 0" % (sm, warp)):
        info["bt"] = run("bt")
    out["pcs"][pc] = info
print("BISECTK_CUDAGDB_JSON " + json.dumps(out))
