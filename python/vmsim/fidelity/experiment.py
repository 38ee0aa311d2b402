"""Fidelity experiments as data: one TOML file each.

An experiment describes one shape of work the same way for both sides: the
real kernel of the machine (driven from Python by ``vmsim fidelity --record``)
and vmsim (a scenario derived from the recorded machine). It names

- ``[cgroup]``: one cgroup-v1 memory group made for the experiment
  (``limit_in_bytes``), which tasks with ``cgroup = true`` run in;
- ``[sysctl]``: ``vm.*`` sysctls set for the run and restored after;
- ``[[file]]``: files on the disk before the run starts (``name``, ``size``),
  written and then dropped from the page cache by the recorder before the
  ``start`` snapshot, and ``[[file]]`` tables of the vmsim scenario;
- ``[swap]``: a swap file of ``size`` the recorder makes, enables (``swapon``)
  for the run and removes (``swapoff``, unlink) after, on errors and Ctrl-C too;
- ``[[task]]``: processes that live for the whole experiment (their
  anonymous memory and files persist from phase to phase);
- ``[[phase]]``: what is measured, in order. A phase's ``steps`` belong to a
  task (run in order per task, tasks side by side) or, without ``task``, are
  operator steps the recorder does itself (``nr_hugepages``,
  ``compact_memory``, ``drop_caches``, ``sync``, ``sleep``). /proc is read before and
  after every phase;
- ``metrics``: what is compared (see :class:`Metric`);
- ``trace``: tracepoints whose events are counted per phase (optional).

A step vmsim cannot express yet (``unlink_files``) is left out of the vmsim
scenario and listed as missing.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from vmsim import units

__all__ = [
    "OPS",
    "Experiment",
    "FidelityError",
    "Metric",
    "Phase",
    "Step",
    "experiments_dir",
    "load_experiment",
    "load_experiments",
]

HPAGE_SIZE = 2 << 20


class FidelityError(ValueError):
    """A problem with an experiment, a recording or the machine; the message is one line."""


# op: (required fields, optional fields, who runs it: "task", "operator" or "both")
OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "write": (("file", "size"), (), "task"),
    "read": (("file",), ("size", "bs"), "task"),
    "fadvise": (("file", "advice"), (), "task"),
    "unlink": (("file",), (), "task"),
    "anon": (("size",), ("hugepage",), "task"),
    "anon_free": ((), (), "task"),
    "anon_touch": ((), ("write", "order"), "task"),
    "files": (("dir", "count", "size"), (), "task"),
    "unlink_files": (("dir",), (), "task"),
    "sleep": (("time",), (), "both"),
    "nr_hugepages": (("pages",), (), "operator"),
    "compact_memory": ((), (), "operator"),
    # sync(1): every dirty page written and waited for (ksys_sync).
    "sync": ((), (), "operator"),
    "drop_caches": (("value",), (), "operator"),
    # echo SIZE > memory.limit_in_bytes of the experiment's group (mem_cgroup_resize_max).
    "cgroup_limit": (("size",), (), "operator"),
}

# What vmsim lacks for an op it cannot express (the next issues' work).
MISSING = {
    "unlink_files": "unlinking files created by a 'files' step (fio_write's files have no names)",
}

TOUCH_ORDERS = ("sequential", "random")
FADVISE = ("normal", "sequential", "random", "willneed", "dontneed")
SOURCES = ("vmstat", "memcg", "meminfo", "buddy", "time", "trace")
# Sources whose value is a state at the end of a phase (the others are counted over phases).
STATE_SOURCES = ("memcg", "meminfo", "buddy")
BUDDY_METRICS = ("huge_free",)
_METRIC_RE = re.compile(
    r"^(?P<source>[a-z]+)\.(?P<name>[A-Za-z0-9_()]+)"
    r"(?::(?P<field>[a-z_]+)(?P<cmp><=|>=|<|>|==)(?P<value>-?\d+))?"
    r"(?:@(?P<phase>[A-Za-z0-9_-]+))?$"
)
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")


def parse_duration(text: Any, where: str) -> float:
    """Seconds of a duration written as in scenarios (``"10s"``, ``"500ms"``, ``"2min"``)."""
    if not isinstance(text, str):
        raise FidelityError(f'{where}: \'{text}\' is not a duration like "10s" or "500ms"')
    try:
        return units.parse_duration(text)
    except units.UnitError as e:
        raise FidelityError(f"{where}: {e}") from None


def _size(value: Any, where: str) -> int:
    try:
        return units.parse_size(value)
    except (TypeError, units.UnitError) as e:
        raise FidelityError(f"{where}: {e}") from None


@dataclass(frozen=True)
class Metric:
    """One compared figure, written ``SOURCE.NAME[:FIELD<N][@PHASE]``.

    - ``vmstat.pgscan_file`` — a /proc/vmstat item's change over the whole
      experiment, or over one phase with ``@phase``;
    - ``memcg.cache@write`` — a line of the group's memory.stat (or
      ``failcnt``, ``max_usage_in_bytes``) at the end of a phase (the last
      phase by default);
    - ``meminfo.HugePages_Total@pool`` — a /proc/meminfo field at the end of a phase;
    - ``buddy.huge_free@phase`` — free pages in blocks of order >= 9 (pageblock
      order), from /proc/buddyinfo at the end of a phase;
    - ``time.seconds@phase`` — how long the phase took (wall time on the real
      kernel, simulated time in vmsim);
    - ``trace.mm_page_alloc_extfrag:fallback_order<9@load`` — events of a
      tracepoint (optionally those whose field passes the comparison) in a phase.
    """

    spec: str
    source: str
    name: str
    phase: str | None
    field: str | None = None
    cmp: str | None = None
    value: int | None = None

    @property
    def filter_key(self) -> str:
        """The trace-count key: the event name with its filter."""
        if self.field is None:
            return self.name
        return f"{self.name}:{self.field}{self.cmp}{self.value}"


@dataclass(frozen=True)
class Step:
    """One step: an op with its fields, run by a task or (task None) by the recorder."""

    op: str
    task: str | None
    args: dict[str, Any]


@dataclass(frozen=True)
class Phase:
    """A measured part of the experiment."""

    name: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class TaskDef:
    """A process that lives for the whole experiment."""

    name: str
    cgroup: bool


@dataclass
class Experiment:
    """A parsed experiment definition."""

    name: str
    description: str
    path: Path
    sha256: str
    tasks: list[TaskDef]
    phases: list[Phase]
    metrics: list[Metric]
    cgroup_limit: int | None = None
    swap_size: int | None = None
    zswap: bool = False
    sysctl: dict[str, int] = field(default_factory=dict)
    files: list[tuple[str, int]] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    vmsim_duration: float = 600.0
    timeout: float = 900.0
    notes: str = ""

    @property
    def missing(self) -> list[str]:
        """What vmsim cannot express of this experiment yet, one line each."""
        out = []
        for ph in self.phases:
            for s in ph.steps:
                why = MISSING.get(s.op)
                if why and why not in out:
                    out.append(why)
        return out

    def footprint(self) -> dict[str, int]:
        """Peak anonymous memory plus hugetlb pool held at once, and bytes written [bytes]."""
        held: dict[str, int] = {}
        peak = hugetlb = 0
        disk = sum(size for _, size in self.files)
        for ph in self.phases:
            for s in ph.steps:
                if s.op == "anon":
                    held[s.task or ""] = held.get(s.task or "", 0) + s.args["size"]
                elif s.op == "anon_free":
                    held[s.task or ""] = 0
                elif s.op == "write":
                    disk += s.args["size"]
                elif s.op == "files":
                    disk += s.args["count"] * max(s.args["size"], 4096)
                elif s.op == "nr_hugepages":
                    hugetlb = s.args["pages"] * HPAGE_SIZE
                peak = max(peak, sum(held.values()) + hugetlb)
        return {"memory": peak, "disk": disk + (self.swap_size or 0)}

    def phase_names(self) -> list[str]:
        """The phases' names, in order."""
        return [p.name for p in self.phases]


def experiments_dir() -> Path:
    """The experiments that ship with vmsim."""
    return Path(str(resources.files("vmsim.fidelity") / "experiments"))


def _check_keys(table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for k in table:
        if k not in allowed:
            raise FidelityError(f"{where}: unknown key '{k}' (known: {', '.join(allowed)})")


def _parse_step(raw: Any, where: str, tasks: dict[str, TaskDef]) -> Step:
    if not isinstance(raw, dict):
        raise FidelityError(f'{where}: a step is a table like {{ op = "write", ... }}')
    op = raw.get("op")
    if op not in OPS:
        raise FidelityError(f"{where}: unknown op '{op}' (known: {', '.join(OPS)})")
    required, optional, who = OPS[op]
    _check_keys(raw, ("op", "task", *required, *optional), f"{where} ({op})")
    for k in required:
        if k not in raw:
            raise FidelityError(f"{where} ({op}): '{k}' is required")
    task = raw.get("task")
    if task is None and who == "task":
        raise FidelityError(f"{where} ({op}): needs a task")
    if task is not None and who == "operator":
        raise FidelityError(f"{where} ({op}): is an operator step; it takes no task")
    if task is not None and task not in tasks:
        raise FidelityError(f"{where}: unknown task '{task}' (known: {', '.join(tasks)})")
    args: dict[str, Any] = {}
    for k in required + optional:
        if k not in raw:
            continue
        v = raw[k]
        if k == "size":
            args[k] = _size(v, f"{where} ({op}) size")
        elif k == "bs":
            args[k] = _size(v, f"{where} ({op}) bs")
            if not 4096 <= args[k] <= 64 << 20 or args[k] % 4096:
                raise FidelityError(f"{where} ({op}) bs: must be a multiple of 4KiB up to 64MiB")
        elif k == "advice":
            if v not in FADVISE:
                raise FidelityError(f"{where} ({op}) advice: must be one of {', '.join(FADVISE)}")
            args[k] = v
        elif k == "time":
            args[k] = parse_duration(v, f"{where} ({op}) time")
        elif k in ("count", "pages"):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10_000_000:
                raise FidelityError(f"{where} ({op}) {k}: must be an integer from 0 to 10000000")
            args[k] = v
        elif k == "value":
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 3:
                raise FidelityError(f"{where} ({op}) value: must be 1, 2 or 3")
            args[k] = v
        elif k in ("hugepage", "write"):
            if not isinstance(v, bool):
                raise FidelityError(f"{where} ({op}) {k}: must be true or false")
            args[k] = v
        elif k == "order":
            if v not in TOUCH_ORDERS:
                raise FidelityError(
                    f"{where} ({op}) order: must be one of {', '.join(TOUCH_ORDERS)}"
                )
            args[k] = v
        else:
            if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", v):
                raise FidelityError(f"{where} ({op}) {k}: must be a plain name ([A-Za-z0-9._-])")
            args[k] = v
    return Step(op=op, task=task, args=args)


def parse_metric(spec: Any, phases: list[str], where: str) -> Metric:
    """Reads one metric spec (see :class:`Metric`)."""
    m = _METRIC_RE.match(str(spec))
    if not m:
        raise FidelityError(
            f"{where}: '{spec}' is not a metric like vmstat.pgscan_file or memcg.cache@write"
        )
    source = m.group("source")
    if source not in SOURCES:
        raise FidelityError(f"{where}: '{spec}': unknown source '{source}' ({', '.join(SOURCES)})")
    phase = m.group("phase")
    if phase is not None and phase not in phases:
        raise FidelityError(f"{where}: '{spec}': no phase '{phase}' (phases: {', '.join(phases)})")
    if m.group("field") and source != "trace":
        raise FidelityError(f"{where}: '{spec}': only trace metrics take a :FIELD<N filter")
    if source == "buddy" and m.group("name") not in BUDDY_METRICS:
        raise FidelityError(f"{where}: '{spec}': buddy metrics are {', '.join(BUDDY_METRICS)}")
    if source == "time" and m.group("name") != "seconds":
        raise FidelityError(f"{where}: '{spec}': the time metric is time.seconds")
    return Metric(
        spec=str(spec),
        source=source,
        name=m.group("name"),
        phase=phase,
        field=m.group("field"),
        cmp=m.group("cmp"),
        value=int(m.group("value")) if m.group("value") else None,
    )


def workload_sha256(
    cgroup_limit: int | None,
    sysctl: dict[str, int],
    tasks: dict[str, TaskDef],
    phases: list[Phase],
    trace: list[str],
    files: list[tuple[str, int]] | None = None,
    swap_size: int | None = None,
    zswap: bool = False,
) -> str:
    """A hash of what the real run does (not of the metrics, which only read its snapshots)."""
    what: dict[str, Any] = {
        "cgroup": cgroup_limit,
        "sysctl": sysctl,
        "tasks": [[t.name, t.cgroup] for t in tasks.values()],
        "phases": [[p.name, [[s.op, s.task, s.args] for s in p.steps]] for p in phases],
        "trace": trace,
    }
    if files:
        # Only experiments with files hash them: the others keep their recordings' hash.
        what["files"] = [list(f) for f in files]
    if swap_size is not None:
        what["swap"] = swap_size
    if zswap:
        what["zswap"] = True
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _parse_files(raw: Any, where: str) -> list[tuple[str, int]]:
    """The ``[[file]]`` tables: (name, size) of each file on the disk before the run."""
    if not isinstance(raw, list):
        raise FidelityError(f"{where}: write each file as a [[file]] table")
    files: list[tuple[str, int]] = []
    for i, f in enumerate(raw):
        if not isinstance(f, dict):
            raise FidelityError(f"{where}: file[{i}] must be a table")
        _check_keys(f, ("name", "size"), f"{where}: file[{i}]")
        name = f.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name):
            raise FidelityError(f"{where}: file[{i}]: name must be a plain name ([A-Za-z0-9._-])")
        if name in [n for n, _ in files]:
            raise FidelityError(f"{where}: file[{i}]: '{name}' is declared twice")
        if "size" not in f:
            raise FidelityError(f"{where}: file[{i}]: 'size' is required")
        files.append((name, _size(f["size"], f"{where}: file[{i}] size")))
    return files


def parse_experiment(text: str, path: Path) -> Experiment:
    """Parses an experiment's TOML text; raises FidelityError with one line."""
    where = path.name
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise FidelityError(f"{where}: {e}") from None
    _check_keys(
        data,
        (
            "name",
            "description",
            "notes",
            "cgroup",
            "sysctl",
            "file",
            "swap",
            "task",
            "phase",
            "metrics",
            "trace",
            "vmsim_duration",
            "timeout",
        ),
        where,
    )
    name = data.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise FidelityError(f"{where}: name must be 1-48 characters of [a-z0-9-]")
    if path.suffix == ".toml" and path.stem != name:
        raise FidelityError(f"{where}: name '{name}' must match the file name")
    tasks: dict[str, TaskDef] = {}
    for i, t in enumerate(data.get("task", [])):
        if not isinstance(t, dict):
            raise FidelityError(f"{where}: task[{i}] must be a table")
        _check_keys(t, ("name", "cgroup"), f"{where}: task[{i}]")
        tn = t.get("name")
        if not isinstance(tn, str) or not re.fullmatch(r"[a-z0-9_-]{1,15}", tn) or tn in tasks:
            raise FidelityError(f"{where}: task[{i}]: name must be a new 1-15 character name")
        cg = t.get("cgroup", False)
        if not isinstance(cg, bool):
            raise FidelityError(f"{where}: task '{tn}': cgroup must be true or false")
        tasks[tn] = TaskDef(tn, cg)
    if not tasks:
        raise FidelityError(f"{where}: at least one [[task]] is needed")
    cgroup_limit = None
    if "cgroup" in data:
        cg = data["cgroup"]
        if not isinstance(cg, dict):
            raise FidelityError(f"{where}: [cgroup] must be a table")
        _check_keys(cg, ("limit_in_bytes",), f"{where}: [cgroup]")
        if "limit_in_bytes" in cg:
            cgroup_limit = _size(cg["limit_in_bytes"], f"{where}: [cgroup] limit_in_bytes")
            if cgroup_limit < 4 << 20:
                raise FidelityError(f"{where}: [cgroup] limit_in_bytes must be at least 4MiB")
    elif any(t.cgroup for t in tasks.values()):
        raise FidelityError(f"{where}: tasks run in the cgroup but there is no [cgroup] table")
    swap_size = None
    zswap = False
    if "swap" in data:
        sw = data["swap"]
        if not isinstance(sw, dict):
            raise FidelityError(f"{where}: [swap] must be a table")
        _check_keys(sw, ("size", "zswap"), f"{where}: [swap]")
        if not isinstance(sw.get("zswap", False), bool):
            raise FidelityError(f"{where}: [swap] zswap must be true or false")
        zswap = sw.get("zswap", False)
        if "size" not in sw:
            raise FidelityError(f"{where}: [swap] size is required")
        swap_size = _size(sw["size"], f"{where}: [swap] size")
        if not 40 << 10 <= swap_size <= 16 << 30:
            raise FidelityError(f"{where}: [swap] size must be from 40KiB to 16GiB")
    sysctl: dict[str, int] = {}
    for k, v in (data.get("sysctl") or {}).items():
        if not re.fullmatch(r"vm\.[a-z_]+", k):
            raise FidelityError(f"{where}: [sysctl] '{k}': only vm.* sysctls are set")
        if k in ("vm.nr_hugepages", "vm.compact_memory", "vm.drop_caches"):
            raise FidelityError(f"{where}: [sysctl] '{k}' is a step, not a setting")
        if isinstance(v, bool) or not isinstance(v, int):
            raise FidelityError(f"{where}: [sysctl] '{k}': the value must be an integer")
        sysctl[k] = v
    files = _parse_files(data.get("file", []), where)
    phases: list[Phase] = []
    for i, p in enumerate(data.get("phase", [])):
        if not isinstance(p, dict):
            raise FidelityError(f"{where}: phase[{i}] must be a table")
        _check_keys(p, ("name", "steps"), f"{where}: phase[{i}]")
        pn = p.get("name")
        if not isinstance(pn, str) or not _NAME_RE.match(pn) or pn in [x.name for x in phases]:
            raise FidelityError(f"{where}: phase[{i}]: name must be a new name of [a-z0-9-]")
        if pn == "start":
            raise FidelityError(f"{where}: phase[{i}]: 'start' is reserved")
        steps = tuple(
            _parse_step(s, f"{where}: phase '{pn}' step {j}", tasks)
            for j, s in enumerate(p.get("steps", []))
        )
        phases.append(Phase(pn, steps))
    if not phases:
        raise FidelityError(f"{where}: at least one [[phase]] is needed")
    if "cgroup" not in data and any(s.op == "cgroup_limit" for p in phases for s in p.steps):
        raise FidelityError(f"{where}: a cgroup_limit step needs a [cgroup] table")
    names = [p.name for p in phases]
    raw_metrics = data.get("metrics")
    if not isinstance(raw_metrics, list) or not raw_metrics:
        raise FidelityError(f"{where}: metrics must be a non-empty list")
    metrics = [parse_metric(m, names, f"{where}: metrics") for m in raw_metrics]
    if len({m.spec for m in metrics}) != len(metrics):
        raise FidelityError(f"{where}: a metric is listed twice")
    trace = data.get("trace", [])
    if not isinstance(trace, list) or not all(
        isinstance(t, str) and re.fullmatch(r"[a-z_]+:[a-z_0-9]+", t) for t in trace
    ):
        raise FidelityError(f'{where}: trace must list events like "kmem:mm_page_alloc_extfrag"')
    for m in metrics:
        if m.source == "trace" and m.name not in [t.split(":")[1] for t in trace]:
            raise FidelityError(f"{where}: metric '{m.spec}' counts an event not in trace")
    return Experiment(
        name=name,
        description=str(data.get("description", "")),
        notes=str(data.get("notes", "")),
        path=path,
        sha256=workload_sha256(cgroup_limit, sysctl, tasks, phases, trace, files, swap_size, zswap),
        tasks=list(tasks.values()),
        phases=phases,
        metrics=metrics,
        cgroup_limit=cgroup_limit,
        swap_size=swap_size,
        zswap=zswap,
        sysctl=sysctl,
        files=files,
        trace=trace,
        vmsim_duration=parse_duration(data.get("vmsim_duration", "600s"), f"{where}: duration"),
        timeout=parse_duration(data.get("timeout", "900s"), f"{where}: timeout"),
    )


def load_experiment(path: Path) -> Experiment:
    """Reads one experiment file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise FidelityError(f"{path}: cannot read: {e.strerror or e}") from None
    return parse_experiment(text, path)


def load_experiments(directory: Path | None = None) -> dict[str, Experiment]:
    """Every experiment of a directory, by name, in name order."""
    d = directory or experiments_dir()
    if not d.is_dir():
        raise FidelityError(f"{d}: no such directory of experiments")
    out = {}
    for p in sorted(d.glob("*.toml")):
        e = load_experiment(p)
        out[e.name] = e
    if not out:
        raise FidelityError(f"{d}: no experiments (*.toml) in it")
    return out
