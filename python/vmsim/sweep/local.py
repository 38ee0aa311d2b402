"""Runs a sweep's runs in worker processes on the local cores.

Each worker is a fresh interpreter (``python -m vmsim.sweep.local FD``:
nothing of the driver is inherited, and a caller's script is not imported
again, as ``multiprocessing``'s spawn would) with one socket to the driver:
the driver sends it a run, it sends back the row. The driver knows which run
each worker holds, so when a worker dies (the host's OOM killer, a kill -9)
exactly that run is given to a new worker, up to ``MAX_RETRIES`` more times,
and then recorded as failed. A worker exits when its socket closes, so
workers do not outlive a killed driver by more than the run they are in.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
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


def worker_main(fd: int) -> None:
    """A worker: runs what the driver sends on socket ``fd`` until it closes or None arrives."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    conn = Connection(fd)
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
        except OSError:
            return


def worker_argv(fd: int) -> list[str]:
    """The command line of a worker talking on ``fd``."""
    return [sys.executable, "-m", "vmsim.sweep.local", str(fd)]


def death(returncode: int | None) -> str:
    """How a worker process ended, in words."""
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (the host's OOM killer?)" if name == "SIGKILL" else ""
        return f"killed by {name}{hint}"
    return f"exited with code {returncode}"


@dataclass
class _Worker:
    process: subprocess.Popen
    conn: Connection
    run: Run | None = None


class LocalPool:
    """``jobs`` worker processes and the runs they hold."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.workers: list[_Worker] = []

    def _start_worker(self) -> _Worker:
        mine, theirs = socket.socketpair()
        with theirs:
            p = subprocess.Popen(
                worker_argv(theirs.fileno()), pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL
            )
        w = _Worker(p, Connection(mine.detach()))
        self.workers.append(w)
        return w

    def _retire(self, w: _Worker) -> None:
        self.workers.remove(w)
        w.conn.close()
        try:
            w.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            w.process.kill()
            w.process.wait()

    def run(self, runs: Sequence[Run], on_row: OnRow, on_retry: OnRetry | None = None) -> None:
        """Runs every run, calling ``on_row(row)`` in the driver as each finishes."""
        todo: deque[tuple[Run, int]] = deque((r, 0) for r in runs)
        tries: dict[str, int] = {}
        try:
            idle = [self._start_worker() for _ in range(min(self.jobs, len(todo)))]
            while todo or any(w.run for w in self.workers):
                while idle and todo:
                    w = idle.pop()
                    w.run, tries_so_far = todo.popleft()
                    tries[w.run.key] = tries_so_far
                    try:
                        w.conn.send(w.run)
                    except OSError:  # the worker died before it took the run
                        self._replace_dead(w, todo, tries, on_row, on_retry, idle)
                busy = [w for w in self.workers if w.run is not None]
                ready = wait([w.conn for w in busy])
                for w in busy:
                    if w.conn not in ready:
                        continue
                    try:
                        row = w.conn.recv()
                    except (EOFError, OSError):  # the worker died
                        self._replace_dead(w, todo, tries, on_row, on_retry, idle)
                        continue
                    w.run = None
                    on_row(row)
                    idle.append(w)
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
        run = w.run
        assert run is not None
        self._retire(w)
        how = death(w.process.returncode)
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
            if w.run is not None:
                w.process.kill()
            else:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            self._retire(w)


if __name__ == "__main__":
    worker_main(int(sys.argv[1]))
