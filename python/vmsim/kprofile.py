"""The running kernel's own time in its functions, sampled with perf (``vmsim calibrate``'s
kernel-path family): ``perf record -e cpu-clock -c PERIOD -g -C CPU`` while a
microbenchmark runs pinned to CPU, the samples' kernel call chains read back with
``perf script``. A function's inclusive time is its samples times the period; a function
whose caller holds a spinlock with interrupts off (zone->lock, lru_lock) gets the
samples of that section at its ``spin_unlock_irqrestore``, still inside the caller.
Per-call figures divide such a time by a count the benchmark itself knows (pages
faulted, per-CPU list counts read from /proc/zoneinfo, objects counted by
tracepoints in a separate run). One ``Recording`` serves many microbenchmarks: its
samples carry CLOCK_MONOTONIC times (``perf record -k``) and each benchmark's window
of time names its own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# One sample per millisecond of CPU time. A section with interrupts off must be shorter
# than the period for its samples to be kept whole (a sample due inside it is taken once,
# at its end): with one per 50 µs, the per-page time of free_pcppages_bulk's drains came
# out at 23 ns against 54-63 ns with 250 µs and 1 ms here, its long drains undercounted;
# at that rate the sampling's own interrupts also slowed the code they hit
# (__alloc_frozen_pages 172-182 ns a page against 109-122 ns).
PERIOD_NS = 1_000_000


def unavailable() -> str | None:
    """Why kernel sampling cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root (perf record -C of kernel call chains)"
    if shutil.which("perf") is None:
        return "perf not found (Debian's linux-perf; `make perf` installs it)"
    return None


@dataclass
class Samples:
    """Kernel call chains of the samples taken on one CPU, leaf first."""

    stacks: list[list[str]]
    period_ns: int

    def ns(self, fn: str, without: Iterable[str] = ()) -> float:
        """Time inside ``fn`` [ns], less the samples whose chain has one of ``without``
        called (directly or not) from ``fn``."""
        minus = tuple(without)
        n = 0
        for s in self.stacks:
            if fn not in s:
                continue
            below = s[: s.index(fn)]
            if not any(m in below for m in minus):
                n += 1
        return n * self.period_ns

    def count(self, fn: str) -> int:
        """Samples inside ``fn``."""
        return sum(1 for s in self.stacks if fn in s)


def parse_script(text: str) -> list[tuple[float, list[str]]]:
    """The samples of ``perf script -F time,ip,sym`` output: (time [s], call chain leaf
    first) each; a sample is a header line (``TIME:``), then one ``ADDRESS SYMBOL`` line a
    frame, then a blank line."""
    samples: list[tuple[float, list[str]]] = []
    cur: list[str] | None = None
    when = 0.0
    for line in text.splitlines():
        if not line.strip():
            if cur is not None:
                samples.append((when, cur))
            cur = None
        elif cur is None:
            cur = []
            try:
                when = float(line.split()[-1].rstrip(":"))
            except ValueError:
                when = 0.0
        else:
            parts = line.split(None, 1)
            cur.append(parts[1].strip() if len(parts) > 1 else "[unknown]")
    if cur is not None:
        samples.append((when, cur))
    return samples


def by_window(
    samples: list[tuple[float, list[str]]], windows: list[tuple[str, float, float]]
) -> dict[str, list[list[str]]]:
    """The call chains of the samples taken inside each named window [start, end]; a
    sample outside every window belongs to none."""
    out: dict[str, list[list[str]]] = {name: [] for name, _, _ in windows}
    for when, stack in samples:
        for name, t0, t1 in windows:
            if t0 <= when <= t1:
                out[name].append(stack)
                break
    return out


def _now() -> float:
    """CLOCK_MONOTONIC [s], the clock perf record stamps its samples with (-k)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


class Recording:
    """``perf record`` of one CPU's kernel call chains for as long as the ``with`` block
    lasts; ``window(name, run)`` runs ``run()`` and names the samples taken meanwhile,
    which ``samples(name)`` gives once the block has ended. One recording serves many
    microbenchmarks: perf starts and stops once."""

    def __init__(self, cpu: int, period_ns: int = PERIOD_NS) -> None:
        self.cpu, self.period_ns = cpu, period_ns
        self.windows: list[tuple[str, float, float]] = []
        self._by_name: dict[str, list[list[str]]] = {}
        self._stack = ExitStack()

    def __enter__(self) -> Recording:
        tmp = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="vmsim-kprofile-")))
        self._data = tmp / "perf.data"
        self._rec = subprocess.Popen(
            [
                "perf",
                "record",
                "-q",
                "-k",
                "CLOCK_MONOTONIC",
                "-e",
                "cpu-clock",
                "-c",
                str(self.period_ns),
                "-g",
                "-C",
                str(self.cpu),
                "-o",
                str(self._data),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_started(self._rec, self._data)
        return self

    def window(self, name: str, run: Callable[[], T]) -> T:
        """Runs ``run()``; the samples taken meanwhile are ``name``'s."""
        t0 = _now()
        try:
            return run()
        finally:
            self.windows.append((name, t0, _now()))

    def __exit__(self, *exc: object) -> None:
        try:
            self._rec.send_signal(signal.SIGINT)
            _, err = self._rec.communicate(timeout=120)
            if exc[0] is not None:
                return
            if self._rec.returncode not in (0, -signal.SIGINT) or not self._data.exists():
                last = (err.strip().splitlines() or [f"exit {self._rec.returncode}"])[-1]
                raise OSError(f"perf record: {last}")
            out = subprocess.run(
                ["perf", "script", "-i", str(self._data), "-F", "time,ip,sym"],
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            if out.returncode != 0:
                last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
                raise OSError(f"perf script: {last}")
            self._by_name = by_window(parse_script(out.stdout), self.windows)
        finally:
            self._stack.close()

    def samples(self, name: str) -> Samples:
        """The samples of window ``name`` (after the recording)."""
        return Samples(self._by_name.get(name, []), self.period_ns)


def _wait_started(rec: subprocess.Popen[str], data: Path, timeout: float = 10.0) -> None:
    """Waits until perf has opened its events (it has written its data file's header)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if rec.poll() is not None:
            return
        if data.exists() and data.stat().st_size > 0:
            time.sleep(0.2)
            return
        time.sleep(0.05)


def _trace_mounts() -> set[str]:
    """The mount points of tracefs and debugfs (/proc/mounts)."""
    out = set()
    for line in Path("/proc/mounts").read_text().splitlines():
        f = line.split()
        if len(f) > 2 and f[2] in ("tracefs", "debugfs"):
            out.add(f[1])
    return out


@contextmanager
def mounts_kept() -> Iterator[None]:
    """Unmounts, on return, the tracefs and debugfs that perf mounted meanwhile (it mounts
    tracefs to read a tracepoint's format and leaves it)."""
    before = _trace_mounts()
    try:
        yield
    finally:
        # Deepest first: tracefs may sit on a debugfs perf mounted too.
        for path in sorted(_trace_mounts() - before, key=len, reverse=True):
            subprocess.run(["umount", path], capture_output=True, check=False)


def tracepoint_counts(
    run: Callable[[], T], cpu: int, events: list[str]
) -> tuple[T, dict[str, int]]:
    """Runs ``run()`` while ``perf stat`` counts ``events`` (tracepoints) on ``cpu``; its
    result and the counts, by event name without its system."""
    with mounts_kept():
        rec = subprocess.Popen(
            ["perf", "stat", "-x,", "-C", str(cpu), "-e", ",".join(events)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(0.3)
            result = run()
        finally:
            rec.send_signal(signal.SIGINT)
            _, err = rec.communicate(timeout=60)
    counts: dict[str, int] = {}
    for line in err.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[0].isdigit():
            counts[f[2].split(":")[-1]] = int(f[0])
    missing = [e for e in events if e.split(":")[-1] not in counts]
    if missing:
        raise OSError(f"perf stat: no count of {', '.join(missing)}")
    return result, counts
