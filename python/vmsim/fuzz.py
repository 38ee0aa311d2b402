"""A fuzzer over the scenario schema: hostile scenarios through the Python API.

Two generators, both built from ``vmsim knobs`` (every key the engine accepts):

- :func:`hostile_scenarios` mutates the built-in default scenario: any knob set
  to a value of any type (huge, negative, non-finite, wrong type, long text),
  unknown keys, missing tables, random op programs. Only validation and the
  capacity check are run on these (a hostile size may be valid and need
  gigabytes to run).
- :func:`small_runs` builds scenarios that fit a small machine (64 MiB–1 GiB,
  a fraction of a second simulated) with random op programs whose parameters
  are hostile, and runs them.

The contract checked for every case (:func:`check_outcome`): the engine either
answers with a result or with one :class:`~vmsim.api.ScenarioError` line that
names no serde internals, and never panics, hangs or aborts. ``tests/test_fuzz.py``
runs a bounded number of cases in ``make all``; ``make fuzz`` (``scripts/fuzz.py``)
runs for as long as asked and keeps every failure it finds under
``tests/data/fuzz-crashers/``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import strategies as st

from vmsim import _vmsim, api
from vmsim._vmsim import ScenarioError

#: Every knob the engine accepts, as ``vmsim knobs`` lists them.
KNOBS: list[dict[str, Any]] = json.loads(_vmsim.knobs())

#: Longest one-line message accepted [characters]: an unknown key's message lists every key
#: of its table (about 1,000 characters for [kernel]); a user's value is clipped to 60.
MAX_MESSAGE = 2000
#: Texts that betray serde's or Rust's internals instead of naming the user's key.
INTERNAL_WORDS = ("untagged enum", "NumOrStr", "panicked", "RUST_BACKTRACE", "Traceback")

OPS = (
    "compute", "touch", "unmap", "alloc", "free", "slab", "slab_free", "write", "read",
    "unlink", "madvise", "thp_fault", "fio_write", "fio_read", "signal", "wait",
    "nr_hugepages", "snapshot", "sleep", "sleep_elapsed", "exit", "drop_caches", "compact_memory",
    "sync", "sysctl", "cgroup_write", "shape_free_lists", "shape_free_lists_end",
)  # fmt: skip

_INT_EDGES = [0, 1, -1, 2**31 - 1, 2**31, 2**32, 2**53, 2**63 - 1, -(2**63), 10**12, 10**18]
_SIZE_UNITS = ["", "B", "K", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "kB", "GB", "x", " "]
_TIME_UNITS = ["", "ns", "us", "µs", "ms", "s", "min", "h", "d", "y", "sec"]


def _sized(units: list[str]) -> st.SearchStrategy[str]:
    """A number followed by a unit, well-formed or not: ``"16TiB"``, ``"-1ms"``, ``"1e300s"``."""
    number = st.one_of(
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["", ".", "1_000", "0x10", "1e300", "nan", "inf", " 1"]),
    )
    return st.builds(lambda n, u: f"{n}{u}", number, st.sampled_from(units))


#: A value of any type TOML can carry, biased towards edges.
hostile_values: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(_INT_EDGES),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.just("x" * 5000),
    _sized(_SIZE_UNITS),
    _sized(_TIME_UNITS),
    st.lists(st.integers(min_value=-5, max_value=2**40), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(0, 9), max_size=2),
)


def _op(values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """One program operation whose fields take ``values`` (and sometimes an unknown field)."""
    fields = ["time", "size", "order", "count", "type", "gfp", "which", "cache", "objects",
              "file", "advice", "files", "file_size", "until", "name", "pages", "node",
              "value", "bogus"]  # fmt: skip
    return st.builds(
        lambda op, kv: {"op": op, **kv},
        st.sampled_from(OPS),
        st.dictionaries(st.sampled_from(fields), values, max_size=3),
    )


def _knob_value(knob: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value for one knob: a plausible one of its unit, or anything at all."""
    unit = knob["unit"]
    plausible: st.SearchStrategy[Any]
    if unit == "[bytes]":
        plausible = _sized(_SIZE_UNITS)
    elif unit == "[time]":
        plausible = _sized(_TIME_UNITS)
    elif unit == "[bool]":
        plausible = st.booleans()
    else:
        plausible = st.sampled_from(_INT_EDGES)
    return st.one_of(plausible, hostile_values)


@st.composite
def hostile_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """The default scenario with one to six hostile mutations."""
    import tomllib

    data: dict[str, Any] = tomllib.loads(_vmsim.default_scenario())
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["knob", "knob", "knob", "unknown", "drop", "task", "op"]))
        if kind == "knob":
            knob = draw(st.sampled_from(KNOBS))
            table = (
                data
                if knob["section"] in ("", "scenario")
                else data.setdefault(knob["section"], {})
            )
            if isinstance(table, dict):
                table[knob["name"]] = draw(_knob_value(knob))
        elif kind == "unknown":
            section = draw(st.sampled_from(["", "machine", "kernel", "cost", "disk", "sched"]))
            table = data if not section else data.setdefault(section, {})
            if isinstance(table, dict):
                table[draw(st.text(min_size=1, max_size=8))] = draw(hostile_values)
        elif kind == "drop" and data:
            data.pop(draw(st.sampled_from(sorted(data))), None)
        elif kind == "task":
            task = draw(st.dictionaries(
                st.sampled_from(["name", "count", "repeat", "start", "program", "cgroup", "cpu",
                                 "bogus"]),
                st.one_of(hostile_values, st.lists(_op(hostile_values), max_size=3)),
                max_size=5,
            ))  # fmt: skip
            tasks = data.setdefault("task", [])
            if isinstance(tasks, list):
                tasks.append(task)
        else:
            tasks = data.get("task")
            if isinstance(tasks, list) and tasks and isinstance(tasks[0], dict):
                program = tasks[draw(st.integers(0, len(tasks) - 1))].setdefault("program", [])
                if isinstance(program, list):
                    program.append(draw(_op(hostile_values)))
    return data


_TIMES = st.sampled_from(["0s", "1ns", "1us", "1ms", "50ms", "10s"])
_SIZES = st.sampled_from(["0B", "1B", "4KiB", "1MiB", "2MiB", "64MiB", "1GiB", "1TiB"])
_COUNTS = st.sampled_from([0, 1, 2, 64, 1000, 2**32, 2**63 - 1])
_NAMES = st.sampled_from(["f", "g", "h"])

#: Each operation with fields of the right type and edge values (a small run's programs).
_VALID_OPS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "compute": {"time": _TIMES},
    "touch": {"size": _SIZES},
    "unmap": {"size": _SIZES},
    "alloc": {"order": st.integers(0, 11), "count": _COUNTS,
              "type": st.sampled_from(["unmovable", "reclaimable", "movable", "atomic"]),
              "gfp": st.lists(st.sampled_from(["__GFP_RETRY_MAYFAIL", "__GFP_NORETRY",
                                               "__GFP_THISNODE", "__GFP_NOWARN", "__GFP_COMP"]),
                              max_size=3)},
    "free": {"count": _COUNTS, "which": st.sampled_from(["oldest", "newest", "random"])},
    "slab": {"cache": st.sampled_from(["dentry", "ext4_inode_cache", "kmalloc-256", "x"]),
             "objects": _COUNTS},
    "slab_free": {"cache": st.sampled_from(["dentry", "kmalloc-256"]), "objects": _COUNTS},
    "write": {"file": _NAMES, "size": _SIZES},
    "read": {"file": _NAMES, "size": _SIZES},
    "unlink": {"file": _NAMES},
    "madvise": {"advice": st.sampled_from(["hugepage", "nohugepage"])},
    "thp_fault": {"size": _SIZES},
    "fio_write": {"files": _COUNTS, "file_size": _SIZES},
    "fio_read": {"until": _NAMES, "count": _COUNTS},
    "signal": {"name": _NAMES},
    "wait": {"name": _NAMES, "count": _COUNTS},
    "nr_hugepages": {"pages": _COUNTS, "node": st.integers(0, 2)},
    "snapshot": {"name": _NAMES},
    "sleep": {"time": _TIMES},
    "sleep_elapsed": {"upto": _NAMES},
    "exit": {},
    "drop_caches": {"value": st.integers(0, 5)},
    "compact_memory": {},
    "shape_free_lists": {"buddyinfo": st.sampled_from([
        "Node 0, zone   Normal   5 4 3 2 1 1 1 1 1 1 2",
        "Node 0, zone    DMA32   1 0 0 0 0 0 0 0 0 0 0\nNode 1, zone Normal 1 1 1 1 1 1 1 1 1 1 1",
        "Node 0, zone Movable 1 2 3", "", "Node x"]),
                         "size": _SIZES},
    "shape_free_lists_end": {},
    "sync": {},
    "sysctl": {"name": st.sampled_from(["vm.swappiness", "vm.dirty_ratio", "vm.dirty_bytes",
                                        "vm.min_free_kbytes", "vm.watermark_scale_factor",
                                        "vm.nr_hugepages", "vm.drop_caches", "vm.x"]),
               "value": _COUNTS},
    "cgroup_write": {"cgroup": st.sampled_from(["A", "B", ""]),
                     "file": st.sampled_from(["memory.limit_in_bytes", "memory.max",
                                              "memory.high", "memory.x"]),
                     "value": st.one_of(_COUNTS, _SIZES, st.sampled_from(["max", "-1"]))},
}  # fmt: skip


@st.composite
def _valid_op(draw: st.DrawFn) -> dict[str, Any]:
    """One operation with every field of its type (optional ones sometimes left out)."""
    op = draw(st.sampled_from(sorted(_VALID_OPS)))
    fields = {k: draw(v) for k, v in _VALID_OPS[op].items() if draw(st.integers(0, 4))}
    return {"op": op, **fields}


@st.composite
def small_runs(draw: st.DrawFn) -> dict[str, Any]:
    """A small machine, a short run and one to three tasks with random programs."""
    tasks = []
    for i in range(draw(st.integers(1, 3))):
        task: dict[str, Any] = {
            "name": f"t{i}",
            "program": draw(st.lists(_valid_op(), min_size=1, max_size=6)),
            "repeat": draw(st.sampled_from([1, 2, 10, 10**12])),
        }
        if draw(st.booleans()):
            task["count"] = draw(st.integers(1, 4))
        if draw(st.booleans()):
            task["start"] = draw(st.sampled_from(["0s", "10ms", "1s"]))
        if draw(st.integers(0, 3)) == 0:
            task["cgroup"] = "A"
        tasks.append(task)
    scenario: dict[str, Any] = {
        "name": "fuzz",
        "seed": draw(st.integers(0, 2**64 - 1)),
        "duration": draw(st.sampled_from(["1ms", "50ms", "200ms"])),
        "machine": {
            "memory": draw(st.sampled_from(["64MiB", "256MiB", "1GiB"])),
            "cpus": draw(st.integers(1, 4)),
            "nodes": draw(st.integers(1, 2)),
            "swap": draw(st.sampled_from(["0B", "64MiB"])),
        },
        "kernel": {
            "version": draw(st.sampled_from(["6.18", "6.1"])),
            "thp_enabled": draw(st.sampled_from(["always", "madvise", "never"])),
            "watermark_boost_factor": draw(st.sampled_from([0, 15000])),
        },
        "task": tasks,
    }
    if any("cgroup" in t for t in tasks):
        scenario["cgroup"] = [
            {"path": "A", "limit_in_bytes": draw(st.sampled_from(["1MiB", "16MiB"]))}
        ]
    return scenario


def check_message(message: str, scenario: object = "") -> None:
    """A refusal is one line of bounded length that names no engine internals (words the
    user's own ``scenario`` holds may be echoed)."""
    assert message, "an empty error message"
    assert "\n" not in message, f"a message of more than one line: {message!r}"
    assert len(message) <= MAX_MESSAGE, (
        f"a message of {len(message)} characters: {message[:200]!r}…"
    )
    written = repr(scenario)
    for word in INTERNAL_WORDS:
        if word not in written:
            assert word not in message, f"a message naming internals ({word}): {message!r}"


def validate_case(scenario: dict[str, Any]) -> str | None:
    """Validation and the capacity check of one case; the refusal's message, or None if valid."""
    try:
        text = api.load_scenario(scenario)
        _vmsim.validate(text)
    except ScenarioError as e:
        check_message(str(e), scenario)
        return str(e)
    return None


#: Wall-clock budget of one small run [s]: a run of at most 200 ms simulated on a 1 GiB
#: machine that has not ended by then has stopped advancing simulated time.
RUN_WALL_BUDGET = 30.0


def run_case(scenario: dict[str, Any]) -> str | None:
    """Runs one small case with the invariant checks on; the refusal's message, or None
    after a whole run."""
    try:
        result = api.run(scenario, max_wall=RUN_WALL_BUDGET, check_invariants=True)
    except ScenarioError as e:
        check_message(str(e), scenario)
        return str(e)
    assert result.cut is None, f"a small run did not end in {RUN_WALL_BUDGET} s: {result.cut}"
    for key, value in result.summary.items():
        if isinstance(value, float):
            assert math.isfinite(value), f"summary {key} = {value}"
    return None


@st.composite
def hostile_traces(draw: st.DrawFn, seed_lines: list[str]) -> bytes:
    """An ftrace text built from real trace lines, each kept, cut, spliced, repeated or
    overwritten with hostile text (huge numbers, control characters, very long fields)."""
    hostile = st.sampled_from(
        ["9" * 5000, "-1", "nan", "\x00", "\r", "\t", "order=", "nr_reclaimed=99999999999999999999",
         "mm_vmscan_direct_reclaim_begin:", "# tracer: nop", "x" * 70000, "é", "\ufffd"]
    )  # fmt: skip
    out: list[str] = []
    for _ in range(draw(st.integers(1, 40))):
        line = draw(st.sampled_from(seed_lines))
        how = draw(st.integers(0, 5))
        if how == 1:
            line = line[: draw(st.integers(0, len(line)))]
        elif how == 2:
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(hostile) + line[at:]
        elif how == 3:
            line = draw(st.text(max_size=80))
        out.append(line)
    return ("\n".join(out) + draw(st.sampled_from(["\n", ""]))).encode("utf-8", "surrogatepass")


def trace_case(trace: bytes) -> str | None:
    """Reads one trace as ``vmsim reclaim-report`` does; the refusal's message, or None
    after a whole report."""
    from vmsim import reclaim_report

    try:
        reclaim_report.report_text(trace)
    except reclaim_report.ReclaimReportError as e:
        check_message(str(e), trace)
        return str(e)
    return None
