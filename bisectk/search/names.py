"""The factor searches' strategy names, without the searches: the CLI names them in its help and
checks `--strategy` at every start (issue 27), and ablation.py registers one strategy under each
name here and under no other (`register` refuses a name not listed; a test holds the two equal)."""

from __future__ import annotations

DEFAULT_STRATEGY = "adaptive"
NAMES = ("adaptive", "ddmin", "dd", "ofat", "exhaustive")


def strategy_names() -> list[str]:
    """The names, the default first (for the CLI's choices)."""
    return [DEFAULT_STRATEGY] + sorted(n for n in NAMES if n != DEFAULT_STRATEGY)
