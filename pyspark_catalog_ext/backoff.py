"""The one backoff formula of the Python side: capped exponential growth with a chosen share of
jitter. Catalog HTTP retries (retry.RetryPolicy) and credential refresh retries
(credentials.policy.RefreshPolicy) both use it."""

from __future__ import annotations

__all__ = ["exponential_backoff"]


def exponential_backoff(attempt: int, base: float, cap: float, jitter: float, rand: float) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based).

    The ceiling is `base * 2**(attempt-1)`, at most `cap`; the share `jitter` of it is random
    (`rand` uniform in [0, 1)): 1.0 is full jitter, 0.5 equal jitter, 0.0 none.
    """
    ceiling = min(cap, base * 2.0 ** min(max(0, attempt - 1), 64))  # the exponent bound keeps floats finite
    return ceiling * (1.0 - jitter) + ceiling * jitter * rand
