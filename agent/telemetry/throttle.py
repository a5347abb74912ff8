"""NVML clock-event ("throttle") reason bits, decoded to names an operator can read.

The bit values are NVML's ``nvmlClocksEventReason*`` / ``nvmlClocksThrottleReason*`` constants; they
are spelled out here (and checked against pynvml by a test) so that the nvidia-smi fallback and the
fixture replay decode exactly like the NVML path, without importing pynvml.
"""

from __future__ import annotations

from typing import Final

THROTTLE_BITS: Final[tuple[tuple[int, str], ...]] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)

HARMFUL: Final = frozenset(
    {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)
"""Reasons that mean the GPU runs slower than it should: heat or the board's power protection."""

POWER_CAP: Final = "sw_power_cap"
"""Normal at full load (the driver holds the card at its power limit), worth a note, not an alarm."""


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the set bits, in NVML's bit order; unknown bits become ``bit_0x...``."""
    names = [name for bit, name in THROTTLE_BITS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_BITS:
        known |= bit
    rest = mask & ~known
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return names
