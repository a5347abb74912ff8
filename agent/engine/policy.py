"""Restart policy: exponential backoff and a crash-loop limit (kubelet's shape, smaller numbers).

A crash-looping engine (bad flags, OOM at load) is not retried forever: after ``crash_loop_limit``
consecutive failures the supervisor stops in the "crash_loop" state and says so; the operator fixes
the profile and starts it again. A run that stayed ready for ``healthy_reset_s`` resets the count.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    backoff_initial_s: float = 2.0
    backoff_max_s: float = 120.0
    crash_loop_limit: int = 5
    healthy_reset_s: float = 600.0

    def delay(self, failures: int) -> float:
        """Seconds to wait before the next start after ``failures`` consecutive failures (>= 1)."""
        return float(min(self.backoff_max_s, self.backoff_initial_s * 2 ** max(failures - 1, 0)))
