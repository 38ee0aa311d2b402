"""The pageblock map: every pageblock of every populated zone as one small square.

Each square is one pageblock (512 pages, 2 MiB). Its light background is the
pageblock's migratetype (Unmovable red, Movable green, Reclaimable blue,
HighAtomic purple, Isolate grey); the solid bar rising from its bottom is how
full it is, split by what the allocated pages are: unmovable (red),
reclaimable (blue), movable (green), and pages the map cannot attribute
(reserved at boot, per-CPU lists: dark grey); the light rest of the square is
free. A black corner marks a *mixed* block, one holding allocations of more
than one mobility. A row is 32 squares (64 MiB) on machines of up to 2 GiB,
64 (128 MiB) up to 16 GiB and 128 beyond; the physical address of each row
is on the left.

The data is ``result["pageblocks"]`` (see docs/output.md): per zone the
migratetype letters, the free pages and the allocated pages by mobility of
every pageblock at the end of the run.

Known gap in that data (engine, ``Mm::pageblock_map``): a buddy larger than a
pageblock — a free or allocated order-10 block — is counted only in its
first pageblock, so the second half reads as empty (no free, no used pages).
:func:`_fill_order10_halves` restores such halves when the first half is
exactly one full buddy's share (512 free, or 512 allocated pages of one
mobility) and the block is not in the node's memmap at the top of the node;
once the engine counts them itself, the blocks are no longer empty and the
correction does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vmsim.plots import _pyplot, save_atomic

__all__ = ["pageblock_map_figure", "save_atomic", "block_stats"]

PAGES_PER_BLOCK = 512
CELL = 12  # pixels per square, gap included
GAP = 1

TYPE_NAMES = {
    "U": "Unmovable",
    "M": "Movable",
    "R": "Reclaimable",
    "H": "HighAtomic",
    "I": "Isolate",
}
TYPE_RGB = {
    "U": (0xD6, 0x27, 0x28),
    "M": (0x2C, 0xA0, 0x2C),
    "R": (0x1F, 0x77, 0xB4),
    "H": (0x94, 0x67, 0xBD),
    "I": (0x7F, 0x7F, 0x7F),
}
# Solid fill of allocated pages, bottom to top: unmovable, reclaimable, movable, unattributed.
FILL_RGB = [TYPE_RGB["U"], TYPE_RGB["R"], TYPE_RGB["M"], (0x40, 0x40, 0x40)]
FILL_NAMES = [
    "unmovable pages",
    "reclaimable pages",
    "movable pages",
    "reserved / per-CPU / unattributed",
]
TINT = 0.75  # how far the background is blended towards white
MIXED_RGB = (0, 0, 0)


def _tint(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    return tuple(int(c + (255 - c) * TINT) for c in rgb)  # type: ignore[return-value]


def _fill_order10_halves(zone: dict[str, Any], memmap_first_pfn: int) -> tuple[list, list]:
    """Free and used counts per block, with the second halves of order-10 buddies restored."""
    free = list(zone["free"])
    used = [list(u) for u in zone["used"]]
    start = zone["start_pfn"]
    for i in range(len(free)):
        pfn = start + i * PAGES_PER_BLOCK
        if not (pfn & PAGES_PER_BLOCK) or i == 0 or pfn >= memmap_first_pfn:
            continue  # not the upper half of a 1024-page aligned pair, or in the memmap
        if free[i] or any(used[i]):
            continue
        if free[i - 1] == PAGES_PER_BLOCK and not any(used[i - 1]):
            free[i] = PAGES_PER_BLOCK
        elif sum(used[i - 1]) == PAGES_PER_BLOCK and max(used[i - 1]) == PAGES_PER_BLOCK:
            used[i] = list(used[i - 1])
    return free, used


def _memmap_first_pfn(result: dict[str, Any], node: int) -> int:
    """First frame of the node's memmap (64 bytes per frame at the node's top)."""
    zones = [z for z in result["pageblocks"] if z["node"] == node]
    lo = min(z["start_pfn"] for z in zones)
    hi = max(z["start_pfn"] + len(z["free"]) * PAGES_PER_BLOCK for z in zones)
    memmap_pages = -(-(hi - lo) * 64 // 4096)
    return hi - memmap_pages


def _zones(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Populated zones with corrected per-block counts."""
    out = []
    for z in result.get("pageblocks", []):
        if not z["migratetype"]:
            continue
        free, used = _fill_order10_halves(z, _memmap_first_pfn(result, z["node"]))
        out.append({**z, "free": free, "used": used})
    return out


def block_stats(result: dict[str, Any]) -> dict[str, int]:
    """Counts over all zones: blocks, blocks per type letter, mixed blocks, blocks holding
    unmovable (or reclaimable) pages, fully free blocks."""
    st = {"blocks": 0, "mixed": 0, "with_unmovable": 0, "with_reclaimable": 0, "free_blocks": 0}
    for letter in TYPE_NAMES:
        st[letter] = 0
    for z in _zones(result):
        for mt, f, u in zip(z["migratetype"], z["free"], z["used"], strict=True):
            st["blocks"] += 1
            st[mt] = st.get(mt, 0) + 1
            st["mixed"] += sum(1 for c in u if c) > 1
            st["with_unmovable"] += u[0] > 0
            st["with_reclaimable"] += u[2] > 0
            st["free_blocks"] += f == PAGES_PER_BLOCK
    return st


def _per_row(blocks: int) -> int:
    """Squares per row for a machine of ``blocks`` pageblocks."""
    if blocks <= 1024:
        return 32
    if blocks <= 8192:
        return 64
    return 128


def _zone_image(z: dict[str, Any], per_row: int):
    """RGB image of one zone: a CELL×CELL square per pageblock, ``per_row`` a row."""
    import numpy as np

    n = len(z["migratetype"])
    rows = -(-n // per_row)
    img = np.full((rows * CELL, per_row * CELL, 3), 255, dtype=np.uint8)
    inner = CELL - GAP
    for i, (mt, f, u) in enumerate(zip(z["migratetype"], z["free"], z["used"], strict=True)):
        r, c = divmod(i, per_row)
        y0, x0 = r * CELL, c * CELL
        img[y0 : y0 + inner, x0 : x0 + inner] = _tint(TYPE_RGB.get(mt, TYPE_RGB["I"]))
        unmovable, movable, reclaimable = u
        other = max(0, PAGES_PER_BLOCK - f - unmovable - movable - reclaimable)
        # Bottom to top; any page of a kind gets at least one pixel row, so a
        # single unmovable page pinning a block stays visible.
        y = y0 + inner
        for count, rgb in zip((unmovable, reclaimable, movable, other), FILL_RGB, strict=True):
            if count <= 0:
                continue
            # Unmovable pages are what pins a block: at least two rows.
            least = 2 if rgb == FILL_RGB[0] else 1
            h = max(least, round(inner * count / PAGES_PER_BLOCK))
            h = min(h, y - y0)
            if h <= 0:
                break
            img[y - h : y, x0 : x0 + inner] = rgb
            y -= h
        if sum(1 for k in u if k) > 1:
            img[y0 : y0 + 4, x0 : x0 + 4] = MIXED_RGB
    return img, rows


def _panel_title(result: dict[str, Any], title: str | None, all_unmovable: bool) -> str:
    kernel = result.get("kernel", "?")
    head = title or f"kernel {kernel}"
    if title and kernel not in title:
        head = f"{title} (kernel {kernel})"
    sub = f"scenario {result.get('scenario', '')}, seed {result.get('seed', '')}"
    if all_unmovable:
        sub += "\nevery block is typed Unmovable (no grouping by mobility)"
    return f"{head}\n{sub}"


def pageblock_map_figure(results: list[dict[str, Any]], titles: Sequence[str] | None = None):
    """One panel per result (side by side), each populated zone's pageblocks as a grid.

    ``results`` are run results as dicts (``Result.data``); ``titles`` name the
    panels (default: the kernel's name). Returns a matplotlib figure; write it
    with :func:`save_atomic`.
    """
    if not results:
        raise ValueError("pageblock_map_figure: no results")
    if titles is not None and len(titles) != len(results):
        raise ValueError("pageblock_map_figure: one title per result")
    plt = _pyplot()
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    per_result = [_zones(r) for r in results]
    per_row = _per_row(max(sum(len(z["migratetype"]) for z in zs) for zs in per_result))
    # Zone rows are laid out identically in every panel (same machine in a comparison).
    zone_names: list[tuple[int, str]] = []
    rows_of: dict[tuple[int, str], int] = {}
    for zones in per_result:
        for z in zones:
            key = (z["node"], z["zone"])
            rows = -(-len(z["migratetype"]) // per_row)
            if key not in rows_of:
                zone_names.append(key)
            rows_of[key] = max(rows_of.get(key, 0), rows)
    if not zone_names:
        raise ValueError("pageblock_map_figure: the results have no pageblock map")
    heights = [rows_of[k] + 1.2 for k in zone_names]  # room for the zone label
    cell_in = 0.16 if per_row == 32 else 0.11 if per_row == 64 else 0.07
    ncols = len(results)
    fig_w = max(7.5, ncols * (per_row * cell_in + 1.1))
    fig_h = sum(heights) * cell_in + 2.9
    fig, axes = plt.subplots(
        len(zone_names),
        ncols,
        figsize=(fig_w, fig_h),
        squeeze=False,
        gridspec_kw={"height_ratios": heights, "hspace": 0.25, "wspace": 0.12},
    )
    for col, (result, zones) in enumerate(zip(results, per_result, strict=True)):
        by_key = {(z["node"], z["zone"]): z for z in zones}
        st = block_stats(result)
        for row, key in enumerate(zone_names):
            ax = axes[row][col]
            ax.set_xticks([])
            for side in ("top", "right", "bottom", "left"):
                ax.spines[side].set_visible(False)
            zone = by_key.get(key)
            rows = rows_of[key]
            if zone is None:
                ax.set_yticks([])
                ax.text(0.5, 0.5, "not populated", ha="center", va="center", transform=ax.transAxes)
                continue
            img, zrows = _zone_image(zone, per_row)
            ax.imshow(
                img,
                interpolation="nearest",
                extent=(0, per_row * CELL, zrows * CELL, 0),
                aspect="equal",
            )
            ax.set_xlim(0, per_row * CELL)
            ax.set_ylim(rows * CELL, 0)
            # Row labels: physical address of the row's first block.
            step = max(1, -(-zrows // 8))
            ticks = list(range(0, zrows, step))
            ax.set_yticks([(t + 0.45) * CELL for t in ticks])
            ax.set_yticklabels(
                [_mib(zone["start_pfn"] + t * per_row * PAGES_PER_BLOCK) for t in ticks], fontsize=7
            )
            ax.tick_params(axis="y", length=0, pad=2)
            n = len(zone["migratetype"])
            counts = " ".join(
                f"{letter}:{zone['migratetype'].count(letter)}"
                for letter in TYPE_NAMES
                if letter in zone["migratetype"]
            )
            ax.set_title(
                f"Node {key[0]}, zone {key[1]}: {n} pageblocks ({counts})",
                fontsize=8,
                loc="left",
                pad=3,
            )
        all_u = st["blocks"] > 0 and st["U"] == st["blocks"]
        axes[0][col].annotate(
            _panel_title(result, titles[col] if titles else None, all_u),
            xy=(0.5, 1.0),
            xycoords="axes fraction",
            xytext=(0, 24),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=10,
            fontweight="bold",
        )
        axes[-1][col].set_xlabel(
            f"{st['blocks']} pageblocks: {st['with_unmovable']} hold unmovable pages, "
            f"{st['with_reclaimable']} reclaimable, {st['mixed']} mixed, "
            f"{st['free_blocks']} entirely free",
            fontsize=8,
        )
    handles: list[Artist] = [
        Patch(facecolor=_hex(_tint(TYPE_RGB[k])), edgecolor="none", label=f"{v} block")
        for k, v in TYPE_NAMES.items()
    ]
    handles += [
        Patch(facecolor=_hex(rgb), edgecolor="none", label=name)
        for rgb, name in zip(FILL_RGB, FILL_NAMES, strict=True)
    ]
    handles.append(
        Line2D(
            [],
            [],
            marker="s",
            color="none",
            markerfacecolor="black",
            markersize=5,
            label="mixed block (>1 mobility)",
        )
    )
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=4 if ncols == 1 else 6,
        fontsize=7.5,
        frameon=False,
        title="one square = one pageblock (512 pages, 2 MiB); light background = its migratetype;\n"
        "solid bar from the bottom = its allocated pages by mobility (height = share of 512); "
        "light part = free",
        title_fontsize=7.5,
    )
    fig.suptitle("Pageblocks at the end of the run", fontsize=11)
    fig.subplots_adjust(left=0.07, right=0.99, top=1 - 1.3 / fig_h, bottom=1.05 / fig_h)
    return fig


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _mib(pfn: int) -> str:
    mib = pfn * 4096 / (1 << 20)
    return f"{mib / 1024:.2f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"
