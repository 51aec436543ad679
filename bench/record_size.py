"""How big an `ablate --strategy ofat` result record is in the ledger, before and after attempts
were kept as their complement when they apply most differences (engine/records.py stored_form).

A synthetic record of the ofat search's own shape at N factors: N attempts flipping one factor onto
good (`ofat-add`), N reverting one from bad (`ofat-remove`, applying the other N - 1), and the
confirmation; the same AttemptRecord fields a real command writes. Prints the stored JSON's bytes
in the old form (every attempt's `applied` written out) and the new, and checks that the record
reads back to the same attempts.

    python bench/record_size.py [N ...]          (default: 256 1024)

Measured 2026-11-29 (a loaded 2-core sandbox; the sizes do not depend on the machine), names
`factor_00000`..:
      256 factors: record  1.176 MB ->  0.137 MB (attempts 1.161 -> 0.123 MB)
    1,024 factors: record 17.284 MB ->  0.547 MB (attempts 17.228 -> 0.491 MB)
    4,096 factors: record 270.5 MB  ->  2.187 MB
Reading the record back (`bisectk report`): 1,024 factors 5.16 s -> 0.37 s, most of it the shape
check, which looked at each of the n^2 names one call at a time and asked typing for each
attempt's type hints (now one pass over a tuple of names, and the hints once a class); an old-form
record at 1,024 factors now reads in 0.48 s.
"""

import json
import sys
import time

from bisectk.engine.records import AblationRecord, AttemptRecord, SubjectRecord, load_record, stored_form
from bisectk.report.render import stored


def ofat_record(n: int) -> AblationRecord:
    names = [f"factor_{i:05d}" for i in range(n)]
    attempts, k = [], 0
    for phase, sets in (("ofat-add", [(x,) for x in names]),
                        ("ofat-remove", [tuple(y for y in names if y != x) for x in names])):
        for applied in sets:
            k += 1
            attempts.append(AttemptRecord(k, phase, applied, "hybrid", "pass", "PASS", None, 1, 0.05))
    attempts.append(AttemptRecord(k + 1, "ofat-confirm", (names[0],), "hybrid", "fail", "FAIL wrong", "wrong result", 1, 0.05))
    subject = SubjectRecord("wide", "spec.toml", ("python", "s.py"), {x: 0 for x in names}, {x: 1 for x in names}, tuple(names))
    return AblationRecord("ablate", None, True, True, False, 2 * n + 1, 2 * n + 1, 1.0, subject=subject,
                          strategy="ofat", culprits=(names[0],), attempts=tuple(attempts))


def main(sizes: list[int]) -> None:
    for n in sizes:
        rec = ofat_record(n)
        doc = stored(rec)
        old = json.dumps(doc, default=str)
        t0 = time.perf_counter()
        new = json.dumps(stored_form(doc), default=str)
        t1 = time.perf_counter()
        back = load_record(json.loads(new))
        t2 = time.perf_counter()
        assert back.attempts == rec.attempts, "the record does not read back to the same attempts"
        att_old = len(json.dumps(doc["attempts"]))
        att_new = len(json.dumps(stored_form(doc)["attempts"]))
        print(f"{n:6d} factors: record {len(old) / 1e6:7.3f} MB -> {len(new) / 1e6:7.3f} MB; attempts "
              f"{att_old / 1e6:7.3f} MB -> {att_new / 1e6:7.3f} MB; stored_form {1e3 * (t1 - t0):.1f} ms, "
              f"read back {1e3 * (t2 - t1):.1f} ms")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [256, 1024])
