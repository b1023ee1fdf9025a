# SPDX-License-Identifier: MIT
"""TALLY_BENCH_TOGGLE_MS's intervals as tally picks them (src/common/clock.h, tally_toggled_off:
interval k of CLOCK_MONOTONIC, ns // period, is off when splitmix64's finalizer of k is odd), for
the workloads that print which intervals were on and the tests that check it."""

MASK = (1 << 64) - 1


def toggled_off(k):
    z = (k + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return (z ^ (z >> 31)) & 1 == 1


def on_share(a, b, period):
    """The share of [a, b) (CLOCK_MONOTONIC ns) in intervals that are on."""
    on = sum(min(b, (k + 1) * period) - max(a, k * period)
             for k in range(a // period, b // period + 1) if not toggled_off(k))
    return on / (b - a) if b > a else 0.0
