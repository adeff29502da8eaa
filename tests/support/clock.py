"""Verify's clock in tests: sleeping advances the time at once, so a stage stalls after as
many polls as its timeout holds, with no real wait."""

from __future__ import annotations


class FakeClock:
    def __init__(self) -> None:
        # Not 0: elapsed times must be differences, never the clock read itself.
        self.time = 1000.0

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.time += seconds
