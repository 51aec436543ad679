"""Driver: softmax-weighted row sums of a fixed input, checked against float64 math.

Prints `BISECTK_RESULT {"max_err": ...}`; exit 0 (the oracle judges max_err).
"""
import json
import math
import random

from kernel import row_softmax_sum

ROWS, COLS = 8, 300    # as in the failing test


def reference(row, vals):
    m = max(row)
    w = [math.exp(x - m) for x in row]
    return sum(wi * v for wi, v in zip(w, vals)) / sum(w)


def main():
    rng = random.Random(7)
    err = 0.0
    for r in range(ROWS):
        row = [rng.uniform(-4, 4) + 0.02 * c for c in range(COLS)]   # later tiles hold the max
        vals = [rng.uniform(-1, 1) for _ in range(COLS)]
        err = max(err, abs(row_softmax_sum(row, vals) - reference(row, vals)))
    print("BISECTK_RESULT " + json.dumps({"max_err": err, "rows": ROWS}))


if __name__ == "__main__":
    main()
