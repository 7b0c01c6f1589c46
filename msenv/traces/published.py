"""The published figures the presets are calibrated to, one entry per data set and drafter.

Source: SpecDecode-Bench/simulator's files ``data/llama3.1-8B/combined_{gsm8k,sharegpt,cnn,
instructcoder}.jsonl`` (Llama-3.1-8B target; EAGLE and n-gram drafters), the data of
"Speculative Decoding: Performance or Illusion?" (arXiv 2601.11580). Measured from those files
with this package's statistics (each request decoded from its start at a fixed γ, rounds pooled
over requests); the requests at the 8,192-token generation limit (sharegpt, instructcoder: 3–5
per set, likely repetition loops) left out. Keys are those of :func:`~msenv.traces.stats.measure`.
"""

from __future__ import annotations

from .stats import N_DEPTHS, ROUND_STATS, key

#: data set → (length median, length p90) in tokens (the same requests for both drafters)
LENGTHS = {"gsm8k": (160, 235), "sharegpt": (574, 1217), "cnn": (334, 453), "instructcoder": (144, 350)}

# name: (requests, α_0 … α_5, cap, share at cap, per-request α_0 p10 / median / p90,
#        {γ: (tokens per round, i.i.d. prediction at α_0, P(nothing accepted), after full, after rejected, lag-1)})
_ROWS = {
    "gsm8k-eagle": (300, (0.72, 0.67, 0.65, 0.65, 0.65, 0.67), 16, 0.000, (0.65, 0.71, 0.78),
                    {2: (2.12, 2.23, 0.32, 0.74, 0.65, 0.10), 4: (2.54, 2.86, 0.34, 0.73, 0.66, 0.08),
                     8: (2.77, 3.34, 0.34, 0.80, 0.67, 0.07)}),
    "gsm8k-ngram": (300, (0.16, 0.61, 0.65, 0.68, 0.70, 0.70), 21, 0.000, (0.07, 0.14, 0.24),
                    {2: (1.15, 1.18, 0.91, 0.45, 0.07, 0.28), 4: (1.17, 1.19, 0.92, 0.52, 0.07, 0.18),
                     8: (1.18, 1.19, 0.93, 0.54, 0.07, 0.06)}),
    "sharegpt-eagle": (307, (0.70, 0.68, 0.69, 0.72, 0.75, 0.78), 20, 0.000, (0.56, 0.68, 0.79),
                       {2: (2.07, 2.19, 0.35, 0.75, 0.58, 0.22), 4: (2.46, 2.78, 0.38, 0.77, 0.59, 0.23),
                        8: (2.71, 3.20, 0.39, 0.83, 0.60, 0.23)}),
    "sharegpt-ngram": (306, (0.27, 0.80, 0.84, 0.87, 0.89, 0.90), 21, 0.056, (0.03, 0.19, 0.46),
                       {2: (1.25, 1.34, 0.86, 0.72, 0.07, 0.59), 4: (1.31, 1.37, 0.89, 0.77, 0.07, 0.54),
                        8: (1.35, 1.37, 0.91, 0.84, 0.07, 0.47)}),
    "cnn-eagle": (300, (0.69, 0.67, 0.66, 0.68, 0.71, 0.74), 18, 0.000, (0.60, 0.69, 0.76),
                  {2: (2.08, 2.17, 0.34, 0.72, 0.62, 0.13), 4: (2.48, 2.74, 0.36, 0.74, 0.62, 0.14),
                   8: (2.72, 3.14, 0.37, 0.78, 0.63, 0.13)}),
    "cnn-ngram": (300, (0.30, 0.77, 0.80, 0.81, 0.82, 0.83), 21, 0.014, (0.16, 0.28, 0.44),
                  {2: (1.29, 1.39, 0.83, 0.64, 0.10, 0.45), 4: (1.36, 1.42, 0.87, 0.67, 0.10, 0.34),
                   8: (1.40, 1.43, 0.89, 0.71, 0.10, 0.21)}),
    "instructcoder-eagle": (496, (0.77, 0.77, 0.76, 0.78, 0.80, 0.81), 18, 0.000, (0.68, 0.79, 0.88),
                            {2: (2.28, 2.37, 0.27, 0.80, 0.66, 0.19), 4: (2.90, 3.20, 0.29, 0.83, 0.67, 0.23),
                             8: (3.37, 3.99, 0.32, 0.87, 0.68, 0.25)}),
    "instructcoder-ngram": (495, (0.54, 0.92, 0.93, 0.94, 0.94, 0.95), 21, 0.231, (0.29, 0.56, 0.82),
                            {2: (1.61, 1.84, 0.68, 0.86, 0.10, 0.73), 4: (1.83, 2.08, 0.76, 0.89, 0.10, 0.70),
                             8: (2.00, 2.18, 0.83, 0.90, 0.10, 0.63)}),
}


def _targets(name: str) -> dict[str, float]:
    """The targets of one row as measure()'s keys."""
    requests, alphas, cap, at_cap, a0q, rounds = _ROWS[name]
    out = {key(f"alpha_{d}"): a for d, a in zip(range(N_DEPTHS), alphas)}
    out.update(at_cap=at_cap, cap=float(cap), requests=float(requests))
    for g, row in rounds.items():
        out.update({key(s, g): v for s, v in zip(ROUND_STATS, row)})
    med, p90 = LENGTHS[name.split("-")[0]]
    out.update(length_median=float(med), length_p90=float(p90), alpha0_p10=a0q[0], alpha0_median=a0q[1],
               alpha0_p90=a0q[2])
    return out


#: preset name → the published figures (a dict of measure()'s keys, with ``cap`` and ``requests``)
PUBLISHED: dict[str, dict[str, float]] = {name: _targets(name) for name in _ROWS}

__all__ = ["LENGTHS", "PUBLISHED"]
