"""Sizes and durations as scenarios write them: ``"8GiB"``, ``"100ms"``.

Parsing is the engine's own (``vmsim_core::units`` through the bindings), so a
size or a time means the same to every Python module as to the scenario
parser and accepts the same units (B, KiB…TiB, kB…TB; ns, us, ms, s, min, h).
The formatters write text the parser reads back exactly.
"""

from __future__ import annotations

from vmsim import _vmsim

__all__ = [
    "PAGE_SIZE",
    "UnitError",
    "fmt_bytes",
    "fmt_ms",
    "human_bytes",
    "parse_duration",
    "parse_size",
]

PAGE_SIZE = 4096
_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


class UnitError(ValueError):
    """A size or duration that cannot be read; the message is one line naming it."""


def parse_size(value: str | int | float) -> int:
    """Bytes of a size: ``"3GiB"``, ``"1.5MiB"``, ``"4096"``, or a number of bytes."""
    if isinstance(value, bool):
        raise UnitError(f"'{value}' is not a size (expected e.g. \"8GiB\")")
    if isinstance(value, int | float):
        if value < 0:
            raise UnitError(f"size {value} is negative")
        return int(value)
    try:
        return _vmsim.parse_size(str(value))
    except ValueError as e:
        raise UnitError(str(e)) from None


def parse_duration(value: str | int | float) -> float:
    """Seconds of a duration: ``"5s"``, ``"125ms"``, ``"50us"``; a bare number is seconds."""
    if isinstance(value, bool):
        raise UnitError(f"'{value}' is not a duration (expected e.g. \"100ms\")")
    if isinstance(value, int | float):
        if value < 0:
            raise UnitError(f"duration {value} is negative")
        return float(value)
    try:
        return _vmsim.parse_duration(str(value)) / 1e9
    except ValueError as e:
        raise UnitError(str(e)) from None


def fmt_bytes(b: int) -> str:
    """A size as scenario text, exact: ``"3GiB"``, ``"300KiB"``, or plain bytes."""
    for unit, mult in _BINARY[1:]:
        if b and b % mult == 0:
            return f"{b // mult}{unit}"
    return str(b)


def human_bytes(b: int) -> str:
    """A size for people: ``"3 GiB"``, ``"307.2 MiB"``."""
    for unit, mult in _BINARY:
        if b >= mult:
            return f"{b / mult:.4g} {unit}"
    return f"{b} B"


def fmt_ms(seconds: float) -> str:
    """A duration as scenario text in whole milliseconds (at least 1 ms)."""
    return f"{max(1, round(seconds * 1000))}ms"
