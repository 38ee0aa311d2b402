# ruff: noqa: E501
"""Generates crates/vmsim-core/src/mm/vmstat_items.rs from a real /proc/vmstat.

Usage: python scripts/gen_vmstat_items.py tests/data/proc-vmstat.txt
The split points are those of a 6.18 kernel's vmstat_text[]: 11 zone items,
6 NUMA items, 51 node items, 2 dirty thresholds, 2 memmap items, the events,
and nr_unstable printed last.
"""

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "crates/vmsim-core/src/mm/vmstat_items.rs"


def enum(name: str, items: list[str], doc: str) -> str:
    s = f"/// {doc}\n#[allow(non_camel_case_types, missing_docs)]\n"
    s += "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n#[repr(usize)]\n"
    s += f"pub enum {name} {{\n" + "".join(f"    {it.upper()},\n" for it in items) + "}\n\n"
    s += f"impl {name} {{\n    /// Number of items.\n    pub const COUNT: usize = {len(items)};\n"
    s += "    /// /proc/vmstat names, in printing order.\n"
    s += f"    pub const NAMES: [&'static str; {len(items)}] = [\n"
    s += "".join(f'        "{it}",\n' for it in items) + "    ];\n}\n\n"
    return s


def main() -> None:
    names = [line.split()[0] for line in Path(sys.argv[1]).read_text().splitlines() if line]
    zone, numa, node = names[0:11], names[11:17], names[17:68]
    memmap, events, tail = names[70:72], names[72:191], names[191:]
    assert tail == ["nr_unstable"], tail
    out = "//! Generated from a real 6.18 /proc/vmstat (shared/formats/proc-vmstat.txt) by\n"
    out += "//! scripts/gen_vmstat_items.py; the order is the kernel's printing order.\n\n"
    out += enum(
        "ZoneStat",
        zone,
        "Per-zone counters (enum zone_stat_item), summed over zones in /proc/vmstat.",
    )
    out += enum("NumaStat", numa, "NUMA allocation counters (enum numa_stat_item).")
    out += enum(
        "NodeStat",
        node,
        "Per-node counters (enum node_stat_item), summed over nodes in /proc/vmstat.",
    )
    out += "/// The two dirty thresholds printed between node items and events.\n"
    out += 'pub const DIRTY_THRESHOLD_NAMES: [&str; 2] = ["nr_dirty_threshold", "nr_dirty_background_threshold"];\n\n'
    out += enum("MemmapStat", memmap, "Memmap counters (enum vm_stat_item tail).")
    out += enum("Event", events, "Event counters (enum vm_event_item).")
    out += '/// Legacy line printed last with value 0.\npub const TRAILER_NAMES: [&str; 1] = ["nr_unstable"];\n'
    OUT.write_text(out)


if __name__ == "__main__":
    main()
