"""The grid of a sweep: ``--set`` values, their cartesian product, seeds and run keys.

A run is one point of the grid (a set of overrides of the scenario) with one
seed. Its key is the SHA-256 of the scenario after the overrides (with the
seed written into it) and the vmsim version, so the same run asked for twice,
in one sweep or in a later one, has the same key and is done once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vmsim import _vmsim, api
from vmsim._vmsim import ScenarioError


class SweepError(ValueError):
    """A problem with the sweep's input: printed as one line, exit code 2."""


#: Values a --set item may hold; anything else (arrays, tables) is kept as its TOML text.
_SCALARS = (bool, int, float, str)

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_RANGE_RE = re.compile(r"^range\((.*)\)$", re.S)
_OPEN = {"[": "]", "{": "}", "(": ")"}


def split_values(text: str) -> list[str]:
    """Splits ``V1,V2,…`` at the commas outside brackets, braces, parentheses and quotes."""
    items: list[str] = []
    depth: list[str] = []
    quote = ""
    cur: list[str] = []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in _OPEN:
            depth.append(_OPEN[ch])
        elif depth and ch == depth[-1]:
            depth.pop()
        elif ch in ")]}":
            raise SweepError(f"unbalanced '{ch}' in '{text}'")
        elif ch == "," and not depth:
            items.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if quote:
        raise SweepError(f"unclosed quote in '{text}'")
    if depth:
        raise SweepError(f"missing '{depth[-1]}' in '{text}'")
    items.append("".join(cur).strip())
    return items


def parse_range(args: str, where: str) -> list[int]:
    """The integers of ``range(a,b[,step])`` as Python counts them (b excluded)."""
    parts = [p.strip() for p in args.split(",")]
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"[+-]?\d+", p) for p in parts):
        raise SweepError(f"{where}: range() takes one to three integers, as range(0,30001,15000)")
    nums = [int(p) for p in parts]
    if len(nums) == 3 and nums[2] == 0:
        raise SweepError(f"{where}: range() step must not be zero")
    values = list(range(*nums))
    if not values:
        raise SweepError(f"{where}: range({args}) is empty (the end is excluded, as in Python)")
    return values


def parse_values(key: str, text: str) -> list[Any]:
    """The values of one ``--set KEY=…``: comma-separated TOML values and ``range(a,b,step)``."""
    where = f"--set {key}={text}"
    out: list[Any] = []
    try:
        items = split_values(text)
    except SweepError as e:
        raise SweepError(f"{where}: {e}") from None
    for item in items:
        if not item:
            raise SweepError(f"{where}: empty value (write V1,V2,… with no empty item)")
        m = _RANGE_RE.match(item)
        if m:
            out.extend(parse_range(m.group(1), where))
        else:
            out.append(api.parse_set_value(item, key))
    return out


def parse_set(spec: str) -> tuple[str, list[Any]]:
    """``KEY=V1,V2,…`` as (key, values)."""
    if "=" not in spec:
        raise SweepError(f"--set {spec}: expected KEY=V1,V2,… or KEY=range(a,b,step)")
    key, text = (s.strip() for s in spec.split("=", 1))
    if not _KEY_RE.match(key):
        raise SweepError(f"--set {spec}: '{key}' is not a dotted key like kernel.min_free_kbytes")
    if not text:
        raise SweepError(f"--set {spec}: no value after '='")
    return key, parse_values(key, text)


def parse_sets(specs: Sequence[str]) -> dict[str, list[Any]]:
    """Every ``--set`` of a sweep, in the order given; a key given twice is an error."""
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        key, values = parse_set(spec)
        if key in grid:
            raise SweepError(f"--set {key}: given twice (put every value in one --set)")
        grid[key] = values
    return grid


def parse_seed_list(text: str) -> list[int]:
    """``1,5,9`` (ranges allowed: ``range(1,11)``) as a list of seeds."""
    seeds: list[int] = []
    for v in parse_values("seed", text):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**64:
            raise SweepError(f"--seed-list {text}: '{v}' is not a seed (0..2^64-1)")
        seeds.append(v)
    return list(dict.fromkeys(seeds))


def cartesian(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values; the first key varies slowest."""
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def column_value(value: Any) -> Any:
    """A knob's value as stored in a column: scalars as they are, arrays and tables as TOML."""
    if isinstance(value, _SCALARS):
        return value
    return json.dumps(value)


def _sha256(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Run:
    """One run of a sweep: a point of the grid with one seed.

    ``text`` is the scenario after the overrides (TOML, what ``vmsim run`` runs);
    ``error`` is set, and ``text`` empty, when the point is not a valid scenario.
    """

    key: str
    scenario_sha256: str
    knobs: dict[str, Any]
    seed: int
    text: str
    name: str = ""
    error: str | None = None
    index: int = field(default=0, compare=False)


def base_scenario(scenario: api.ScenarioLike) -> dict[str, Any]:
    """The scenario before overrides, parsed; a ScenarioError if it is not valid by itself."""
    text = api.load_scenario(scenario)
    _vmsim.validate(text)
    return tomllib.loads(text)


def _point_runs(
    scenario: api.ScenarioLike, point: Mapping[str, Any], seeds: Sequence[int] | None
) -> list[Run]:
    """The runs of one point; an invalid point gives runs that carry its error."""
    version = api.version()
    knobs = {k: column_value(v) for k, v in point.items()}
    try:
        text = api.load_scenario(scenario, point)
        _vmsim.validate(text)
        data = tomllib.loads(text)
    except (ScenarioError, tomllib.TOMLDecodeError) as e:
        base = base_scenario(scenario)
        runs = []
        for seed in seeds or [1]:
            ident = {"invalid": base, "overrides": knobs, "seed": seed, "version": version}
            key = _sha256(ident)
            runs.append(Run(key, _sha256(ident | {"seed": None}), knobs, seed, "", "", str(e)))
        return runs
    runs = []
    for seed in seeds or [int(data.get("seed", 1))]:
        with_seed = dict(data, seed=seed)
        point_id = {"scenario": dict(data, seed=None), "version": version}
        key = _sha256({"scenario": with_seed, "version": version})
        name = str(data.get("name", ""))
        runs.append(Run(key, _sha256(point_id), knobs, seed, text, name))
    return runs


def plan(
    scenario: api.ScenarioLike,
    points: Sequence[Mapping[str, Any]],
    seeds: Sequence[int] | None = None,
) -> list[Run]:
    """Every run of the points × seeds, in order, each key once.

    ``seeds`` None runs each point with its scenario's own seed.
    """
    base_scenario(scenario)
    out: dict[str, Run] = {}
    for point in points:
        for run in _point_runs(scenario, point, seeds):
            if run.key not in out:
                out[run.key] = dataclasses.replace(run, index=len(out))
    return list(out.values())
