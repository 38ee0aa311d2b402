"""vmsim.atomic writes results whole or not at all."""

from __future__ import annotations

import os
import stat

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


def test_copy(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"trace")
    atomic.copy_file(src, tmp_path / "dst")
    assert (tmp_path / "dst").read_bytes() == b"trace"
