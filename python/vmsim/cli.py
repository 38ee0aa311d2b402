"""The ``vmsim`` command line.

Every error a user can cause prints one line, ``vmsim: error: …``, and exits
with code 2; nothing the user wrote or produced is overwritten half-way.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vmsim import api, atomic
from vmsim._vmsim import InvariantError, ScenarioError
from vmsim.atomic import shown
from vmsim.compare import CompareError, compare_results, load_results
from vmsim.sweep.grid import SweepError

if TYPE_CHECKING:
    from vmsim.calibrate import Calibration

EXIT_USAGE = 2


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit code 2."""


#: The longest error message printed [characters]; a longer one ends in "…".
MESSAGE_MAX = 1000


def _one_line(msg: str) -> str:
    """A message as one line of at most MESSAGE_MAX characters."""
    return shown(" ".join(msg.splitlines()), MESSAGE_MAX)


def _fail(msg: str) -> None:
    click.echo(f"vmsim: error: {_one_line(msg)}", err=True)
    sys.exit(EXIT_USAGE)


def _progress_reporter() -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A rich progress bar on a terminal for runs longer than a second; nothing when piped."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    start = time.monotonic()
    shown: list[tuple[Progress, TaskID]] = []  # the bar and its task, once shown

    def update(now: int, end: int) -> None:
        if not shown:
            if time.monotonic() - start < 1.0:
                return
            bar = Progress(
                TextColumn("simulating"),
                BarColumn(),
                TextColumn("{task.completed:.1f}/{task.total:.1f} s simulated"),
                TimeElapsedColumn(),
                transient=True,
                console=Console(stderr=True),
            )
            bar.start()
            shown.append((bar, bar.add_task("run", total=end / 1e9)))
        bar, task = shown[0]
        bar.update(task, completed=now / 1e9)

    def close() -> None:
        for bar, _ in shown:
            bar.stop()

    return update, close


def _write_dir_atomic(out: Path, files: dict[str, str | bytes]) -> None:
    """Writes every file into ``out`` whole or not at all (:func:`vmsim.atomic.write_dir`)."""
    out = out.resolve()
    if not out.parent.is_dir():
        raise UserError(f"{out}: parent directory does not exist")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory")
    atomic.write_dir(out, files)


def _check_readable_file(path: str) -> None:
    """Raises UserError naming the problem if ``path`` is not a regular file."""
    try:
        st = os.stat(path)
    except OSError as e:
        why = "no such file" if e.errno == errno.ENOENT else atomic.reason(e)
        raise UserError(f"{shown(path)}: {why}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{shown(path)}: is a directory, not a scenario file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{shown(path)}: not a regular file")


def _check_costs(costs: str | None) -> None:
    """Raises UserError naming the problem if ``--costs`` names no usable cost profile."""
    if costs is None:
        return
    try:
        api.cost_profile(costs)
    except ScenarioError as e:
        raise UserError(f"--costs {e}") from None


def _check_output(option: str, path: Path | None, suffix: str = "", what: str = "") -> None:
    """Raises UserError before a run if the file ``path`` given to ``option`` cannot be
    written by :mod:`vmsim.atomic`'s rules (a directory, a link loop, no directory)."""
    if path is None:
        return
    if suffix and path.suffix.lower() != suffix:
        raise UserError(
            f"{option} {shown(path)}: {what} is written as {suffix[1:].upper()}; name it *{suffix}"
        )
    try:
        target, through = atomic.output_target(path)
    except atomic.OutputError as e:
        raise UserError(f"{option} {e}") from None
    if not through and not target.parent.is_dir():
        raise UserError(f"{option} {shown(path)}: directory {shown(target.parent)} does not exist")


def _check_output_dir(option: str, path: Path | None) -> None:
    """Raises UserError before a run if ``path`` cannot become or be an output directory."""
    problem = None if path is None else atomic.output_dir_problem(option, path)
    if problem:
        raise UserError(problem)


EXIT_CUT = 3  # a run cut short by --max-wall: partial results written
EXIT_INTERNAL = 70  # a bug in vmsim (EX_SOFTWARE): an internal error or a broken invariant
MAX_TRACE_EVENTS = 10_000_000  # trace lines kept (crates/vmsim-core/src/trace/tracer.rs)
MAX_STATE_CHANGES = 2_000_000  # timeline changes kept (crates/vmsim-core/src/engine/timeline.rs)


def _end_note(r: api.Result) -> str:
    """How the run ended, after the task counts: nothing when every task exited."""
    if r.cut is not None:
        return f"  [cut at {r.cut['at_seconds']:.3f} s: {r.cut['reason']}]"
    return "" if r.summary["completed"] else "  [time limit reached]"


def _report_limits(r: api.Result, trace: Path | None) -> None:
    """One line on stderr for each limit the run reached; exit code 3 when it was cut short
    (its results are written by then)."""
    dropped = r.data.get("trace_events_dropped")
    if dropped:
        click.echo(
            f"vmsim: {f'--trace {trace}' if trace else '--perfetto'}: the buffer is full at "
            f"{MAX_TRACE_EVENTS} events; "
            f"{dropped} later events were not recorded",
            err=True,
        )
    if r.cut is not None:
        click.echo(
            f"vmsim: run cut at simulated time {r.cut['at_seconds']:.3f} s: "
            f"{r.cut['reason']} (--max-wall); the results written cover the run up to there",
            err=True,
        )
        sys.exit(EXIT_CUT)


def _summary_text(r: api.Result) -> str:
    s = r.summary
    lines = [
        f"vmsim {r.data['vmsim_version']}  scenario {r.data['scenario']}  "
        f"kernel {r.kernel}  seed {r.data['seed']}",
        f"elapsed {s['elapsed_seconds']:.3f} s  user {s['user_seconds']:.3f} s  "
        f"sys {s['sys_seconds']:.3f} s  idle {s['idle_seconds']:.3f} s  "
        f"allocation stalls {s['alloc_stall_seconds']:.3f} s",
        f"tasks {s['tasks_started']} started, {s['oom_kills']} OOM-killed, "
        f"{s['fork_failures']} fork failures; {s['alloc_failures']} failed allocations"
        + _end_note(r),
        f"fragmentation: {s['extfrag_events']} extfrag events; mixed pageblocks "
        f"{s['mixed_pageblocks_max']} at most, {s['mixed_pageblocks']} at the end",
    ]
    if s["max_parallel_reclaimers"]:
        lines.append(
            f"direct reclaim: {s['max_parallel_reclaimers']} tasks at most at once, longest "
            f"try_to_free_pages {s['max_try_to_free_pages_ms']:.1f} ms, "
            f"{s['reclaim_throttled']} waits at the reclaimer limit"
        )
    for name, value in r.data.get("workload", {}).items():
        lines.append(f"workload: {name} {value:.3f}")
    return "\n".join(lines) + "\n"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(api.version(), prog_name="vmsim")
def main_group() -> None:
    """vmsim: a simulator of Linux kernel memory management.

    Describe a machine, a kernel and a workload in a TOML scenario; vmsim runs
    it in simulated time and prints what the kernel would show in /proc.
    """


@main_group.command("run")
@click.argument("scenario", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as one JSON object.")
@click.option("--seed", type=int, help="Override the scenario's seed.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one key, e.g. --set kernel.mobility_grouping=false (repeatable).",
)
@click.option(
    "--costs",
    "costs",
    metavar="PROFILE",
    help="The cost profile: a built-in one's name (vmsim costs --list) or a profile file "
    "(.toml); replaces the scenario's costs key, under its own [cost] keys and --set.",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write vmstat, buddyinfo, pagetypeinfo, slabinfo, meminfo, result.json and the time "
    "series (timeseries.parquet) into DIR.",
)
@click.option(
    "--csv",
    "as_csv",
    is_flag=True,
    help="With --output-dir: the time series as timeseries.csv too.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw free pages, watermarks and pageblocks over time into a PNG.",
)
@click.option(
    "--map",
    "pbmap_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw the pageblock map at the end of the run (type and contents of every block) "
    "into a PNG.",
)
@click.option("--vmstat", "full_vmstat", is_flag=True, help="Print all of /proc/vmstat.")
@click.option("--meminfo", "meminfo", is_flag=True, help="Print /proc/meminfo at the end.")
@click.option(
    "--memcg-stat",
    "memcg_stat",
    multiple=True,
    metavar="PATH",
    help="Print memory.stat of a declared memory cgroup ('/' for the root; repeatable).",
)
@click.option(
    "--trace",
    "trace",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the tracepoints to FILE as ftrace text.",
)
@click.option(
    "--perfetto",
    "perfetto_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the run as a timeline Perfetto's UI opens (Chrome JSON trace events): "
    "tracks per task and kernel thread, reclaim and compaction spans, memory counters.",
)
@click.option(
    "--trace-format",
    type=click.Choice(["modern", "legacy"]),
    default="modern",
    show_default=True,
    help="6.18 formats, or the 2.6.35 ones trace-vmscan-postprocess.pl parses.",
)
@click.option(
    "--events",
    "events",
    multiple=True,
    metavar="LIST",
    help="Trace these events, as set_event / trace-cmd -e select them: SYSTEM, "
    "SYSTEM:EVENT, all (comma-separated; repeatable). Default: vmscan, compaction, writeback.",
)
@click.option(
    "--max-wall",
    "max_wall",
    type=float,
    metavar="SECONDS",
    help="Wall-clock budget: when spent, the run stops there, its partial results are "
    "written and vmsim exits with code 3.",
)
@click.option(
    "--check-invariants",
    is_flag=True,
    help="Check the kernel's invariants (frame states, counters, memcg charges, LRU sizes) "
    "at every sample; the first one broken is an internal error (exit 70).",
)
def run_cmd(
    scenario: str | None,
    as_json: bool,
    seed: int | None,
    sets: tuple[str, ...],
    costs: str | None,
    output_dir: Path | None,
    as_csv: bool,
    plot: Path | None,
    pbmap_path: Path | None,
    full_vmstat: bool,
    meminfo: bool,
    memcg_stat: tuple[str, ...],
    trace: Path | None,
    perfetto_path: Path | None,
    trace_format: str,
    events: tuple[str, ...],
    max_wall: float | None,
    check_invariants: bool,
) -> None:
    """Run SCENARIO (a TOML file; the built-in default without one)."""
    overrides = {}
    for s in sets:
        if "=" not in s:
            raise UserError(f"--set {s}: expected KEY=VALUE")
        k, v = s.split("=", 1)
        overrides[k.strip()] = api.parse_set_value(v.strip(), k.strip())
    if scenario is not None:
        _check_readable_file(scenario)
    _check_costs(costs)
    _check_output("--plot", plot, ".png", "the picture")
    _check_output("--map", pbmap_path, ".png", "the map")
    _check_output("--trace", trace)
    if events and trace is None:
        raise UserError("--events selects what --trace records: give --trace FILE too")
    _check_output("--perfetto", perfetto_path, ".json", "the timeline")
    if perfetto_path is not None and trace is not None:
        if trace_format != "modern":
            raise UserError("--perfetto reads the trace in the modern format: drop --trace-format")
        if atomic.output_target(trace)[1]:
            raise UserError(f"--perfetto reads --trace back: {shown(trace)} is not a regular file")
    _check_output_dir("--output-dir", output_dir)
    if as_csv and output_dir is None:
        raise UserError("--csv writes into the --output-dir: give --output-dir DIR too")
    if max_wall is not None and not (0 < max_wall <= 1e9):
        raise UserError(f"--max-wall {max_wall}: a number of seconds above 0 (at most 1e9)")
    update, close = _progress_reporter()
    tmp = timeline_tmp = None
    if perfetto_path is not None:
        import tempfile

        timeline_tmp = tempfile.TemporaryDirectory(prefix="vmsim-perfetto-")
        if trace is None:
            tmp = timeline_tmp
    try:
        r = api.run(
            Path(scenario) if scenario else None,
            seed=seed,
            overrides=overrides,
            progress=update,
            trace=trace if tmp is None else Path(tmp.name) / "trace.txt",
            timeline=None if timeline_tmp is None else Path(timeline_tmp.name) / "timeline.json",
            trace_format=trace_format,
            events=list(events) if events else None,
            max_wall=max_wall,
            check_invariants=check_invariants,
            costs=costs,
            # The pageblock map is a walk of every pageblock; only these outputs hold it.
            pageblocks=bool(as_json or output_dir or pbmap_path or perfetto_path or plot),
        )
        if perfetto_path is not None:
            from vmsim import perfetto

            source = Path(tmp.name) / "trace.txt" if tmp is not None else trace
            assert source is not None
            assert timeline_tmp is not None
            timeline = json.loads((Path(timeline_tmp.name) / "timeline.json").read_text())
            full_at = timeline.get("changes_full_at")
            if full_at is not None:
                click.echo(
                    f"vmsim: --perfetto: the timeline holds its maximum of {MAX_STATE_CHANGES} "
                    f"changes of state; the task state lanes stop at simulated time "
                    f"{full_at / 1e9:.3f} s",
                    err=True,
                )
            try:
                perfetto.write(r.data, source, perfetto_path, timeline)
            except perfetto.PerfettoError as e:
                raise UserError(f"--perfetto: {e}") from None
    finally:
        close()
        if timeline_tmp is not None:
            timeline_tmp.cleanup()
    if output_dir is not None:
        from vmsim import series

        table = series.frame(r.data)
        files: dict[str, str | bytes] = {
            "result.json": r.json_text,
            "timeseries.parquet": series.to_parquet(table),
            "vmstat": r.proc["vmstat"],
            "buddyinfo": r.proc["buddyinfo"],
            "pagetypeinfo": r.proc["pagetypeinfo"],
            "slabinfo": r.proc["slabinfo"],
            "meminfo": r.proc["meminfo"],
        }
        if as_csv:
            files["timeseries.csv"] = series.to_csv(table)
        _write_dir_atomic(output_dir, files)
    if plot is not None:
        from vmsim import plots

        plots.save_atomic(plots.timeseries_figure([r.data]), plot)
    if pbmap_path is not None:
        from vmsim import pbmap

        pbmap.save_atomic(pbmap.pageblock_map_figure([r.data]), pbmap_path)
    if as_json:
        click.echo(r.json_text)
        _report_limits(r, trace)
        return
    out = [_summary_text(r), "==> /proc/buddyinfo <==", r.proc["buddyinfo"]]
    out += ["==> /proc/pagetypeinfo <==", r.proc["pagetypeinfo"]]
    if meminfo:
        out += ["==> /proc/meminfo <==", r.proc["meminfo"]]
    if full_vmstat:
        out += ["==> /proc/vmstat <==", r.proc["vmstat"]]
    else:
        out += ["==> /proc/vmstat: counters changed during the run <=="]
        out += [f"{k} {v}" for k, v in r.data["vmstat_delta"].items()]
    groups = (r.data.get("memcg") or {}).get("groups", {})
    for path in memcg_stat:
        if path not in groups:
            known = ", ".join(groups) or "none: the scenario declares no [[cgroup]]"
            raise UserError(
                f"--memcg-stat {shown(path)}: no such memory cgroup (known: {shown(known)})"
            )
        group_dir = "" if path == "/" else path + "/"
        memcg_events = groups[path].get("events")
        # cgroup v2 groups live at the top of /sys/fs/cgroup; v1's under memory/.
        base = "/sys/fs/cgroup/" if memcg_events is not None else "/sys/fs/cgroup/memory/"
        out += [f"==> {base}{group_dir}memory.stat <=="]
        out += [f"{k} {v}" for k, v in groups[path]["stat"].items()]
        if memcg_events is not None:
            out += [f"==> {base}{group_dir}memory.events <=="]
            out += [f"{k} {v}" for k, v in memcg_events.items()]
    click.echo("\n".join(out).rstrip("\n"))
    _report_limits(r, trace)


@main_group.command("compare")
@click.argument("results", nargs=-1, required=True)
def compare_cmd(results: tuple[str, ...]) -> None:
    """Compare run results as an mmtests table.

    Each RESULT is a JSON file written by `vmsim run --json` (or a JSON list of
    several runs), optionally named: NAME=run1.json,run2.json; or a sweep's
    Parquet file: every point a column, or [NAME=]FILE.parquet:KEY=VALUE[:KEY=VALUE]
    for the runs of one point.
    """
    click.echo(compare_results(load_results(list(results))).rstrip("\n"))


def _sweep_progress() -> tuple[Callable[[int, int, int], None] | None, Callable[[], None]]:
    """A rich progress bar over the sweep's runs with its ETA on a terminal; nothing when piped."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs, {task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        transient=True,
        console=Console(stderr=True),
    )
    state: dict[str, object] = {}

    def update(done: int, total: int, failed: int) -> None:
        if "task" not in state:
            bar.start()
            state["task"] = bar.add_task("sweep", total=total, failed=0)
        bar.update(state["task"], completed=done, failed=failed)  # type: ignore[arg-type]

    def close() -> None:
        if "task" in state:
            bar.stop()

    return update, close


def _sweep_seeds(seeds: int | None, seed_list: str | None, runs: int | None) -> list[int] | None:
    """The seeds of --seeds N, --runs N (the same, as vmsim reproduce names it) or --seed-list."""
    from vmsim.sweep import parse_seed_list

    given = [o for o, v in (("--seeds", seeds), ("--runs", runs), ("--seed-list", seed_list)) if v]
    if len(given) > 1:
        raise UserError(f"{' and '.join(given)}: give one of them")
    n = seeds if seeds is not None else runs
    if n is not None:
        if n < 1:
            raise UserError(f"{given[0] if given else '--seeds'} {n}: at least 1")
        return list(range(1, n + 1))
    return parse_seed_list(seed_list) if seed_list is not None else None


def _sweep_summary(report, output: Path, points: int) -> str:
    """What a sweep did, for people: counts, failures by error, wall time."""
    lines = [
        f"sweep: {report.total} runs ({points} point{'s' if points != 1 else ''}) in {output}: "
        f"{report.ran} ran, "
        f"{report.already} were there, {report.failed} failed"
        + (f", {report.retried} retried after their worker died" if report.retried else "")
    ]
    for error, n in report.failures.items():
        lines.append(f"  {n} failed: {error}")
    rate = report.ran / report.wall_seconds if report.wall_seconds else 0.0
    lines.append(
        f"wall {report.wall_seconds:.1f} s, {report.jobs} workers, {rate:.2f} runs per second"
    )
    return "\n".join(lines)


@main_group.command("sweep")
@click.argument("scenario", required=False)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=V1,V2,…",
    help="Values of one key, e.g. --set machine.memory=4GiB,8GiB or "
    "--set kernel.watermark_boost_factor=range(0,30001,15000) (repeatable; every "
    "combination is run).",
)
@click.option(
    "--costs",
    "costs",
    metavar="PROFILE",
    help="The cost profile of every run: a built-in one's name or a profile file (.toml); "
    "--set costs=A,B sweeps over profiles.",
)
@click.option("--seeds", type=int, help="Run every point with seeds 1..N.")
@click.option("--seed-list", help="Run every point with these seeds: 1,5,9 or range(1,11).")
@click.option("--runs", type=int, help="The same as --seeds N (the name vmsim reproduce uses).")
@click.option(
    "-j",
    "--jobs",
    type=int,
    help="Worker processes (default: one per core); with --ray and no address, the CPUs "
    "of the local Ray instance.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("sweep.parquet"),
    show_default=True,
    help="The Parquet file of the results; runs already in it are not run again.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[ADDRESS]",
    help="Run as Ray tasks on the cluster at ADDRESS (ray start --head prints it), or on a "
    "local Ray instance started for the sweep when no address is given.",
)
@click.option("--retry-failed", is_flag=True, help="Run again the runs recorded as failed.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def sweep_cmd(
    scenario: str | None,
    sets: tuple[str, ...],
    costs: str | None,
    seeds: int | None,
    seed_list: str | None,
    runs: int | None,
    jobs: int | None,
    output: Path,
    ray_address: str | None,
    retry_failed: bool,
    as_json: bool,
) -> None:
    """Run SCENARIO over a grid of knob values and seeds; one Parquet row per run.

    Every combination of the --set values is run with every seed, in parallel
    (worker processes, or Ray with --ray). Each finished run is saved at once,
    so the same command after an interruption runs only what is missing. A run
    that fails is recorded with its error and the sweep goes on.
    """
    from vmsim import sweep as sw

    if ray_address is not None and ray_address.endswith(".toml") and scenario is None:
        scenario, ray_address = ray_address, ""  # `--ray SCENARIO`: a local Ray instance
    if scenario is not None:
        _check_readable_file(scenario)
    _check_costs(costs)
    grid = sw.parse_sets(sets)
    if costs is not None:
        if "costs" in grid:
            raise UserError("--costs and --set costs=…: give one of them")
        # A key of every point: the profile is read when the runs are planned.
        grid = {"costs": [costs], **grid}
    seed_values = _sweep_seeds(seeds, seed_list, runs)
    notes = (lambda m: click.echo(f"vmsim sweep: {m}", err=True)) if not as_json else None
    update, close = _sweep_progress()
    try:
        report = sw.sweep(
            Path(scenario) if scenario else None,
            grid,
            seeds=seed_values,
            jobs=jobs,
            ray=ray_address if ray_address else ray_address == "",
            output=output,
            retry_failed=retry_failed,
            progress=update,
            note=notes,
        )
    finally:
        close()
    points = report.table["scenario_sha256"].n_unique() if report.table.height else 0
    if as_json:
        click.echo(
            json.dumps(
                {
                    "output": str(output),
                    "runs": report.total,
                    "points": points,
                    "ran": report.ran,
                    "already": report.already,
                    "failed": report.failed,
                    "failures": report.failures,
                    "retried": report.retried,
                    "jobs": report.jobs,
                    "wall_seconds": report.wall_seconds,
                    "interrupted": report.interrupted,
                }
            )
        )
    else:
        click.echo(_sweep_summary(report, output, points))
    if report.interrupted:
        have = report.table.height
        click.echo(
            f"vmsim sweep: interrupted: {have} of {report.total} runs are in {output}; "
            f"the same command runs the other {report.total - have}",
            err=True,
        )
        sys.exit(130)


@main_group.command("sweep-plot")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--x", "x", required=True, help="The knob along the x axis.")
@click.option("--y", "y", required=True, help="The figure to plot, e.g. summary.extfrag_events.")
@click.option("--hue", help="A knob drawn as one line per value.")
@click.option(
    "--where",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only the runs with this knob value (repeatable).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("sweep.png"),
    show_default=True,
    help="The PNG to draw.",
)
def sweep_plot_cmd(
    results: Path,
    x: str,
    y: str,
    hue: str | None,
    filters: tuple[str, ...],
    output: Path,
) -> None:
    """Draw a figure (--y) against a knob (--x) from a sweep's RESULTS (Parquet): mean and
    spread over the seeds.

    Prints the table drawn: mean, standard deviation, min, max and runs per point.
    """
    from vmsim.sweep.plot import sweep_plot
    from vmsim.sweep.table import parse_filter

    if output.suffix.lower() != ".png":
        raise UserError(f"-o {output}: the picture is written as PNG; name it *.png")
    if not output.resolve().parent.is_dir():
        raise UserError(f"-o {output}: directory {output.parent} does not exist")
    parsed = [parse_filter(f, "--where") for f in filters]
    click.echo(sweep_plot(results, x, y, hue, parsed, output), nl=False)


@main_group.command("perfetto-plot")
@click.argument("timeline", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("timeline.png"),
    show_default=True,
    help="The PNG to draw.",
)
@click.option(
    "--lanes",
    "max_lanes",
    type=click.IntRange(1, 1000),
    default=40,
    show_default=True,
    help="Draw at most this many state lanes (kernel threads first, then tasks by pid).",
)
def perfetto_plot_cmd(timeline: Path, output: Path, max_lanes: int) -> None:
    """Draw a `vmsim run --perfetto` TIMELINE into a PNG with matplotlib: free pages per
    zone, the watermarks and boost, dirty and writeback pages, and one lane per task and
    kernel thread coloured by its state over time (docs/report.md)."""
    from vmsim import perfetto_plot

    _check_output("-o", output, ".png", "the picture")
    try:
        click.echo(perfetto_plot.plot(timeline, output, max_lanes), nl=False)
    except perfetto_plot.PerfettoPlotError as e:
        raise UserError(str(e)) from None


@main_group.command("report")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="The HTML file to write (self-contained: opens offline).",
)
def report_cmd(sources: tuple[str, ...], output: Path) -> None:
    """One self-contained HTML page of runs, reproductions or sweeps (docs/report.md).

    Each SOURCE is a `vmsim run --output-dir` directory or its result.json, a
    `vmsim reproduce --output-dir` directory, or a sweep's Parquet file.
    """
    from vmsim import report

    _check_output("-o", output, ".html", "the report")
    try:
        read = report.write_report(list(sources), output)
    except report.ReportError as e:
        raise UserError(str(e)) from None
    kinds = ", ".join(f"run {s.name}" if s.kind == "run" else s.name for s in read)
    click.echo(f"wrote {output}: {kinds}")


@main_group.command("bench")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--min-seconds", type=float, default=1.0, show_default=True, help="Time per micro-benchmark."
)
@click.option(
    "--replay-requests",
    type=click.IntRange(0, 10**9),
    default=20_000_000,
    show_default=True,
    help="Requests of the Zipf(1.2) access trace replayed (over a tenth as many pages, "
    "with a cache of a hundredth); 0 skips the replay figures.",
)
def bench_cmd(as_json: bool, min_seconds: float, replay_requests: int) -> None:
    """Measure the engine: allocator throughput, bytes per frame, simulation speed (and,
    each in a process of its own, speed, boot time and peak RSS of the default scenario, a
    swap-heavy memcg scenario and 1 TiB and 16 TiB machines), access-trace replay beside
    libCacheSim; and sweeps: parallel efficiency on two workers, Ray's overhead per task."""
    if not (0 < min_seconds <= 600):
        raise UserError(f"--min-seconds {min_seconds}: must be in (0, 600]")
    from vmsim import _vmsim
    from vmsim.reproduce.common import template_text

    data = json.loads(_vmsim.bench(min_seconds, throttle_scenario=template_text("throttle")))
    from vmsim.sweep import bench as sweep_bench

    eff, busy = sweep_bench.sweep_parallel_efficiency()
    data["sweep_parallel_efficiency"] = eff
    data["sweep_worker_busy_fraction"] = busy
    data["ray_overhead_ms_per_task"] = sweep_bench.ray_overhead_ms_per_task()
    if replay_requests:
        from vmsim import replay

        data.update(replay.bench_figures(replay_requests))
    from vmsim import bench_scale

    data["scale"] = bench_scale.run_all()
    if as_json:
        click.echo(json.dumps(data))
        return
    scale = data.pop("scale")
    targets = {
        "order0_ops_per_sec": (">=", 30e6),
        "mixed_ops_per_sec": (">=", 10e6),
        "bytes_per_frame": ("<=", 16),
        "sim_seconds_per_wall_second": ("", None),
        "reclaim_pages_scanned_per_sec": (">=", 10e6),
        "grouping_cost_ratio": ("", None),
        "throttle_repro_wall_seconds": ("<=", 60),
        "memcg_iter_groups_per_sec": (">=", 20e6),
        "files_created_per_sec": (">=", 1e6),
        "sweep_parallel_efficiency": (">=", 0.8),
        "ray_overhead_ms_per_task": ("<=", 50),
    }
    if data.get("libcachesim_slru_req_per_sec"):
        targets["replay_access_req_per_sec"] = (">=", data["libcachesim_slru_req_per_sec"])
    for k, v in data.items():
        op, target = targets.get(k, ("", None))
        shown_target = f"{target:,.0f}" if target is not None and target >= 1 else f"{target}"
        t = f"   (target {op} {shown_target})" if target is not None else ""
        if isinstance(v, str):
            click.echo(f"{k:32s} {v}")
            continue
        missing = "n/a (no Ray)" if k.startswith("ray") else "n/a"
        digits = 4 if k.endswith("_ratio") else 2
        cell = f"{v:>16,.{digits}f}" if v is not None else f"{missing:>16s}"
        click.echo(f"{k:32s} {cell}{t}")
    click.echo("\nspeed at every size (each case in a process of its own):")
    for name, row in scale.items():
        if "skipped" in row:
            click.echo(f"  {name:12s} skipped: {row['skipped']}")
            continue
        click.echo(
            f"  {name:12s} {row['sim_seconds_per_wall_second']:9.2f} sim s/wall s, "
            f"boot {row['boot_seconds']:.3f} s, wall {row['wall_seconds']:.2f} s, "
            f"peak RSS {row['peak_rss_bytes'] / 2**20:,.0f} MiB"
        )


@main_group.group("replay")
def replay_group() -> None:
    """Replay recorded data: page-access traces (access) through the kernel's page cache
    and LRU, kmem page events (kmem) through the page allocator."""


@replay_group.command("access")
@click.argument("trace")
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(["csv", "txt", "oracleGeneral", "vscsi"]),
    help="Trace format (libCacheSim's names); gzip and zstd files are read directly.",
)
@click.option(
    "--cache-size",
    required=True,
    help="Page-cache size(s), comma-separated (64MiB,128MiB): memory.max of the cache's group.",
)
@click.option(
    "--obj-id-col",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="csv: column of the object id (1-based).",
)
@click.option("--delimiter", default=",", show_default=True, help="csv: field separator.")
@click.option("--has-header", is_flag=True, help="csv: the first line is a header.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Write the miss-ratio curve (PNG).")
def replay_access_cmd(
    trace: str,
    fmt: str,
    cache_size: str,
    obj_id_col: int,
    delimiter: str,
    has_header: bool,
    as_json: bool,
    plot: str | None,
) -> None:
    """Replay a page-access trace through the kernel's page cache and LRU.

    Every request is one access to one 4 KiB page (vscsi: every page a request
    covers); each cache size is a kernel whose page cache is limited by a memory
    cgroup. Prints hit ratio, refaults, pages scanned and reclaimed per size.
    """
    from vmsim import replay

    try:
        pages = replay.cache_sizes(cache_size)
        report = replay.replay_access(
            trace, fmt, pages, obj_id_col=obj_id_col, delimiter=delimiter, has_header=has_header
        )
    except replay.ReplayError as e:
        raise UserError(str(e)) from None
    if as_json:
        click.echo(json.dumps(report))
    else:
        click.echo(replay.format_access(report))
    for line in replay.bad_input_lines(report):
        click.echo(f"vmsim: warning: {line}", err=True)
    if plot:
        replay.plot_mrc(report, plot)


@replay_group.command("kmem")
@click.argument("trace")
@click.argument("scenario", required=False)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=V1,V2,…",
    help="Override a key of the scenario; several values replay once each, side by side "
    "(--set kernel.watermark_boost_factor=0,15000).",
)
@click.option(
    "--interval",
    type=float,
    default=1.0,
    show_default=True,
    help="Sampling period in trace time [s].",
)
@click.option(
    "--workloads",
    is_flag=True,
    help="Run the scenario's workloads beside the replay (a background load).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    help="Write largest free order, mixed pageblocks and extfrag over time (PNG).",
)
def replay_kmem_cmd(
    trace: str,
    scenario: str | None,
    sets: tuple[str, ...],
    interval: float,
    workloads: bool,
    as_json: bool,
    plot: str | None,
) -> None:
    """Replay recorded kmem page events against the page allocator.

    TRACE is ftrace text of kmem:mm_page_alloc, mm_page_free, mm_page_free_batched
    (and mm_page_alloc_extfrag) as /sys/kernel/tracing/trace or perf script print
    them, plain, gzip or zstd. SCENARIO gives the machine and kernel (the built-in
    default without one); its kernel threads run, its workloads only with --workloads.
    """
    from vmsim import replay

    if scenario is not None:
        _check_readable_file(scenario)
    try:
        runs = replay.replay_kmem(trace, scenario, sets, interval, workloads)
    except replay.ReplayError as e:
        raise UserError(str(e)) from None
    if as_json:
        click.echo(json.dumps({"runs": [{"set": o, **r} for o, r in runs]}))
    else:
        click.echo(replay.format_kmem(runs))
    for line in replay.kmem_bad_input_lines(runs[0][1]):
        click.echo(f"vmsim: warning: {line}", err=True)
    if plot:
        replay.plot_kmem(runs, plot)


@main_group.command("knobs")
@click.option("--markdown", is_flag=True, help="Print a Markdown table (docs/knobs.md).")
def knobs_cmd(markdown: bool) -> None:
    """List every scenario knob with its unit, default and meaning."""
    rows = api.knobs()
    tables = api.table_knobs()
    if markdown:
        click.echo("| key | unit | default | maximum | meaning |\n|---|---|---|---|---|")
        for k in rows:
            click.echo(
                f"| `{k['key']}` | {k['unit']} | `{json.dumps(k['default'])}` "
                f"| {k['max'] or ''} | {k['doc']} |"
            )
        click.echo("\nKeys of the top level and of the array tables that carry a maximum:\n")
        click.echo("| key | unit | maximum | meaning |\n|---|---|---|---|")
        for k in tables:
            click.echo(f"| `{k['key']}` | {k['unit']} | {k['max']} | {k['doc']} |")
        return
    for k in rows:
        default = json.dumps(k["default"])
        click.echo(
            f"{k['key']:40s} {k['unit']:10s} {default:>14s} {k['max'] or '':>12s}  {k['doc']}"
        )
    for k in tables:
        click.echo(f"{k['key']:40s} {k['unit']:10s} {'':>14s} {k['max']:>12s}  {k['doc']}")


def _costs_text(p: dict, default: bool) -> str:
    """A cost profile for people: its header, then a row per knob (ns, spread, method)."""
    head = f"cost profile {p['name']}" + (" (the default)" if default else "")
    lines = [head]
    lines += [f"{k:<8s} {p[k]}" for k in ("machine", "kernel", "date", "source") if p.get(k)]
    spread = {k: f"{lo:g}-{hi:g}" for k, (lo, hi) in p["spread"].items()}
    width = max(len(k) for k in p["cost"])
    sw = max([len("spread"), *map(len, spread.values())])
    lines.append("")
    lines.append(f"{'knob':<{width}s} {'ns':>8s}  {'spread':<{sw}s}  method")
    for k, ns in p["cost"].items():
        row = f"{k:<{width}s} {ns:>8d}  {spread.get(k, ''):<{sw}s}  {p['method'].get(k, '')}"
        lines.append(row.rstrip())
    return "\n".join(lines)


def _vmsim_profile_check(text: str) -> None:
    from vmsim import _vmsim

    _vmsim.cost_profile(text)


@main_group.command("calibrate")
@click.option("--quick", is_flag=True, help="Smaller sizes, 5 repetitions (under a minute).")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as one JSON object.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the cost profile (TOML) to FILE; vmsim run --costs FILE uses it.",
)
@click.option("--name", default=None, help="The profile's name (default: calibrated-KERNEL).")
@click.option(
    "--base",
    default="seed-era",
    show_default=True,
    help="The profile the knobs no microbenchmark measures are taken from.",
)
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("/var/tmp"),
    show_default=True,
    help="Directory on the disk to measure, for the file microbenchmarks' temporary files.",
)
@click.option(
    "--only",
    "family",
    default=None,
    metavar="FAMILY",
    help="Measure one family of knobs alone (large-folio-reclaim, kernel-paths, shrinker, "
    "ext4), the rest of the profile taken whole from --base.",
)
@click.option(
    "--kernel",
    "guest_kernel",
    default=None,
    metavar="KERNEL",
    help="Measure in a virtual machine of this kernel (debian-6.1) instead, as vmsim "
    "fidelity --kernel records in one; --dir holds its disk image.",
)
def calibrate_cmd(
    quick: bool,
    as_json: bool,
    output: Path | None,
    name: str | None,
    base: str,
    workdir: Path,
    family: str | None,
    guest_kernel: str | None,
) -> None:
    """Measure this machine's per-operation costs on its running kernel: microbenchmarks of
    one operation each (docs/cost-model.md), repeated, giving each [cost] knob they
    isolate with its spread; the rest come from --base and are named as estimates. The
    reclaim figure needs root and the cgroup-v1 memory controller."""
    from vmsim import calibrate

    _check_output("-o", output, ".toml", "the profile")
    try:
        base_profile = api.cost_profile(base)
    except ScenarioError as e:
        raise UserError(f"--base: {e}") from None
    if guest_kernel is not None:
        if family is not None:
            raise UserError("--only: not with --kernel (a guest calibration measures every family)")
        _calibrate_in_vm(guest_kernel, quick, as_json, output, name, base, workdir)
        return
    import tempfile

    try:  # the file microbenchmarks need the directory: say so before a minute of work
        with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-", dir=workdir):
            pass
    except OSError as e:
        raise UserError(f"--dir {shown(str(workdir))}: cannot make files there: {e}") from None
    show = sys.stderr.isatty() and not as_json

    def progress(what: str) -> None:
        if show:
            click.echo(f"\r\x1b[Kmeasuring {what} ...", err=True, nl=False)

    if family is not None and family not in calibrate.FAMILIES:
        raise UserError(
            f"--only: no family {shown(family)} (one of {', '.join(calibrate.FAMILIES)})"
        )
    try:
        if family is not None:
            cal = calibrate.measure_family(family, quick, workdir, base_profile["cost"], progress)
        else:
            cal = calibrate.measure(
                quick, workdir, base_profile["cost"], progress, base_profile["name"]
            )
    except calibrate.CalibrateError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        # The work directory, the memory cgroup or tracefs refused (permissions, a full disk).
        raise UserError(f"calibrate: {e}") from None
    finally:
        if show:
            click.echo("\r\x1b[K", err=True, nl=False)
    prof_name = name or f"calibrated-{cal.machine['kernel']}"
    prof = calibrate.profile(cal, base_profile, prof_name, family)
    _calibration_out(cal, prof, output, as_json, "made")


def _calibration_out(
    cal: Calibration, prof: dict[str, Any], output: Path | None, as_json: bool, made: str
) -> None:
    """A calibration's end: its profile checked and written to ``output``, its report
    (text or JSON) printed."""
    from vmsim import calibrate

    text = calibrate.profile_toml(prof)
    try:
        _vmsim_profile_check(text)
    except ScenarioError as e:
        raise UserError(f"the profile {made} is not valid (a bug): {e}") from None
    if output is not None:
        atomic.write_text(output, text)
    if as_json:
        click.echo(json.dumps(calibrate.as_json(cal, prof)))
    else:
        click.echo(calibrate.report_text(cal, prof, api.cost_profile(api.default_cost_profile())))
    if output is not None and not as_json:
        click.echo(f"wrote {output}")


def _calibrate_in_vm(
    kernel: str,
    quick: bool,
    as_json: bool,
    output: Path | None,
    name: str | None,
    base: str,
    workdir: Path,
) -> None:
    """`vmsim calibrate --kernel K`: the calibration run in a guest, its profile written and
    reported on the host."""
    from vmsim import calibrate
    from vmsim.fidelity import vm
    from vmsim.fidelity.experiment import FidelityError

    if kernel not in vm.KERNELS:
        raise UserError(f"--kernel {shown(kernel)}: not one of {', '.join(vm.KERNELS)}")
    say = (lambda m: click.echo(m, err=True)) if not as_json else (lambda _m: None)
    try:
        data = vm.calibrate_in_vm(kernel, quick, base, workdir, log=say)
    except FidelityError as e:
        raise UserError(str(e)) from None
    cal, prof = calibrate.from_json(data)
    guest = data["machine"]["vm"]
    prof["profile"]["machine"] += f"; a QEMU {guest['emulation']} guest ({guest['qemu']})"
    if name is not None:
        prof["profile"]["name"] = name
    _calibration_out(cal, prof, output, as_json, "made in the guest")


@main_group.command("costs")
@click.argument("profile", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the built-in cost profiles.")
@click.option("--json", "as_json", is_flag=True, help="Print the profile (or list) as JSON.")
@click.option(
    "--toml", "as_toml", is_flag=True, help="Print the profile's TOML (a start for your own)."
)
def costs_cmd(profile: str | None, list_only: bool, as_json: bool, as_toml: bool) -> None:
    """Print the cost profile PROFILE (a built-in one's name or a profile file, .toml; the
    default profile without one): every [cost] knob with its figure [ns], spread and
    method. --list names the built-in profiles."""
    default = api.default_cost_profile()
    if list_only:
        if profile is not None or as_toml:
            raise UserError("--list takes no PROFILE and no --toml")
        rows = [api.cost_profile(n) for n in api.builtin_cost_profiles()]
        if as_json:
            click.echo(json.dumps([r | {"default": r["name"] == default} for r in rows]))
            return
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            mark = "  (the default)" if r["name"] == default else ""
            click.echo(f"{r['name']:<{width}s}  {r['date'] or '':<10s}  {r['machine'] or ''}{mark}")
        return
    if as_json and as_toml:
        raise UserError("--json and --toml: give one of them")
    name = default if profile is None else profile
    try:
        p = api.cost_profile(name)
    except ScenarioError as e:
        raise UserError(str(e)) from None
    if as_toml:
        click.echo(api.cost_profile_text(name).rstrip("\n"))
    elif as_json:
        click.echo(json.dumps(p))
    else:
        builtin = not api.is_cost_profile_file(name)
        click.echo(_costs_text(p, builtin and p["name"] == default))


@main_group.command("scenario")
@click.argument("name", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the example scenarios.")
def scenario_cmd(name: str | None, list_only: bool) -> None:
    """Print the built-in default scenario, or the example NAME (a starting point for your
    own); --list names every example and reproduction template shipped with vmsim."""
    from vmsim import examples

    if list_only:
        if name is not None:
            raise UserError("--list takes no NAME")
        rows = [("default", "The built-in default scenario (vmsim scenario).")]
        rows += [(n, examples.describe(examples.text(n))) for n in examples.names()]
        width = max(len(n) for n, _ in rows)
        click.echo("\n".join(f"{n:<{width}}  {d}" for n, d in rows))
        return
    if name is None or name == "default":
        click.echo(api.default_scenario().rstrip("\n"))
        return
    try:
        click.echo(examples.text(name).rstrip("\n"))
    except examples.ExampleError as e:
        raise UserError(str(e)) from None


@main_group.command("validate")
@click.argument("scenario")
def validate_cmd(scenario: str) -> None:
    """Check SCENARIO without running it."""
    from vmsim import _vmsim

    _check_readable_file(scenario)
    _vmsim.validate(api.load_scenario(Path(scenario)))
    click.echo(f"{scenario}: ok")


@main_group.command("reclaim-report")
@click.argument("trace")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option("--ignore-pid", is_flag=True, help="Aggregate processes of the same name together.")
@click.option("--user-seconds", type=float, help="User CPU time of the test (from time(1)).")
@click.option("--sys-seconds", type=float, help="System CPU time of the test (from time(1)).")
@click.option("--elapsed-seconds", type=float, help="Wall-clock time of the test.")
@click.option(
    "--no-memcg",
    is_flag=True,
    help="Count only mm_vmscan_direct_reclaim_* as direct reclaim, as the original script does.",
)
def reclaim_report_cmd(
    trace: str,
    as_json: bool,
    ignore_pid: bool,
    user_seconds: float | None,
    sys_seconds: float | None,
    elapsed_seconds: float | None,
    no_memcg: bool,
) -> None:
    """The reclaim report of trace-vmscan-postprocess.pl for an ftrace text file.

    TRACE is /sys/kernel/tracing/trace output (6.18 or 2.6.35-era event formats),
    or - for standard input (a FIFO or device only as -); lines are read one at a
    time, at most 64 KiB each. Without --user-seconds/--sys-seconds/--elapsed-seconds
    the percentages of time print n/a.
    """
    from vmsim import reclaim_report as rr

    source, name = trace, None
    try:
        if as_json:
            d = rr.report_dict(
                source,
                ignore_pid=ignore_pid,
                user_seconds=user_seconds,
                sys_seconds=sys_seconds,
                elapsed_seconds=elapsed_seconds,
                memcg_as_direct=not no_memcg,
                name=name,
            )
            click.echo(json.dumps(d))
        else:
            text = rr.report_text(
                source,
                ignore_pid=ignore_pid,
                user_seconds=user_seconds,
                sys_seconds=sys_seconds,
                elapsed_seconds=elapsed_seconds,
                memcg_as_direct=not no_memcg,
                name=name,
            )
            click.echo(text, nl=False)
    except rr.ReclaimReportError as e:
        raise UserError(str(e)) from None


@main_group.command("reproduce")
@click.argument("name")
@click.option(
    "--runs",
    type=int,
    default=5,
    show_default=True,
    help="Runs per kernel (seeds 1..N); the verdicts' t-tests need at least 2.",
)
@click.option(
    "--scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Shrink memory and workload together, 0.001 <= F <= 1 (1 is the seed's size).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    help="Keep every run's scenario and result (and trace and report), and the summary, in DIR.",
)
@click.option(
    "--ablation",
    is_flag=True,
    help="Take the seed's patched kernel apart instead (fragmentation: V19's three parts).",
)
@click.option(
    "--check-invariants",
    is_flag=True,
    help="Check the kernel's invariants at every sample of every run (as vmsim run "
    "--check-invariants); the first one broken is an internal error (exit 70).",
)
def reproduce_cmd(
    name: str,
    runs: int,
    scale: float,
    as_json: bool,
    output_dir: Path | None,
    ablation: bool,
    check_invariants: bool,
) -> None:
    """Reproduce a seed experiment: NAME is throttle, writeback, softlimit, fragmentation,
    boost or all (see docs/reproduce.md).

    Runs every kernel of the seed on the experiment's scenarios and prints the
    seed's tables with vmsim's figures beside the seed's own, and the verdict of
    each of the seed's claims (agrees, disagrees, not observed, by construction).
    """
    from vmsim import reproduce as rep

    try:
        if name != "all" and name not in rep.names():
            raise rep.ReproduceError(
                f"unknown experiment '{name}': choose one of {', '.join(rep.names())} or all"
            )
        if ablation and output_dir is not None:
            raise rep.ReproduceError("--ablation writes no files: drop --output-dir")
        if check_invariants:
            # Every run of the reproduction, in sweep workers too, inherits it.
            os.environ[api.CHECK_INVARIANTS_ENV] = "1"
        result = rep.reproduce(name, runs, scale, output_dir=output_dir, ablation=ablation)
    except rep.ReproduceError as e:
        raise UserError(str(e)) from None
    if output_dir is not None:
        from vmsim import report

        report.write_report([output_dir], output_dir / "report.html")
    _echo_result(result, as_json, rep.render_text)


def _echo_result(result: dict, as_json: bool, render: Callable[[dict], str]) -> None:
    """Prints a command's result: one JSON object, or its text table."""
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(render(result), nl=False)


@main_group.command("fidelity")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON object.")
@click.option(
    "--record",
    "record_name",
    metavar="NAME",
    help="Run experiment NAME on the running kernel (root) and write its recording.",
)
@click.option(
    "--runs", type=int, default=2, show_default=True, help="Runs of a recording (with --record)."
)
@click.option(
    "--experiments",
    "experiments_path",
    type=click.Path(path_type=Path),
    help="Directory of experiment files (default: those shipped with vmsim).",
)
@click.option(
    "--recordings",
    "recordings_path",
    type=click.Path(path_type=Path),
    help="Directory of recordings, one subdirectory per machine (default: those shipped).",
)
@click.option(
    "--work-dir",
    type=click.Path(path_type=Path),
    default=Path("/var/tmp"),
    show_default=True,
    help="Where a recording's files are made (a disk filesystem, not tmpfs).",
)
@click.option("--no-trace", is_flag=True, help="Record without tracepoint counts.")
@click.option(
    "--kernel",
    metavar="KERNEL",
    help="Record in a virtual machine booting this guest kernel (debian-6.1), not on the host.",
)
@click.option("--mglru", is_flag=True, help="With --kernel: MGLRU on in the guest.")
@click.option(
    "--guest-thp",
    type=click.Choice(["always", "madvise", "never"]),
    help="With --kernel: THP enabled mode in the guest (default: the kernel's).",
)
@click.option(
    "--guest-memory",
    default="2GiB",
    show_default=True,
    help="With --kernel: the guest's memory.",
)
@click.option(
    "--guest-cpus", type=int, default=2, show_default=True, help="With --kernel: the guest's CPUs."
)
@click.option(
    "--install",
    "install_only",
    is_flag=True,
    help="With --kernel: install QEMU and the guest kernel (make fidelity-vm), record nothing.",
)
@click.option("--list", "list_only", is_flag=True, help="List experiments and recordings.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of vmsim's runs.")
@click.option(
    "--costs",
    "costs",
    metavar="PROFILE",
    help="The cost profile of vmsim's runs: a built-in one's name (vmsim costs --list) or a "
    "profile file (.toml); default: the default profile.",
)
def fidelity_cmd(
    names: tuple[str, ...],
    as_json: bool,
    record_name: str | None,
    runs: int,
    experiments_path: Path | None,
    recordings_path: Path | None,
    work_dir: Path,
    no_trace: bool,
    kernel: str | None,
    mglru: bool,
    guest_thp: str | None,
    guest_memory: str,
    guest_cpus: int,
    install_only: bool,
    list_only: bool,
    seed: int,
    costs: str | None,
) -> None:
    """vmsim beside the real kernel: recorded experiments, metric by metric (docs/fidelity.md).

    Without --record, runs vmsim on every recorded experiment (or the NAMEs
    given) and prints real against vmsim with ratios and the score. With
    --record NAME, runs the experiment on this machine's kernel (root) and
    writes its recording; with --kernel too, in a virtual machine booting that
    kernel (docs/fidelity.md).
    """
    from vmsim import fidelity as fd

    try:
        if kernel is None and (mglru or install_only or guest_thp):
            what = "--mglru" if mglru else "--guest-thp" if guest_thp else "--install"
            raise UserError(f"{what} needs --kernel")
        if install_only and kernel is not None:
            from vmsim.fidelity import vm

            click.echo(f"installed {vm.install(kernel, lambda m: click.echo(m, err=True))}")
            return
        exps = fd.load_experiments(experiments_path)
        root = recordings_path or fd.recordings_dir()
        if list_only:
            from vmsim.fidelity.compare import find_recordings

            recs = find_recordings(root) if root.is_dir() else {}
            for n, e in exps.items():
                where = [mk for mk, files in recs.items() if n in files]
                missing = f"  [vmsim lacks: {'; '.join(e.missing)}]" if e.missing else ""
                click.echo(f"{n:<22} {', '.join(where) or 'not recorded'}{missing}")
            return
        if record_name is not None:
            if costs is not None:
                raise UserError("--costs sets vmsim's runs; a recording has none (drop --record)")
            if names:
                raise UserError("--record takes one experiment; give no other names")
            if record_name not in exps:
                raise UserError(f"unknown experiment '{record_name}' (known: {', '.join(exps)})")
            log = (lambda m: click.echo(m, err=True)) if not as_json else (lambda m: None)
            if kernel is not None:
                from vmsim.fidelity import vm

                path = vm.record_in_vm(
                    exps[record_name],
                    kernel,
                    runs,
                    root,
                    work_dir,
                    mglru=mglru,
                    thp=guest_thp,
                    trace=not no_trace,
                    memory=_guest_memory(guest_memory),
                    cpus=guest_cpus,
                    log=log,
                )
            else:
                path = fd.record(
                    exps[record_name], runs, root, work_dir, trace=not no_trace, log=log
                )
            if as_json:
                click.echo(json.dumps({"recording": str(path)}))
            else:
                click.echo(f"wrote {path}")
            return
        if not (0 <= seed < 2**64):
            raise UserError(f"--seed {seed}: out of range (0..2^64-1)")
        _check_costs(costs)
        tty = sys.stderr.isatty()

        def progress(name: str, i: int, n: int) -> None:
            if tty:
                click.echo(f"vmsim fidelity: {name} ({i + 1} of {n})", err=True)

        result = fd.fidelity(exps, list(names), root, seed=seed, costs=costs, progress=progress)
    except fd.FidelityError as e:
        raise UserError(str(e)) from None
    _echo_result(result, as_json, fd.render_text)


def _guest_memory(text: str) -> int:
    """--guest-memory as bytes; one line for a bad size."""
    from vmsim.units import parse_size

    try:
        return parse_size(text)
    except (TypeError, ValueError):
        raise UserError(f"--guest-memory {text}: not a size like 2GiB") from None


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the command, turning every user error into one line and exit code 2."""
    try:
        main_group.main(args=argv, prog_name="vmsim", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("vmsim: interrupted", err=True)
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else "")
        sys.exit(0)
    except click.ClickException as e:
        _fail(e.format_message().replace("\n", " "))
    except (ScenarioError, CompareError, UserError, SweepError, atomic.OutputError) as e:
        _fail(_one_line(str(e)))
    except InvariantError as e:
        click.echo(f"vmsim: internal error: {e}", err=True)
        sys.exit(EXIT_INTERNAL)
    except KeyboardInterrupt:
        click.echo("vmsim: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except OSError as e:
        _fail(f"{shown(e.filename)}: {atomic.reason(e)}" if e.filename else atomic.reason(e))
    except Exception as e:  # noqa: BLE001 - a bug in vmsim itself: one line, not a traceback
        if os.environ.get("VMSIM_DEBUG"):
            raise
        click.echo(
            f"vmsim: internal error: {type(e).__name__}: {e} (set VMSIM_DEBUG=1 for a traceback)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
