"""Pure search algorithms over a list of differences and an oracle callable (no processes,
files or git). Factor ablation lives in `ablation` (entry point `ablate`, registry
`STRATEGIES`); ordinal factors in `threshold`; the flakiness rule in `flaky`. History search:
`history` dispatches (`search_dag` over the commit DAG with git's semantics, a chain being one:
`ancestry` (O(N) ancestor sets and sums), `dag`, `dag_bisect`, `dag_bayes`, `posterior`,
`confirm`), all sharing `gateway`.

The names below are loaded from their modules at first use (PEP 562): importing one submodule
(the history search, the flakiness rule) does not load the factor searches, and the CLI's help
names the strategies from `names` alone (issue 27: every command's start).
"""

from __future__ import annotations

import importlib

from bisectk.search.names import DEFAULT_STRATEGY, strategy_names

_FROM = {
    "STRATEGIES": "ablation", "ablate": "ablation", "first_runs": "ablation", "ConfidenceRule": "flaky", "AblationResult": "result",
    "Effect": "result", "Attempt": "tester", "SearchStopped": "tester", "StopSearch": "tester",
    "Threshold": "threshold", "find_threshold": "threshold",
}

__all__ = ["DEFAULT_STRATEGY", "strategy_names", *_FROM]


def __getattr__(name: str):
    if name in _FROM:
        return getattr(importlib.import_module(f"bisectk.search.{_FROM[name]}"), name)
    raise AttributeError(f"module 'bisectk.search' has no attribute {name!r}")
