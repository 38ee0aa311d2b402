"""Tests of the pageblock map picture (vmsim.pbmap) and ``vmsim run --map``."""

from __future__ import annotations

import pytest
import vmsim
from vmsim import pbmap

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def small_results(small_scenario) -> list[dict]:
    """The small scenario on both allocators."""
    grouping = vmsim.run(small_scenario).data
    vanilla = vmsim.run(small_scenario, overrides={"kernel.mobility_grouping": False}).data
    return [vanilla, grouping]


def _zones(result: dict) -> int:
    return sum(1 for z in result["pageblocks"] if z["migratetype"])


def test_map_is_a_png(tmp_path, small_results):
    fig = pbmap.pageblock_map_figure(small_results[:1])
    out = tmp_path / "map.png"
    pbmap.save_atomic(fig, out)
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000
    assert not list(tmp_path.glob(".*.tmp")), "temporary file left behind"


def test_one_panel_per_result(small_results):
    one = pbmap.pageblock_map_figure(small_results[:1])
    two = pbmap.pageblock_map_figure(small_results, ["vanilla", "grouping"])
    zones = _zones(small_results[0])
    assert zones >= 2  # DMA and DMA32
    # A column per result, a row per populated zone.
    assert len(one.axes) == zones
    assert len(two.axes) == 2 * zones
    lefts = sorted({round(ax.get_position().x0, 3) for ax in two.axes})
    assert len(lefts) == 2, "the two results must sit side by side"
    text = " ".join(t.get_text() for ax in two.axes for t in ax.texts)
    assert "vanilla" in text and "grouping" in text


def test_block_stats_count_every_block(small_results):
    for r in small_results:
        st = pbmap.block_stats(r)
        blocks = sum(len(z["migratetype"]) for z in r["pageblocks"])
        assert st["blocks"] == blocks
        assert sum(st[t] for t in "UMRHI") == blocks
        assert 0 <= st["mixed"] <= blocks
    # Without grouping every block is on the one (Unmovable) free list.
    vanilla = pbmap.block_stats(small_results[0])
    assert vanilla["U"] == vanilla["blocks"]


def test_second_half_of_order10_buddy_is_restored():
    # Blocks 0/1 form a free order-10 buddy (the engine credits only the first
    # half), 2/3 an allocated movable order-10 block, 4/5 a free block beside a
    # reserved one whose partner is not a whole buddy's share.
    zone = {
        "node": 0,
        "zone": "DMA32",
        "start_pfn": 4096,
        "migratetype": "MMMMMM",
        "free": [512, 0, 0, 0, 300, 0],
        "used": [[0, 0, 0], [0, 0, 0], [0, 512, 0], [0, 0, 0], [0, 10, 0], [0, 0, 0]],
    }
    free, used = pbmap._fill_order10_halves(zone, memmap_first_pfn=1 << 30)
    assert free == [512, 512, 0, 0, 300, 0]
    assert used[3] == [0, 512, 0]
    assert used[5] == [0, 0, 0]
    # Inside the memmap at the node's top nothing is guessed.
    free, _ = pbmap._fill_order10_halves(zone, memmap_first_pfn=4096 + 512)
    assert free[1] == 0


def test_bad_arguments():
    with pytest.raises(ValueError):
        pbmap.pageblock_map_figure([])
    with pytest.raises(ValueError):
        pbmap.pageblock_map_figure([{"pageblocks": []}])


def test_titles_must_match_results(small_results):
    with pytest.raises(ValueError):
        pbmap.pageblock_map_figure(small_results, ["only one"])


def test_cli_run_map(cli, tmp_path, small_scenario):
    png = tmp_path / "out.png"
    proc = cli("run", small_scenario, "--map", png)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert proc.stdout.startswith("vmsim ")


@pytest.mark.parametrize(
    "name,needle",
    [("out.txt", "out.txt"), ("nodir/out.png", "does not exist")],
    ids=["not-png", "missing-directory"],
)
def test_cli_run_map_errors(cli, tmp_path, small_scenario, name, needle):
    target = tmp_path / name
    proc = cli("run", small_scenario, "--map", target)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("vmsim: error: --map ")
    assert needle in lines[0]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert not target.exists()
