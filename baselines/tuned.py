"""Each adaptive rule's tunables per trace preset, chosen on validation requests (the highest mean
throughput over 8 episodes × 100 rounds of the preset's validation requests, seeds 260000 …, the same
episodes for every setting): written by ``python -m experiments traces-tune --out docs/figures``, with
every setting's figures in ``docs/figures/traces_tuning.csv``. A rule given its tunable explicitly
uses that; on a source not listed here it uses its class default."""

from __future__ import annotations

#: trace preset → rule → its tuned keyword arguments
TRACE_TUNED: dict[str, dict[str, dict[str, float]]] = {
    "gsm8k-eagle": {
        "fixed": {"gamma": 3},
        "hf-budget": {"budget": 3.0},
        "last-outcome": {"budget": 3.0},
        "ucb-lengths": {"exploration": 0.05},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 16.0},
    },
    "gsm8k-ngram": {
        "fixed": {"gamma": 0},
        "hf-budget": {"budget": 1.0},
        "last-outcome": {"budget": 1.0},
        "ucb-lengths": {"exploration": 0.5},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 4.0},
    },
    "sharegpt-eagle": {
        "fixed": {"gamma": 3},
        "hf-budget": {"budget": 4.0},
        "last-outcome": {"budget": 3.0},
        "ucb-lengths": {"exploration": 0.2},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 4.0},
    },
    "sharegpt-ngram": {
        "fixed": {"gamma": 0},
        "hf-budget": {"budget": 1.0},
        "last-outcome": {"budget": 1.0},
        "ucb-lengths": {"exploration": 2.0},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 1.0},
    },
    "cnn-eagle": {
        "fixed": {"gamma": 3},
        "hf-budget": {"budget": 4.0},
        "last-outcome": {"budget": 3.0},
        "ucb-lengths": {"exploration": 0.05},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 1.0},
    },
    "cnn-ngram": {
        "fixed": {"gamma": 0},
        "hf-budget": {"budget": 1.0},
        "last-outcome": {"budget": 1.0},
        "ucb-lengths": {"exploration": 2.0},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 16.0},
    },
    "instructcoder-eagle": {
        "fixed": {"gamma": 4},
        "hf-budget": {"budget": 4.0},
        "last-outcome": {"budget": 4.0},
        "ucb-lengths": {"exploration": 0.2},
        "ucb-budget": {"exploration": 0.05},
        "km-greedy": {"prior": 16.0},
    },
    "instructcoder-ngram": {
        "fixed": {"gamma": 3},
        "hf-budget": {"budget": 4.0},
        "last-outcome": {"budget": 4.0},
        "ucb-lengths": {"exploration": 2.0},
        "ucb-budget": {"exploration": 2.0},
        "km-greedy": {"prior": 4.0},
    },
}


def tuned(source: str | None, rule: str) -> dict[str, float]:
    """The tuned keyword arguments of ``rule`` on trace ``source`` ({} when none were tuned)."""
    return dict(TRACE_TUNED.get(source or "", {}).get(rule, {}))


__all__ = ["TRACE_TUNED", "tuned"]
