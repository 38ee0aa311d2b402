"""vmsim.atomic writes results whole or not at all."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from vmsim import atomic


def test_text_is_replaced_whole(tmp_path):
    f = tmp_path / "r.json"
    f.write_text("old")
    atomic.write_text(f, "new\n")
    assert f.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["r.json"]


def test_a_failing_write_leaves_the_old_file_and_no_temporary(tmp_path):
    f = tmp_path / "r.png"
    f.write_bytes(b"old")

    def fail(tmp):
        tmp.write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic.write_with(f, fail)
    assert f.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["r.png"]


def test_files_get_the_umask_permissions(tmp_path):
    f = tmp_path / "out.txt"
    atomic.write_text(f, "x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask


def test_a_new_directory_appears_with_every_file_or_not_at_all(tmp_path):
    out = tmp_path / "run"
    atomic.write_dir(out, {"a": "1", "b": "2"})
    assert sorted(os.listdir(out)) == ["a", "b"]
    atomic.write_dir(out, {"b": "3"})  # an existing directory: each file replaced
    assert (out / "b").read_text() == "3" and (out / "a").read_text() == "1"

    with pytest.raises(TypeError):
        atomic.write_dir(tmp_path / "never", {"a": "1", "b": 2})  # type: ignore[dict-item]
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_a_new_directory_takes_copies_of_files_given_by_path(tmp_path):
    trace = tmp_path / "trace.txt"
    trace.write_bytes(b"kswapd0-42 [000] ...\n")
    out = tmp_path / "run-1"
    atomic.write_dir(out, {"scenario.toml": "x = 1\n", "trace.txt": trace})
    assert (out / "trace.txt").read_bytes() == trace.read_bytes()
    assert (out / "scenario.toml").read_text() == "x = 1\n"
    # A file that cannot be read leaves no directory at all.
    with pytest.raises(OSError):
        atomic.write_dir(tmp_path / "run-2", {"a": "1", "trace.txt": tmp_path / "missing"})
    assert sorted(os.listdir(tmp_path)) == ["run-1", "trace.txt"]


def test_copy(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"trace")
    atomic.copy_file(src, tmp_path / "dst")
    assert (tmp_path / "dst").read_bytes() == b"trace"


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    return fig


# Every writer of vmsim.atomic, as (suffix, write(path), the bytes it starts with).
API_WRITERS = {
    "write_text": (".txt", lambda p: atomic.write_text(p, "new\n"), b"new"),
    "write_bytes": (".bin", lambda p: atomic.write_bytes(p, b"new\n"), b"new"),
    "copy_file": (".txt", lambda p: atomic.copy_file(Path(__file__), p), b'"""vmsim.atomic'),
    "save_figure": (".png", lambda p: atomic.save_figure(_figure(), p), b"\x89PNG"),
    "write_dir": (
        "",
        lambda p: atomic.write_dir(p.parent, {p.name: "new\n"}),
        b"new",
    ),
}


@pytest.mark.parametrize("name", API_WRITERS)
def test_a_link_keeps_pointing_at_the_new_file(name, tmp_path):
    suffix, write, magic = API_WRITERS[name]
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / f"r{suffix}"
    target.write_bytes(b"old")
    link = tmp_path / "real" / f"link{suffix}"
    link.symlink_to(target.name)
    write(link)
    assert link.is_symlink() and target.read_bytes().startswith(magic)
    assert sorted(os.listdir(tmp_path / "real")) == sorted([target.name, link.name])


@pytest.mark.parametrize("name", API_WRITERS)
def test_a_fifo_is_written_through_not_replaced(name, tmp_path):
    suffix, write, magic = API_WRITERS[name]
    fifo = tmp_path / f"fifo{suffix}"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write(fifo)
    reader.join(timeout=10)
    assert got and got[0].startswith(magic)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a device node")
@pytest.mark.parametrize("name", API_WRITERS)
def test_a_full_device_is_one_line_and_stays_a_device(name, tmp_path):
    suffix, write, _ = API_WRITERS[name]
    full = tmp_path / f"full{suffix}"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # /dev/full's numbers
    with pytest.raises(atomic.OutputError) as e:
        write(full)
    assert str(e.value) == f"{full}: cannot write: No space left on device"
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert os.listdir(tmp_path) == [full.name]


def test_errors_name_the_path_given(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    with pytest.raises(atomic.OutputError, match="loop: cannot write: Too many levels"):
        atomic.write_text(loop, "x")
    with pytest.raises(atomic.OutputError, match=r"/x: cannot write: is a directory"):
        (tmp_path / "x").mkdir()
        atomic.write_text(tmp_path / "x", "x")
    missing = tmp_path / "no" / "f.txt"
    with pytest.raises(atomic.OutputError, match=r"f.txt: cannot write: directory .*/no does not"):
        atomic.write_text(missing, "x")
    with pytest.raises(atomic.OutputError, match=r"^/proc/vmsim-x: cannot create the directory"):
        atomic.write_dir("/proc/vmsim-x", {"a": "1"})


def test_a_stdout_link_is_written_through(tmp_path):
    """/dev/stdout of a process whose stdout is a file: the file is written through its
    descriptor, not replaced (the shell's later output would go to a deleted file)."""
    out = tmp_path / "out.txt"
    code = (
        "import sys; from vmsim import atomic; print('before', flush=True); "
        "atomic.write_text('/dev/stdout', 'result\\n'); print('after', flush=True)"
    )
    with open(out, "w") as f:
        subprocess.run([sys.executable, "-c", code], stdout=f, check=True, timeout=60)
    assert out.read_text() == "before\nresult\nafter\n"


def test_shown_cuts_long_names_and_escapes_control_characters():
    assert atomic.shown("a" * 1_000_000).endswith("…")
    assert len(atomic.shown("a" * 1_000_000)) == atomic.SHOWN_MAX
    assert atomic.shown("a\nb") == "a\\nb"
    assert atomic.shown("ok") == "ok"
