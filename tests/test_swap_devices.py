"""`[[swap]]` devices and the swapon/swapoff operations from the command line: bad
values are one line and exit code 2; /proc/swaps and `swap_devices` in the result;
runs with several devices are byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import assert_ok, assert_one_line_error

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "scenarios" / "swap-devices.toml"

BASE = """
name = "t"
duration = "5s"
[machine]
memory = "256MiB"
cpus = 1
[[swap]]
path = "/dev/sdb2"
type = "partition"
size = "64MiB"
priority = 5
[[swap]]
path = "/swapfile"
type = "file"
size = "128MiB"
[[task]]
name = "root"
program = [ { op = "swapoff", path = "/dev/sdb2" } ]
"""


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ("priority = 5", "priority = -1", ["[[swap]] #1", "priority = -1", "0..=32767"]),
        ("priority = 5", "priority = 32768", ["priority = 32768", "0..=32767"]),
        ('size = "64MiB"', 'size = "36KiB"', ["[[swap]] #1", "10 pages"]),
        ('size = "64MiB"', 'size = "5TiB"', ["[[swap]] #1", "size"]),
        ('path = "/dev/sdb2"', 'path = ""', ["[[swap]] #1", "non-empty"]),
        ('path = "/swapfile"', 'path = "/dev/sdb2"', ["[[swap]] #2", "already declared"]),
        ('type = "partition"', 'type = "tape"', ["tape", "partition"]),
        ("priority = 5", "priority = 5\nbytes = 1", ["unknown", "bytes"]),
        ('path = "/dev/sdb2" }', 'path = "/dev/sdc" }', ["swapoff", "/dev/sdc"]),
        ('op = "swapoff"', 'op = "swapon"', []),
        ('[[swap]]\npath = "/dev/sdb2"', '[[swap]]\npath = "/swapfile"', ["already declared"]),
    ],
)
def test_bad_swap_devices_are_one_line_errors(cli, tmp_path, old, new, needles):
    assert old in BASE
    text = BASE.replace(old, new, 1)
    path = tmp_path / "s.toml"
    path.write_text(text)
    proc = cli("run", path)
    if old == 'op = "swapoff"':
        # swapon of a device that is on is not a scenario error: the kernel answers
        # EBUSY at run time, counted as a failed call on the device.
        r = json.loads(assert_ok(cli("run", path, "--json")))
        assert r["swap_devices"][0]["failed_calls"] == 1
        return
    assert_one_line_error(proc, *needles)


ZRAM = """
[machine]
memory = "256MiB"
cpus = 1
[[swap]]
path = "/dev/zram0"
type = "zram"
disksize = "256MiB"
comp_ratio = 3.0
"""


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ('disksize = "256MiB"', 'size = "256MiB"', ["zram", "disksize, not size"]),
        ('disksize = "256MiB"', "", ["disksize is required"]),
        ("comp_ratio = 3.0", "comp_ratio = 0.5", ["comp_ratio = 0.5", "1..=128"]),
        ("comp_ratio = 3.0", "compress_ns = 2000000000", ["compress_ns", "maximum"]),
        ('type = "zram"', 'type = "file"', ["disksize is a zram key"]),
    ],
)
def test_bad_zram_devices_are_one_line_errors(cli, tmp_path, old, new, needles):
    path = tmp_path / "z.toml"
    path.write_text(ZRAM.replace(old, new, 1))
    assert_one_line_error(cli("run", path), "[[swap]] #1", *needles)


def test_zram_reports_mm_stat_and_is_byte_identical(cli, tmp_path):
    path = tmp_path / "z.toml"
    path.write_text(
        ZRAM + '[[task]]\nname = "hog"\nprogram = [ { op = "touch", size = "320MiB" }, '
        '{ op = "snapshot", name = "full" } ]\n'
    )
    a = assert_ok(cli("run", path, "--json"))
    assert a == assert_ok(cli("run", path, "--json"))
    r = json.loads(a)
    assert "/dev/zram0" in r["snapshots"][0]["swaps"]
    assert r["swap_devices"][0]["type"] == "zram"
    assert len(r["swap_devices"][0]["mm_stat"].split()) == 9


def test_machine_swap_is_one_device_named_swapfile(cli, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[machine]\nmemory = "256MiB"\ncpus = 1\nswap = "64MiB"\n'
        '[[swap]]\npath = "/swapfile"\ntype = "file"\nsize = "64MiB"\n'
    )
    assert_one_line_error(cli("run", path), "machine.swap", "/swapfile")
    path.write_text('[machine]\nmemory = "256MiB"\ncpus = 1\nswap = "64MiB"\n')
    r = json.loads(assert_ok(cli("run", path, "--json")))
    assert r["proc"]["swaps"] == (
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        "/swapfile" + " " * 31 + "file\t\t65532\t\t0\t\t-2\n"
    )
    assert [d["path"] for d in r["swap_devices"]] == ["/swapfile"]


def test_swap_devices_scenario_swaps_the_partition_off_and_is_byte_identical(cli):
    a = assert_ok(cli("run", SCENARIO, "--json"))
    assert a == assert_ok(cli("run", SCENARIO, "--json"))
    r = json.loads(a)
    devs = {d["path"]: d for d in r["swap_devices"]}
    assert not devs["/dev/sdb2"]["on"] and devs["/dev/sdb2"]["failed_calls"] == 0
    assert devs["/swapfile2"]["on"] and devs["/swapfile2"]["priority"] == -3
    before, after = r["snapshots"]
    assert "/dev/sdb2" in before["swaps"] and "/dev/sdb2" not in after["swaps"]
    # Every page on the partition (full before swapoff) was read back.
    used = [ln.split() for ln in before["swaps"].splitlines()[1:]]
    assert used[0][0] == "/dev/sdb2" and used[0][2] == used[0][3]
    assert r["vmstat_delta"]["pswpin"] >= int(used[0][3]) // 4


@pytest.mark.parametrize(
    ("setting", "needles"),
    [
        ("kernel.zswap_comp_ratio=0.5", ["kernel.zswap_comp_ratio = 0.5", "1..=128"]),
        ("kernel.zswap_comp_ratio=200", ["kernel.zswap_comp_ratio = 200", "1..=128"]),
        ("kernel.zswap_max_pool_percent=101", ["zswap_max_pool_percent", "maximum"]),
        ("kernel.zswap_accept_threshold_percent=101", ["zswap_accept_threshold", "maximum"]),
        ("kernel.zswap_compress_ns=2000000000", ["zswap_compress_ns", "maximum"]),
        ("kernel.zswap=maybe", ["zswap"]),
    ],
)
def test_bad_zswap_settings_are_one_line_errors(cli, setting, needles):
    assert_one_line_error(cli("run", "--set", setting), *needles)


def test_zswap_scenario_stores_in_memory_and_is_byte_identical(cli):
    path = REPO / "scenarios" / "zswap.toml"
    a = assert_ok(cli("run", path, "--json", "--set", "duration=3s"))
    assert a == assert_ok(cli("run", path, "--json", "--set", "duration=3s"))
    r = json.loads(a)
    assert r["vmstat_delta"]["zswpout"] > 0
    assert set(r["zswap"]) >= {"pool_limit_hit", "written_back_pages", "stored_pages"}
    # Without zswap the result has no zswap counters and no page is stored.
    off = json.loads(
        assert_ok(cli("run", path, "--json", "--set", "duration=3s", "--set", "kernel.zswap=false"))
    )
    assert "zswap" not in off and off["vmstat_delta"].get("zswpout", 0) == 0


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ('advice = "random"', 'advice = "sometimes"', ["unknown variant `sometimes`", "dontneed"]),
        (
            'file = "data", advice = "random"',
            'file = "", advice = "random"',
            ["fadvise", "non-empty"],
        ),
        ('file = "data", advice = "random"', 'file = "data"', ["missing field `advice`"]),
    ],
)
def test_bad_fadvise_operations_are_one_line_errors(cli, tmp_path, old, new, needles):
    text = (REPO / "scenarios" / "fadvise.toml").read_text()
    assert old in text
    path = tmp_path / "f.toml"
    path.write_text(text.replace(old, new, 1))
    assert_one_line_error(cli("run", path), *needles)
