"""Type stub of the extension module ``vmsim._vmsim`` (crates/vmsim-py/src/lib.rs).

Results cross the boundary as JSON text, which :mod:`vmsim.api` parses once.
"""

from collections.abc import Callable
from os import PathLike

class ScenarioError(ValueError):
    """A scenario that cannot be run; the message is one line."""

class InvariantError(RuntimeError):
    """A kernel invariant broken during a run: a bug in vmsim; the message is one line."""

def run(
    scenario: str,
    seed: int | None = None,
    progress: Callable[[int, int], object] | None = None,
    trace_path: str | PathLike[str] | None = None,
    trace_format: str = "modern",
    events: list[str] | None = None,
    max_wall: float | None = None,
    check_invariants: bool = False,
    timeline_path: str | PathLike[str] | None = None,
    pageblocks: bool = True,
) -> str:
    """Runs a scenario given as TOML text; returns the result as JSON text. ``events``
    selects the traced events as set_event does (None: the default selection);
    ``max_wall`` is a wall-clock budget [s] (the partial result carries ``cut``);
    ``check_invariants`` raises InvariantError at the first kernel invariant broken;
    ``timeline_path`` records the run's timeline and writes it there as JSON; without
    ``pageblocks`` the result's pageblock map is left empty."""

def validate(scenario: str, costs: str | None = None) -> None:
    """Checks a scenario without running it; raises ScenarioError if it is wrong. ``costs``
    is the TOML text of a cost profile standing in for the scenario's ``costs`` key."""

def cost_profile(text: str) -> str:
    """A cost profile's TOML text, checked and parsed, as JSON: name, machine, kernel, date,
    source, cost [ns], spread and method; ScenarioError (one line) if it is wrong."""

def builtin_cost_profile(name: str) -> str | None:
    """The TOML text of the built-in cost profile ``name``, or None."""

def builtin_cost_profiles() -> list[str]:
    """The names of the built-in cost profiles, in order."""

def default_cost_profile() -> str:
    """The cost profile a scenario without a ``costs`` key takes."""

def default_scenario() -> str:
    """The built-in default scenario (TOML)."""

def knobs() -> str:
    """Every knob of a section as JSON: section, name, key, unit, doc, default and max."""

def table_knobs() -> str:
    """The top-level and array-table keys with a maximum as JSON: section, name, key, unit,
    doc and max."""

def capacity_need(scenario: str) -> str:
    """Host memory one run of the scenario needs, by part, in all (``total``: every frame
    used) and before its first event (``at_start``), as JSON [bytes]; raises ScenarioError
    if the scenario is wrong."""

def bench(min_seconds: float = 1.0, throttle_scenario: str | None = None) -> str:
    """Runs the engine benchmarks; returns JSON."""

def bench_scale(name: str) -> str:
    """Boots and runs one scale case of `vmsim bench`; returns JSON."""

def bench_scale_cases() -> list[str]:
    """The names of `vmsim bench`'s scale cases, in order."""

def parse_size(text: str) -> int:
    """Bytes of a size such as ``"8GiB"``; ValueError names the problem."""

def parse_duration(text: str) -> int:
    """Nanoseconds of a duration such as ``"100ms"``; ValueError names the problem."""

def version() -> str:
    """The engine version."""

def replay_access(
    path: str,
    format: str,
    cache_pages: list[int],
    kernel_toml: str = "",
    obj_id_col: int = 1,
    delimiter: str = ",",
    has_header: bool = False,
) -> str:
    """Replays a page-access trace at each cache size [pages]; the report as JSON text.
    ValueError names a trace that cannot be read."""

def replay_kmem(path: str, scenario: str, interval: float = 1.0, workloads: bool = False) -> str:
    """Replays a kmem trace on a scenario's machine and kernel, sampling every
    ``interval`` seconds of trace time; the report as JSON text. ScenarioError for a
    trace whose pfns the machine lacks (naming the memory needed)."""

def calibrate_bench(
    name: str, size: int, path: str | None = None, cpu: int = 0
) -> dict[str, float]:
    """Runs one microbenchmark of vmsim calibrate (crates/vmsim-calibrate) for one
    repetition: figures by name [ns]; OSError with one line if it cannot run."""

def calibrate_read_in_cgroup(file: str, procs: str | None = None) -> tuple[int, int]:
    """Reads ``file`` 4 KiB a pread, readahead off, in a child process that first joins the
    memory cgroup whose ``cgroup.procs`` is ``procs``: (CPU time [ns], bytes read)."""
