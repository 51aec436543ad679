"""Pure search algorithms over a list of differences and an oracle callable (no processes,
files or git). Factor ablation lives in `ablation` (entry point `ablate`, registry
`STRATEGIES`); ordinal factors in `threshold`; the flakiness rule in `flaky`. History search:
`history` dispatches (`search_dag` over the commit DAG with git's semantics, a chain being one:
`ancestry` (O(N) ancestor sets and sums), `dag`, `dag_bisect`, `dag_bayes`, `posterior`,
`confirm`), all sharing `gateway`.
"""

from bisectk.search.ablation import DEFAULT_STRATEGY, STRATEGIES, ablate, strategy_names
from bisectk.search.flaky import ConfidenceRule
from bisectk.search.result import AblationResult, Effect
from bisectk.search.tester import Attempt, SearchStopped, StopSearch
from bisectk.search.threshold import Threshold, find_threshold

__all__ = [
    "DEFAULT_STRATEGY", "STRATEGIES", "ablate", "strategy_names", "ConfidenceRule",
    "AblationResult", "Effect", "Attempt", "SearchStopped", "StopSearch", "Threshold",
    "find_threshold",
]
