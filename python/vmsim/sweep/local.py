"""Runs a sweep's runs in worker processes on the local cores.

Each worker is a process of its own (``spawn``: nothing of the driver's state
is inherited) with one pipe to the driver: the driver sends it a run, it sends
back the row. The driver knows which run each worker holds, so when a worker
dies (the host's OOM killer, a kill -9) exactly that run is given to a new
worker, up to ``MAX_RETRIES`` more times, and then recorded as failed. A
worker exits when its pipe closes, so workers do not outlive a killed driver
by more than the run they are in.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from vmsim.sweep.grid import Run
from vmsim.sweep.worker import error_row, execute

#: Further tries of a run whose worker died (Ray's ``max_retries`` on a cluster).
MAX_RETRIES = 2

OnRow = Callable[[dict[str, Any]], None]
OnRetry = Callable[[Run, str], None]


def _worker_main(conn: Connection) -> None:
    """A worker: runs what the driver sends until the pipe closes or None arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    while True:
        try:
            run = conn.recv()
        except (EOFError, OSError):
            return
        if run is None:
            return
        row = execute(run)
        try:
            conn.send(row)
        except (BrokenPipeError, OSError):
            return


def death(exitcode: int | None) -> str:
    """How a worker process ended, in words."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (the host's OOM killer?)" if name == "SIGKILL" else ""
        return f"killed by {name}{hint}"
    return f"exited with code {exitcode}"


@dataclass
class _Worker:
    process: Any
    conn: Connection
    run: Run | None = None


class LocalPool:
    """``jobs`` worker processes and the runs they hold."""

    def __init__(self, jobs: int) -> None:
        self._ctx = mp.get_context("spawn")
        self.jobs = jobs
        self.workers: list[_Worker] = []

    def _start_worker(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        p = self._ctx.Process(target=_worker_main, args=(child,), daemon=True)
        p.start()
        child.close()
        w = _Worker(p, parent)
        self.workers.append(w)
        return w

    def _retire(self, w: _Worker) -> None:
        self.workers.remove(w)
        w.conn.close()
        w.process.join(timeout=5)

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        return [w.process.pid for w in self.workers]

    def run(self, runs: Sequence[Run], on_row: OnRow, on_retry: OnRetry | None = None) -> None:
        """Runs every run, calling ``on_row(row)`` in the driver as each finishes."""
        todo: deque[tuple[Run, int]] = deque((r, 0) for r in runs)
        tries: dict[str, int] = {}
        try:
            for _ in range(min(self.jobs, len(todo))):
                self._start_worker()
            idle = list(self.workers)
            while todo or any(w.run for w in self.workers):
                while idle and todo:
                    w = idle.pop()
                    w.run, tries_so_far = todo.popleft()
                    tries[w.run.key] = tries_so_far
                    w.conn.send(w.run)
                busy = [w for w in self.workers if w.run is not None]
                ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
                for w in busy:
                    if w.conn in ready or (w.process.sentinel in ready and w.conn.poll()):
                        try:
                            row = w.conn.recv()
                        except (EOFError, OSError):
                            row = None
                        if row is not None:
                            w.run = None
                            on_row(row)
                            idle.append(w)
                            continue
                    if w.process.sentinel in ready or w.conn in ready:
                        w.process.join(timeout=5)
                        self._replace_dead(w, todo, tries, on_row, on_retry, idle)
        finally:
            self.close()

    def _replace_dead(
        self,
        w: _Worker,
        todo: deque[tuple[Run, int]],
        tries: dict[str, int],
        on_row: OnRow,
        on_retry: OnRetry | None,
        idle: list[_Worker],
    ) -> None:
        """A worker died holding a run: try the run again or record it; start a new worker."""
        run, how = w.run, death(w.process.exitcode)
        assert run is not None
        self._retire(w)
        n = tries[run.key] + 1
        if n <= MAX_RETRIES:
            if on_retry is not None:
                on_retry(run, how)
            todo.appendleft((run, n))
        else:
            on_row(error_row(run, f"worker process {how}, {n} times"))
        if todo:
            idle.append(self._start_worker())

    def close(self) -> None:
        """Stops every worker (a run in progress is abandoned)."""
        for w in list(self.workers):
            try:
                w.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            if w.run is not None:
                w.process.kill()
            self._retire(w)
