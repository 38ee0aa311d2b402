//! /proc/vmstat, /proc/buddyinfo and /proc/pagetypeinfo, byte for byte.
//!
//! Models mm/vmstat.c: vmstat_start()/vmstat_show() (one `"%s %lu\n"` per
//! item: zone items summed over zones, NUMA, node items summed over nodes,
//! the dirty thresholds, memmap items, events), frag_show_print() and
//! pagetypeinfo_show(). Real 6.18 samples are in shared/formats/.

pub use super::vmstat_items::{
    Event, MemmapStat, NodeStat, NumaStat, ZoneStat, DIRTY_THRESHOLD_NAMES, TRAILER_NAMES,
};

use super::mmzone::{
    MigrateType, MIGRATE_TYPES, NR_PAGE_ORDERS, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER,
};
use super::Mm;
use std::fmt::Write;

/// One /proc/vmstat snapshot: (name, value) in the kernel's order.
pub type VmstatSnapshot = Vec<(&'static str, i64)>;

impl Mm {
    /// The values of /proc/vmstat in printing order (vmstat_start).
    ///
    /// `dirty_thresholds` are (nr_dirty_threshold, nr_dirty_background_threshold)
    /// as global_dirty_limits() computes them.
    pub fn vmstat_snapshot(&self, dirty_thresholds: (i64, i64)) -> VmstatSnapshot {
        let mut out = Vec::with_capacity(192);
        for (i, name) in ZoneStat::NAMES.iter().enumerate() {
            out.push((*name, self.zones.iter().map(|z| z.vm_stat[i]).sum()));
        }
        for (i, name) in NumaStat::NAMES.iter().enumerate() {
            out.push((*name, self.numa[i] as i64));
        }
        for (i, name) in NodeStat::NAMES.iter().enumerate() {
            out.push((*name, self.nodes.iter().map(|n| n.vm_stat[i]).sum()));
        }
        out.push((DIRTY_THRESHOLD_NAMES[0], dirty_thresholds.0));
        out.push((DIRTY_THRESHOLD_NAMES[1], dirty_thresholds.1));
        let memmap_pages = self
            .nodes
            .iter()
            .map(|n| (n.node_spanned_pages * 64).div_ceil(4096))
            .sum::<u64>();
        out.push((MemmapStat::NAMES[0], 0));
        out.push((MemmapStat::NAMES[1], memmap_pages as i64));
        for (i, name) in Event::NAMES.iter().enumerate() {
            out.push((*name, self.events[i] as i64));
        }
        out.push((TRAILER_NAMES[0], 0));
        out
    }

    /// /proc/buddyinfo (frag_show_print): populated zones only.
    pub fn buddyinfo(&self) -> String {
        let mut s = String::new();
        for z in self.zones.iter().filter(|z| z.populated()) {
            let _ = write!(s, "Node {}, zone {:>8} ", z.nid, z.zone_type.name());
            for area in &z.free_area {
                let _ = write!(s, "{:6} ", area.nr_free);
            }
            s.push('\n');
        }
        s
    }

    /// Pageblocks of each migratetype in a zone (pagetypeinfo_showblockcount_print), from
    /// the counters set_pageblock_migratetype() keeps ([`super::pageblock_stat`]).
    pub fn pageblock_counts(&self, zid: usize) -> [u64; MIGRATE_TYPES] {
        self.pb_stat.nr_mt[zid]
    }

    /// /proc/pagetypeinfo (pagetypeinfo_show).
    pub fn pagetypeinfo(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Page block order: {PAGEBLOCK_ORDER}");
        let _ = writeln!(s, "Pages per block:  {PAGEBLOCK_NR_PAGES}");
        s.push('\n');
        let _ = write!(s, "{:<43} ", "Free pages count per migrate type at order");
        for o in 0..NR_PAGE_ORDERS {
            let _ = write!(s, "{o:6} ");
        }
        s.push('\n');
        for z in self.zones.iter().filter(|z| z.populated()) {
            for mt in MigrateType::ALL {
                let _ = write!(
                    s,
                    "Node {:4}, zone {:>8}, type {:>12} ",
                    z.nid,
                    z.zone_type.name(),
                    mt.name()
                );
                for area in &z.free_area {
                    let _ = write!(s, "{:6} ", area.nr_free_mt[mt as usize]);
                }
                s.push('\n');
            }
        }
        s.push('\n');
        let _ = write!(s, "{:<23}", "Number of blocks type ");
        for mt in MigrateType::ALL {
            let _ = write!(s, "{:>12} ", mt.name());
        }
        s.push('\n');
        for z in self.zones.iter().filter(|z| z.populated()) {
            let _ = write!(s, "Node {}, zone {:>8} ", z.nid, z.zone_type.name());
            for c in self.pageblock_counts(z.id) {
                let _ = write!(s, "{c:12} ");
            }
            s.push('\n');
        }
        s
    }
}

/// The /proc files and memory cgroups as a `snapshot` operation read them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProcSnapshot {
    /// Name given by the operation.
    pub name: String,
    /// When it was read [s].
    pub time_seconds: f64,
    /// /proc/vmstat, in the kernel's order.
    pub vmstat: indexmap::IndexMap<&'static str, i64>,
    /// /proc/buddyinfo text.
    pub buddyinfo: String,
    /// /proc/slabinfo text.
    pub slabinfo: String,
    /// /proc/meminfo text.
    pub meminfo: String,
    /// Every memory cgroup's counters and memory.stat, when the scenario declares any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<super::memcontrol::MemcgReport>,
    /// /proc/swaps text, when the scenario has a swap device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swaps: Option<String>,
}

impl crate::kernel::Kernel {
    /// Reads /proc/vmstat, /proc/buddyinfo, /proc/slabinfo, /proc/meminfo and memory.stat
    /// at `now` [ns] (vmstat_show, frag_show, slabinfo_show, meminfo_proc_show,
    /// memcg_stat_show) into `proc_snapshots`.
    pub fn proc_snapshot(&mut self, name: &str, now: u64) {
        // Reading /proc/vmstat computes the dirty limits (vmstat_start → global_dirty_limits),
        // which fires global_dirty_state.
        let (bg, thresh) = self.global_dirty_limits();
        let v = |n: NodeStat| -> u64 {
            self.mm
                .nodes
                .iter()
                .map(|x| x.vm_stat[n as usize])
                .sum::<i64>()
                .max(0) as u64
        };
        let ev = crate::trace::TraceEvent::GlobalDirtyState {
            nr_dirty: v(NodeStat::NR_DIRTY),
            nr_writeback: v(NodeStat::NR_WRITEBACK),
            background_thresh: bg,
            dirty_thresh: thresh,
            dirty_limit: thresh,
            nr_dirtied: v(NodeStat::NR_DIRTIED),
            nr_written: v(NodeStat::NR_WRITTEN),
        };
        self.trace(ev);
        let snap = self.vmstat_snapshot();
        let mm = &self.mm;
        let s = ProcSnapshot {
            name: name.to_string(),
            time_seconds: now as f64 / 1e9,
            vmstat: snap.into_iter().collect(),
            buddyinfo: mm.buddyinfo(),
            slabinfo: self.slab.slabinfo(),
            meminfo: self.meminfo(),
            memcg: mm.memcg.enabled().then(|| mm.memcg.report(&mm.nodes)),
            swaps: (!self.swap.devices.is_empty()).then(|| self.swap.proc_swaps()),
        };
        self.proc_snapshots.push(s);
    }
}

/// Renders a snapshot as /proc/vmstat text.
pub fn vmstat_text(snap: &VmstatSnapshot) -> String {
    let mut s = String::with_capacity(snap.len() * 24);
    for (name, v) in snap {
        let _ = writeln!(s, "{name} {v}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;

    const REAL_VMSTAT: &str = include_str!("../../../../tests/data/proc-vmstat.txt");
    const REAL_PAGETYPEINFO: &str = include_str!("../../../../tests/data/proc-pagetypeinfo.txt");
    const REAL_BUDDYINFO: &str = include_str!("../../../../tests/data/proc-buddyinfo.txt");

    fn mm() -> Mm {
        let sc = Scenario::from_toml("[machine]\nmemory=\"8GiB\"\ncpus=2\n").unwrap();
        Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
    }

    #[test]
    fn vmstat_names_and_order_match_a_real_kernel() {
        let snap = mm().vmstat_snapshot((0, 0));
        let ours: Vec<&str> = snap.iter().map(|(n, _)| *n).collect();
        let real: Vec<&str> = REAL_VMSTAT
            .lines()
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(ours, real);
    }

    #[test]
    fn buddyinfo_layout_matches_a_real_kernel() {
        let ours = mm().buddyinfo();
        // Same three zones and the same column layout (fixed-width fields, trailing space).
        for (o, r) in ours.lines().zip(REAL_BUDDYINFO.lines()) {
            assert_eq!(o.len(), r.len(), "{o:?} vs {r:?}");
            assert_eq!(&o[..22], &r[..22]);
            assert!(o.ends_with(' '));
        }
        assert_eq!(ours.lines().count(), 3);
    }

    #[test]
    fn pagetypeinfo_layout_matches_a_real_kernel() {
        let ours = mm().pagetypeinfo();
        let ol: Vec<&str> = ours.lines().collect();
        let rl: Vec<&str> = REAL_PAGETYPEINFO.lines().collect();
        assert_eq!(ol.len(), rl.len());
        for (o, r) in ol.iter().zip(rl.iter()) {
            assert_eq!(o.len(), r.len(), "line length differs:\n{o:?}\n{r:?}");
            // Labels (everything but the numbers) are identical.
            let strip = |t: &str| {
                t.split_whitespace()
                    .filter(|w| w.parse::<u64>().is_err())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            assert_eq!(strip(o), strip(r));
        }
    }
}
