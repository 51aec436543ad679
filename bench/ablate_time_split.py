"""Where an ablation's wall went, from its `--json-out` file: the command's wall against the
runs' own seconds, the endpoint runs, and each search attempt (phase, outcome, seconds, from the
ledger or not). With bench/ledger_timeline.py it splits a slow command into runs and waits.

    python bench/ablate_time_split.py RESULT.json
"""

import json, sys
d = json.load(open(sys.argv[1]))
att = d.get("attempts") or []
print(sys.argv[1].split("/")[-1], "wall", d["wall_s"], "run_s", d["run_s"], "runs", d["runs"], "culprits", d.get("culprits"))
ends = [(k, r["outcome"], round(r["duration_s"], 2)) for k in ("good", "bad") for r in d["endpoints"][k]["runs"]]
print(" endpoints", ends)
print(" attempts", [(a["phase"][:5], a["outcome"][0], a["time_s"], a.get("from_ledger")) for a in att])
