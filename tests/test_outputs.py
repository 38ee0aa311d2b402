"""Every writer of a result follows vmsim.atomic's rules (issue 17, "nothing lost,
nothing clobbered"), through the command line: a symbolic link to a file stays a
link and its file gets the result; a FIFO or a device is written through, never
replaced; a full disk, a full device or a read-only file system is one line and
exit 2, and leaves the earlier file of that name as it was and no temporary file.

The devices are our own nodes made with mknod in tmp_path (root only): (1, 3) is
/dev/null's, (1, 7) /dev/full's; the full disk is a tmpfs of 1 MiB mounted in
tmp_path and always unmounted. Nothing under /dev is touched.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SMALL_SCENARIO

IS_ROOT = os.geteuid() == 0
NULL_DEV = (1, 3)
FULL_DEV = (1, 7)
OLD = b"the earlier result\n"


def vmsim(*args: object, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m vmsim.cli ARGS`` in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "vmsim.cli", *map(str, args)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        cwd=cwd,
    )


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The one stderr line of a refused command (exit 2), holding every needle."""
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n.lower() in lines[0].lower(), (n, lines[0])
    return lines[0]


@dataclass
class Writer:
    """A command that writes one result file: its arguments for an output path, the
    suffix the file needs, the bytes the result starts with, and whether it writes
    through a non-regular file (a sweep's Parquet file is read back: it refuses one)."""

    args: Callable[[Path, Path], list[object]]
    suffix: str
    magic: bytes
    through: bool = True


@pytest.fixture(scope="module")
def sweep_table(tmp_path_factory) -> Path:
    """A small sweep's Parquet file, for sweep-plot."""
    d = tmp_path_factory.mktemp("sweep")
    out = d / "s.parquet"
    proc = vmsim(
        "sweep", SMALL_SCENARIO, "--set", "kernel.min_free_kbytes=4096,8192", "--seeds", "1",
        "-j", "1", "-o", out, cwd=d,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out


WRITERS = {
    "run --trace": Writer(lambda p, t: ["run", SMALL_SCENARIO, "--trace", p], ".txt", b"# tracer"),
    "run --plot": Writer(lambda p, t: ["run", SMALL_SCENARIO, "--plot", p], ".png", b"\x89PNG"),
    "run --map": Writer(lambda p, t: ["run", SMALL_SCENARIO, "--map", p], ".png", b"\x89PNG"),
    "sweep -o": Writer(
        lambda p, t: ["sweep", SMALL_SCENARIO, "--seeds", "1", "-j", "1", "-o", p],
        ".parquet",
        b"PAR1",
        through=False,
    ),
    "sweep-plot -o": Writer(
        lambda p, t: [
            "sweep-plot",
            t,
            "--x",
            "kernel.min_free_kbytes",
            "--y",
            "summary.elapsed_seconds",
            "-o",
            p,
        ],  # fmt: skip
        ".png",
        b"\x89PNG",
    ),
}
WRITER_IDS = list(WRITERS)


def _args(name: str, path: Path, request) -> list[object]:
    table = request.getfixturevalue("sweep_table") if name == "sweep-plot -o" else None
    return WRITERS[name].args(path, table)


def _mknod(path: Path, dev: tuple[int, int]) -> None:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(*dev))


def _is_dev(path: Path, dev: tuple[int, int]) -> bool:
    st = path.lstat()
    return stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == dev


def _old(name: str, request) -> bytes:
    """The earlier file of a writer's output: a sweep reads its file back, so it is a
    sweep's table (of other runs than the writer's); for the others any bytes."""
    if WRITERS[name].through:
        return OLD
    return request.getfixturevalue("sweep_table").read_bytes()


@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "dangling"])
@pytest.mark.parametrize("name", WRITER_IDS)
def test_a_link_to_a_file_stays_a_link(name, dangling, tmp_path, request):
    target_dir = tmp_path / "elsewhere"
    target_dir.mkdir()
    target = target_dir / f"result{WRITERS[name].suffix}"
    if not dangling:
        target.write_bytes(_old(name, request))
    link = tmp_path / f"link{WRITERS[name].suffix}"
    link.symlink_to(target)
    proc = vmsim(*_args(name, link, request), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    data = target.read_bytes()
    assert data.startswith(WRITERS[name].magic) and data != _old(name, request)
    assert sorted(os.listdir(target_dir)) == [target.name]  # no temporary file left


class FifoReader:
    """Reads a FIFO whole in a thread; unblocks it if nobody ever writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as f:
            self.data = f.read()

    def finish(self) -> bytes:
        self.thread.join(timeout=5)
        if self.thread.is_alive():  # the writer never opened it: let the reader go
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(timeout=5)
        return self.data


@pytest.mark.parametrize("name", WRITER_IDS)
def test_a_fifo_is_written_through(name, tmp_path, request):
    fifo = tmp_path / f"fifo{WRITERS[name].suffix}"
    os.mkfifo(fifo)
    if not WRITERS[name].through:
        proc = vmsim(*_args(name, fifo, request), cwd=tmp_path)
        one_line_error(proc, str(fifo), "not a regular file")
        assert stat.S_ISFIFO(fifo.lstat().st_mode)
        return
    reader = FifoReader(fifo)
    proc = vmsim(*_args(name, fifo, request), cwd=tmp_path)
    data = reader.finish()
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert data.startswith(WRITERS[name].magic), data[:40]


@pytest.mark.skipif(not IS_ROOT, reason="needs root to make device nodes")
@pytest.mark.parametrize("name", WRITER_IDS)
def test_a_device_is_written_through_and_a_full_one_is_one_line(name, tmp_path, request):
    null = tmp_path / f"null{WRITERS[name].suffix}"
    full = tmp_path / f"full{WRITERS[name].suffix}"
    _mknod(null, NULL_DEV)
    _mknod(full, FULL_DEV)
    link = tmp_path / f"link-to-full{WRITERS[name].suffix}"
    link.symlink_to(full.name)
    if not WRITERS[name].through:
        for p in (null, full, link):
            one_line_error(vmsim(*_args(name, p, request), cwd=tmp_path), "not a regular file")
    else:
        assert vmsim(*_args(name, null, request), cwd=tmp_path).returncode == 0
        for p in (full, link):
            proc = vmsim(*_args(name, p, request), cwd=tmp_path)
            one_line_error(proc, f"{p}: cannot write: No space left on device")
    assert _is_dev(null, NULL_DEV) and _is_dev(full, FULL_DEV) and link.is_symlink()


@pytest.fixture
def tiny_fs(tmp_path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted in tmp_path (root only), always unmounted."""
    if not IS_ROOT:
        pytest.skip("needs root to mount a tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(mnt: Path) -> None:
    """Fills the file system: a filler file grows until the disk is full."""
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == 28, e  # ENOSPC
    finally:
        os.close(fd)


def _remount_ro(mnt: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)


def _leftovers(mnt: Path, keep: set[str]) -> list[str]:
    """Entries of ``mnt`` other than ``keep``, the sweep's lock and an empty parts dir."""
    out = []
    for e in os.listdir(mnt):
        if e in keep or e.endswith(".lock"):
            continue
        if e.endswith(".parts") and not os.listdir(mnt / e):
            continue
        out.append(e)
    return out


@pytest.mark.parametrize("full", ["full disk", "read-only"])
@pytest.mark.parametrize("name", WRITER_IDS)
def test_a_failed_write_leaves_the_earlier_file(name, full, tiny_fs, tmp_path, request):
    out = tiny_fs / f"out{WRITERS[name].suffix}"
    old = _old(name, request)
    out.write_bytes(old)
    args = _args(name, out, request)
    if full == "full disk":
        _fill(tiny_fs)
        why = "No space left on device"
    else:
        _remount_ro(tiny_fs)
        why = "Read-only file system"
    proc = vmsim(*args, cwd=tmp_path)
    one_line_error(proc, why)
    assert out.read_bytes() == old
    assert _leftovers(tiny_fs, {out.name, "filler"}) == []


@pytest.mark.parametrize("full", ["full disk", "read-only"])
def test_output_dir_on_a_failed_disk_keeps_the_earlier_files(full, tiny_fs, tmp_path):
    d = tiny_fs / "run"
    d.mkdir()
    (d / "result.json").write_bytes(OLD)
    new = tiny_fs / "new"
    if full == "full disk":
        _fill(tiny_fs)
        why = "No space left on device"
    else:
        _remount_ro(tiny_fs)
        why = "Read-only file system"
    proc = vmsim("run", SMALL_SCENARIO, "--output-dir", d, cwd=tmp_path)
    one_line_error(proc, f"{d}", why)
    assert (d / "result.json").read_bytes() == OLD and os.listdir(d) == ["result.json"]
    proc = vmsim("run", SMALL_SCENARIO, "--output-dir", new, cwd=tmp_path)
    one_line_error(proc, f"{new}: cannot create the directory", why)
    assert not new.exists()
    assert _leftovers(tiny_fs, {"run", "filler"}) == []


def test_output_dir_through_a_link_keeps_the_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    fifo = real / "vmstat"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    proc = vmsim("run", SMALL_SCENARIO, "--output-dir", tmp_path / "link", cwd=tmp_path)
    data = reader.finish()
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link").is_symlink() and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert data.startswith(b"nr_free_pages ")
    assert (real / "result.json").read_text().startswith("{")


@pytest.mark.skipif(not IS_ROOT, reason="needs root to mount a tmpfs")
def test_reproduce_output_dir_on_a_full_disk_is_one_line(tiny_fs, tmp_path):
    d = tiny_fs / "repro"
    d.mkdir()
    (d / "report.txt").write_bytes(OLD)
    _fill(tiny_fs)
    proc = vmsim(
        "reproduce", "throttle", "--runs", "1", "--scale", "0.01", "--output-dir", d, cwd=tmp_path
    )
    one_line_error(proc, "No space left on device")
    assert (d / "report.txt").read_bytes() == OLD


def test_trace_to_dev_stdout_redirected_to_a_file(tmp_path):
    """--trace /dev/stdout with stdout a file: the trace goes through the descriptor (the
    file is not replaced), and the summary printed after it follows in the same file."""
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        proc = subprocess.run(
            [sys.executable, "-m", "vmsim.cli", "run", SMALL_SCENARIO, "--trace", "/dev/stdout"],
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("# tracer: nop\n"), text[:200]
    assert "\nvmsim " in text and "==> /proc/buddyinfo <==" in text
