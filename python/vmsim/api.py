"""The Python API: run a scenario, get a result.

A scenario is TOML (a path, a string of TOML text, or a dict with the same
structure); ``overrides`` set single keys with dotted names, e.g.
``{"kernel.mobility_grouping": False, "machine.memory": "2GiB"}``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from vmsim import _vmsim, atomic, inputs
from vmsim._vmsim import ScenarioError

ScenarioLike = str | Path | Mapping[str, Any] | None

#: The most parts of a dotted --set key (scenario tables nest two deep).
MAX_KEY_PARTS = 8


def version() -> str:
    """The engine version."""
    return _vmsim.version()


def default_scenario() -> str:
    """The built-in default scenario as TOML text."""
    return _vmsim.default_scenario()


def knobs() -> list[dict[str, Any]]:
    """Every knob of a section: section, name, key, unit, doc, default and maximum."""
    rows: list[dict[str, Any]] = json.loads(_vmsim.knobs())
    return rows


def table_knobs() -> list[dict[str, Any]]:
    """The keys of the top level and of ``[[task]]``, ``[[cgroup]]``, ``[[hackbench]]`` tables
    that carry a maximum: section, name, key (``[[task]] count``), unit, doc and maximum."""
    rows: list[dict[str, Any]] = json.loads(_vmsim.table_knobs())
    return rows


# Keys whose values are names even where they look like numbers (``kernel.version=6.1``).
NAME_KEYS = frozenset({"kernel.version", "kernel.name"})


#: The deepest nesting of arrays and inline tables in a --set value.
MAX_VALUE_DEPTH = 16
_TOML_TOKENS = re.compile(r""""(?:[^"\\]|\\.)*"|'[^']*'|[\[\]{}]""")


def _value_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in a TOML value (strings skipped)."""
    depth = deepest = 0
    for m in _TOML_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def parse_set_value(text: str, key: str | None = None) -> Any:
    """Reads a --set value as TOML (numbers, booleans, strings, arrays); bare words are strings,
    and so is any value of a key in NAME_KEYS."""
    if _value_depth(text) > MAX_VALUE_DEPTH:
        raise ScenarioError(
            f"--set value {atomic.shown(text, 60)}: nested more than {MAX_VALUE_DEPTH} deep"
        )
    try:
        v = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    if key in NAME_KEYS and not isinstance(v, str):
        return text
    return v


def _dumps(data: dict[str, Any]) -> str:
    """TOML text of a dict; values TOML cannot hold are a ScenarioError."""
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"scenario: {e}") from None


#: The largest cost profile file read [bytes].
MAX_PROFILE_BYTES = 1 << 20


def builtin_cost_profiles() -> list[str]:
    """The names of the built-in cost profiles (``vmsim costs --list``)."""
    return _vmsim.builtin_cost_profiles()


def default_cost_profile() -> str:
    """The cost profile a scenario without a ``costs`` key takes."""
    return _vmsim.default_cost_profile()


def is_cost_profile_file(value: str) -> bool:
    """Whether a cost profile is named by a file (a ``.toml`` name or a path) rather than
    as a built-in one: the engine's rule (crates/vmsim-core/src/costs.rs ``is_file_name``)."""
    return value.endswith(".toml") or "/" in value or os.sep in value


def _cost_profile_text(value: str, base: Path | None = None) -> tuple[str, Path | None]:
    """The TOML text of the cost profile ``value`` names, checked, and its file (None for a
    built-in one). A file is read relative to ``base`` (None: the working directory).
    ScenarioError (one line, starting with the name or the file) on a problem."""
    if not is_cost_profile_file(value):
        text = _vmsim.builtin_cost_profile(value)
        if text is None:
            known = ", ".join(builtin_cost_profiles())
            raise ScenarioError(
                f"{atomic.shown(value, 60)}: no such cost profile (built in: {known}); a "
                "profile file's name ends in .toml"
            )
        return text, None
    path = Path(value)
    if base is not None and not path.is_absolute():
        path = base / path
    what = "a cost profile file"
    inputs.check_regular(path, what, ScenarioError, stream=False)
    with inputs.open_input(str(path), what, ScenarioError) as f:
        data = inputs.read_limited(f, atomic.shown(path), MAX_PROFILE_BYTES, ScenarioError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{atomic.shown(path)}: not UTF-8 text") from None
    try:
        _vmsim.cost_profile(text)
    except ScenarioError as e:
        raise ScenarioError(f"{atomic.shown(path)}: {e}") from None
    return text, path


def cost_profile_text(name_or_path: str | Path) -> str:
    """The TOML text of a cost profile (a built-in one's name or a profile file), checked;
    ScenarioError (one line) if there is no such profile or it is wrong."""
    return _cost_profile_text(str(name_or_path))[0]


def cost_profile(name_or_path: str | Path) -> dict[str, Any]:
    """A cost profile, parsed: ``name``, ``machine``, ``kernel``, ``date``, ``source`` (text
    or None), ``cost`` (every knob [ns], in ``vmsim knobs`` order), ``spread`` (knob ->
    [low, high] [ns]) and ``method`` (knob -> text). ``name_or_path`` is a built-in
    profile's name (:func:`builtin_cost_profiles`) or a profile file (``.toml``).
    Raises ScenarioError (one line) if there is no such profile or it is wrong."""
    text = cost_profile_text(name_or_path)
    profile: dict[str, Any] = json.loads(_vmsim.cost_profile(text))
    return profile


def _scenario_costs(text: str) -> Any:
    """The value of a scenario's top-level ``costs`` key, or None (also for text that does
    not parse: the engine names that problem)."""
    if "costs" not in text:
        return None
    try:
        return tomllib.loads(text).get("costs")
    except tomllib.TOMLDecodeError:
        return None


def load_scenario(
    scenario: ScenarioLike = None,
    overrides: Mapping[str, Any] | None = None,
    costs: str | Path | None = None,
) -> str:
    """Returns the TOML text of a scenario with its cost profile and overrides applied.

    ``scenario`` is None (the built-in default), a path to a ``.toml`` file,
    TOML text, or a dict. ``costs`` (a built-in profile's name or a profile file)
    replaces the scenario's ``costs`` key, and so does an override of ``costs``. A
    profile file (``costs = "x.toml"`` in the scenario: relative to the scenario's
    directory; given here: to the working directory) is read and its figures written
    into ``[cost]`` under the scenario's own ``[cost]`` keys, and the ``costs`` key
    dropped: the text returned needs no other file. Raises ScenarioError with one line
    on a problem.
    """
    base: Path | None = None
    if scenario is None:
        text = default_scenario()
    elif isinstance(scenario, Mapping):
        text = _dumps(dict(scenario))
    elif isinstance(scenario, Path) or (
        isinstance(scenario, str) and "\n" not in scenario and scenario.endswith(".toml")
    ):
        path = Path(scenario)
        base = path.parent
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ScenarioError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"{path}: cannot read: {e}") from None
    else:
        text = str(scenario)
    overrides = dict(overrides or {})
    # The cost profile: --set costs=…, else the costs argument (both relative to the working
    # directory), else the scenario's own costs key when it names a file.
    chosen: Any = overrides.pop("costs", None)
    label = "--set costs="  # how a message names where the profile was chosen
    if chosen is None and costs is not None:
        chosen, label = str(costs), ""
    if chosen is not None and not isinstance(chosen, str):
        raise ScenarioError(
            f"{label}{atomic.shown(chosen, 60)}: not a cost profile's name or a .toml file"
        )
    profile_text: str | None = None
    profile_file: Path | None = None
    if chosen is not None:
        try:
            profile_text, profile_file = _cost_profile_text(chosen)
        except ScenarioError as e:
            raise ScenarioError(f"{label}{e}") from None
    else:
        named = _scenario_costs(text)
        if isinstance(named, str) and is_cost_profile_file(named):
            try:
                profile_text, profile_file = _cost_profile_text(named, base)
            except ScenarioError as e:
                shown = atomic.shown(json.dumps(named, ensure_ascii=False), 60)
                raise ScenarioError(f"scenario: costs = {shown}: {e}") from None
    if profile_text is None and not overrides:
        return text
    # Errors in the user's own text are reported against its own lines first (with the
    # chosen profile standing in for its costs key).
    _vmsim.validate(text, profile_text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"scenario: {e}") from None
    if profile_text is not None:
        if profile_file is None:
            data["costs"] = chosen
        else:
            figures: dict[str, int] = json.loads(_vmsim.cost_profile(profile_text))["cost"]
            own = data.get("cost", {})
            if isinstance(own, list):  # the positional form serde reads: the first knobs
                own = dict(zip(figures, own, strict=False))
            data.pop("costs", None)
            data["cost"] = {**figures, **own}
        text = _dumps(data)
        if not overrides:
            return text
    for key, value in overrides.items():
        parts = key.split(".")
        if not all(parts):
            raise ScenarioError(
                f"--set {atomic.shown(key)}: not a dotted key like kernel.min_free_kbytes"
            )
        if len(parts) > MAX_KEY_PARTS:
            raise ScenarioError(
                f"--set {atomic.shown(key)}: {len(parts)} levels; a scenario key has at most "
                f"{MAX_KEY_PARTS} (like kernel.min_free_kbytes)"
            )
        node = data
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise ScenarioError(
                    f"--set {atomic.shown(key)}: '{atomic.shown(p)}' is not a table"
                )
            node = nxt
        node[parts[-1]] = value
    merged = _dumps(data)
    try:
        _vmsim.validate(merged)
    except ScenarioError as e:
        raise ScenarioError(_set_message(str(e), text, overrides)) from None
    return merged


def _culprit(text: str, overrides: Mapping[str, Any]) -> str | None:
    """The first --set key that alone makes the scenario ``text`` invalid, if one does."""
    for key, value in overrides.items():
        data = tomllib.loads(text)
        node = data
        for p in key.split(".")[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                break
        else:
            node[key.split(".")[-1]] = value
            try:
                _vmsim.validate(_dumps(data))
            except ScenarioError:
                return key
    return None


def _set_message(msg: str, text: str, overrides: Mapping[str, Any]) -> str:
    """The engine's message about a scenario with overrides, placed for the user: line
    numbers of the merged text mean nothing to them, so the table is named when the
    faulty --set key is in it, else the key itself."""
    key = _culprit(text, overrides)
    m = re.match(r"scenario: line \d+ in (\[+([^\]]*)\]+(?: #\d+)?): (.*)$", msg, re.S)
    if m and (key is None or key.split(".")[0] == m.group(2)):
        return f"scenario: {m.group(1)} (after --set): {m.group(3)}"
    rest = m.group(3) if m else re.sub(r"^scenario: (line \d+: )?", "", msg)
    where = f"--set {atomic.shown(key)}" if key else "(after --set)"
    return f"scenario: {where}: {rest}"


CHECK_INVARIANTS_ENV = "VMSIM_CHECK_INVARIANTS"


def checking_invariants() -> bool:
    """Whether runs check the kernel's invariants by default: ``VMSIM_CHECK_INVARIANTS=1``."""
    return os.environ.get(CHECK_INVARIANTS_ENV) == "1"


@dataclass
class Result:
    """What one run reports.

    ``data`` is the parsed JSON object (the keys are documented in the
    README); ``json_text`` is the exact JSON the engine produced, identical for
    identical scenario and seed.
    """

    json_text: str
    data: dict[str, Any] = field(repr=False)

    @property
    def summary(self) -> dict[str, Any]:
        """Totals: elapsed/user/sys seconds, OOM kills, extfrag events, …"""
        value: dict[str, Any] = self.data["summary"]
        return value

    @property
    def vmstat(self) -> dict[str, int]:
        """/proc/vmstat at the end, in the kernel's order."""
        value: dict[str, int] = self.data["vmstat"]
        return value

    @property
    def proc(self) -> dict[str, str]:
        """The /proc files at the end, as text: vmstat, buddyinfo, pagetypeinfo, slabinfo."""
        value: dict[str, str] = self.data["proc"]
        return value

    @property
    def timeseries(self) -> dict[str, Any]:
        """Counters sampled over simulated time."""
        value: dict[str, Any] = self.data["timeseries"]
        return value

    @property
    def cut(self) -> dict[str, Any] | None:
        """Where a limit (``max_wall``) cut the run short: ``at_seconds`` and ``reason``."""
        value: dict[str, Any] | None = self.data.get("cut")
        return value

    @property
    def kernel(self) -> str:
        """The kernel's name."""
        value: str = self.data["kernel"]
        return value

    def timeseries_frame(self) -> Any:
        """The time series as a polars DataFrame, a row per sample (columns in
        :mod:`vmsim.series` and docs/report.md)."""
        from vmsim import series

        return series.frame(self.data)


def run(
    scenario: ScenarioLike = None,
    *,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    trace: str | Path | None = None,
    trace_format: str = "modern",
    events: str | Sequence[str] | None = None,
    max_wall: float | None = None,
    check_invariants: bool | None = None,
    timeline: str | Path | None = None,
    costs: str | Path | None = None,
    pageblocks: bool = True,
) -> Result:
    """Runs a scenario and returns its Result.

    ``progress(now_ns, end_ns)`` is called after every sample. With ``trace``,
    the tracepoints are written to that file as ftrace text, in the 6.18
    format (``trace_format="modern"``) or the 2.6.35 one (``"legacy"``).
    ``events`` selects the tracepoints as ``/sys/kernel/tracing/set_event``
    does (``"vmscan"``, ``"kmem:mm_page_alloc"``, ``"all"``; a string of
    comma-separated selectors or a list of them); without it, every event of
    vmscan, compaction and writeback is traced, and none of kmem.
    ``max_wall`` is a wall-clock budget in seconds: when it is spent the run
    ends there and the result is the partial one, with ``cut`` saying at which
    simulated time (``Result.cut``). ``check_invariants`` checks the kernel's
    invariants at every sample and at the end, and raises InvariantError (one
    line naming the invariant and the simulated time) at the first one broken;
    None checks when the environment has ``VMSIM_CHECK_INVARIANTS=1`` (how
    ``vmsim reproduce --check-invariants`` reaches every run, in worker
    processes too).
    With ``timeline``, the run records every task's changes of scheduling state
    and the zones' counters at every sample, and writes them to that file as
    JSON (what ``vmsim run --perfetto`` draws; docs/report.md).
    ``costs`` is a cost profile replacing the scenario's ``costs`` key: a built-in
    profile's name or a profile file (:func:`load_scenario`).
    ``pageblocks=False`` leaves the result's pageblock map (``pageblocks``: a
    walk of every pageblock, a result as large as the machine) empty.
    Ctrl-C raises KeyboardInterrupt within a fraction of a second.
    Raises ScenarioError (one line) if the scenario or a selector is wrong.
    """
    text = load_scenario(scenario, overrides, costs)
    if seed is not None and not (0 <= seed < 2**64):
        raise ScenarioError(f"seed {seed} is out of range (0..2^64-1)")
    if trace_format not in ("modern", "legacy"):
        raise ScenarioError(f"trace format '{trace_format}': use modern or legacy")
    if events is not None and trace is None:
        raise ScenarioError("events select what a trace records: give trace=FILE too")
    selectors = [events] if isinstance(events, str) else None if events is None else list(events)
    if max_wall is not None and not (isinstance(max_wall, int | float) and 0 < max_wall <= 1e9):
        raise ScenarioError(f"max_wall {max_wall}: a number of seconds above 0 (at most 1e9)")
    if check_invariants is None:
        check_invariants = checking_invariants()
    try:
        out = _vmsim.run(
            text,
            seed,
            progress,
            str(trace) if trace else None,
            trace_format,
            selectors,
            max_wall=None if max_wall is None else float(max_wall),
            check_invariants=check_invariants,
            timeline_path=str(timeline) if timeline else None,
            pageblocks=pageblocks,
        )
    except OSError as e:
        written = next((p for p in (trace, timeline) if p and e.filename == str(p)), None)
        if written is None:
            raise
        raise atomic.OutputError(written, atomic.output_reason(e, Path(written))) from None
    return Result(json_text=out, data=json.loads(out))
