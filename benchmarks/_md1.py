"""The M/D/1 prediction of a pipeline's latency under Poisson arrivals.

Requests arriving as a Poisson process of ``rate`` per second go through a
chain of stages of fixed times.  In a series of deterministic servers a
request's time through the whole chain is that of an M/D/1 queue whose
service time is the slowest stage's, plus the other stages' times: the
slowest stage is where requests wait, and behind it they are spaced at least
its time apart, so the stages after it never make them wait again (and the
ones before it only shift the arrivals by a constant).  The waiting time of
the M/D/1 queue has Erlang's closed form, evaluated here with enough digits
for its alternating sum (:func:`wait_cdf`); :func:`lindley` simulates the
same queue, as a check.
"""

import math

import numpy as np


def wait_cdf(t, rate, service):
    """P(wait <= t) in an M/D/1 queue (Erlang): (1 - rho) sum_{k <= t/D} (rate (kD - t))^k / k!
    exp(-rate (kD - t))."""
    import mpmath

    mpmath.mp.dps = 60
    rho = rate * service
    if t < 0:
        return 0.0
    total = mpmath.mpf(0)
    for k in range(int(math.floor(t / service)) + 1):
        x = mpmath.mpf(rate) * (k * service - t)
        total += x ** k / mpmath.factorial(k) * mpmath.exp(-x)
    return float((1 - rho) * total)


def sojourn_quantiles(rate, slowest, rest, quantiles=(50, 90, 99)):
    """{q: ms} the time through the chain: the M/D/1 wait at the slowest stage (ms) + slowest + rest."""
    service = slowest / 1e3
    out = {}
    for q in quantiles:
        lo, hi = 0.0, service
        while wait_cdf(hi, rate, service) < q / 100:
            hi *= 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if wait_cdf(mid, rate, service) < q / 100 else (lo, mid)
        out[q] = hi * 1e3 + slowest + rest
    return out


def lindley(rate, slowest, rest, n=400_000, seed=0, quantiles=(50, 90, 99)):
    """The same quantiles from a simulated queue (Lindley's recursion over ``n`` arrivals)."""
    gaps = np.random.default_rng(seed).exponential(1e3 / rate, n)
    wait = np.empty(n)
    w = 0.0
    for i in range(n):
        wait[i] = w
        w = max(0.0, w + slowest - gaps[i])
    return {q: float(np.percentile(wait, q)) + slowest + rest for q in quantiles}
