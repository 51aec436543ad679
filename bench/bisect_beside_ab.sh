#!/usr/bin/env bash
# `bisect --jobs K` with the bad endpoint's run begun beside the good endpoint's: a 64-commit
# history whose test sleeps RUN_S seconds, this tree and a base tree (a `git archive REV bisectk`
# unpacked in BASE) in turns. Prints wall, runs and the first bad commit per command.
#   bash bench/bisect_beside_ab.sh BASE ROUNDS [JOBS...]     (RUN_S=1 by default)
set -eu
BASE=$(cd "${1:?usage: bisect_beside_ab.sh BASE ROUNDS [JOBS...]}" && pwd); ROUNDS=${2:?}; shift 2
JOBS=${*:-2 4}
HERE=$PWD; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
git init -q "$W/r"
for i in $(seq 1 64); do
  echo "$i" > "$W/r/f"; [ "$i" = 40 ] && touch "$W/r/bug"
  git -C "$W/r" add -A; git -C "$W/r" -c user.name=b -c user.email=b@b commit -qm "c$i"
done
printf '#!/bin/sh\nsleep %s\n! test -f bug\n' "${RUN_S:-1}" > "$W/t.sh"; chmod +x "$W/t.sh"
good=$(git -C "$W/r" rev-list --max-parents=0 HEAD)
for r in $(seq "$ROUNDS"); do
  for side in base new; do
    root=$HERE; [ "$side" = base ] && root=$BASE
    for j in $JOBS; do
      rm -f "$W/l.db"; s=$(date +%s.%N)
      (cd "$W" && PYTHONPATH="$root" python3 -m bisectk bisect --repo r --good "$good" --bad HEAD --run "$W/t.sh" \
          --jobs "$j" --json --ledger "$W/l.db" > "$W/out.json" 2>/dev/null) || true
      e=$(date +%s.%N)
      python3 - "$W/out.json" "$side" "$j" "$s" "$e" <<'PY'
import json, sys
path, side, j, s, e = sys.argv[1:]
d = json.load(open(path))
print(f"{side:4} --jobs {j}: wall {float(e) - float(s):.1f} s, runs {d.get('runs')}, first bad {(d.get('first_bad') or {}).get('sha', '')[:10]}")
PY
    done
  done
done
