"""vmsim.units reads sizes and times with the engine's own parser (vmsim_core::units)."""

from __future__ import annotations

import pytest
import vmsim
from vmsim import units


@pytest.mark.parametrize(
    "text, size",
    [
        ("8GiB", 8 << 30),
        ("1.5MiB", 3 << 19),
        ("4096", 4096),
        ("64K", 64 << 10),
        ("1GB", 10**9),  # SI units: accepted here as in scenarios
        (" 2 TiB ", 2 << 40),
        (12345, 12345),
    ],
)
def test_sizes(text, size):
    assert units.parse_size(text) == size


@pytest.mark.parametrize(
    "text, seconds",
    [("100ms", 0.1), ("2", 2.0), ("50us", 50e-6), ("5min", 300.0), ("1h", 3600.0), ("7ns", 7e-9)],
)
def test_durations(text, seconds):
    assert units.parse_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("bad", ["8 parsecs", "GiB", "", "1e99", "-5MiB", True])
def test_bad_sizes_name_the_problem(bad):
    with pytest.raises(units.UnitError) as e:
        units.parse_size(bad)
    assert "\n" not in str(e.value)


def test_bad_durations_name_the_problem():
    with pytest.raises(units.UnitError, match="unknown time unit 'fortnights'"):
        units.parse_duration("3 fortnights")


def test_the_engine_reads_the_same_units():
    """A size written by fmt_bytes and read by parse_size is what a scenario means."""
    for b in (4096, 3 << 29, 300 << 10, 12345):
        text = units.fmt_bytes(b)
        assert units.parse_size(text) == b
        sc = vmsim.load_scenario({"machine": {"memory": "1GiB", "swap": text}})
        assert f'swap = "{text}"' in sc or f"swap = {text}" in sc
    assert units.fmt_ms(0.0004) == "1ms" and units.fmt_ms(1.2345) == "1234ms"
    assert units.human_bytes(3 << 30) == "3 GiB" and units.human_bytes(100) == "100 B"
