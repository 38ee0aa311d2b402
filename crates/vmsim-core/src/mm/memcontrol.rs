//! Memory cgroups: the hierarchy, page counters, limits and soft-limit reclaim.
//!
//! Models mm/memcontrol.c (and the cgroup-v1 parts now in mm/memcontrol-v1.c):
//! `struct mem_cgroup` with its `page_counter` (usage, max, min, low), the
//! v1 soft limit, cgroup v2's memory.high and memory.events, per-group per-node lruvecs (`mem_cgroup_per_node`),
//! charging up the hierarchy (`try_charge`, `page_counter_try_charge`),
//! limit reclaim (`try_to_free_mem_cgroup_pages`) and the memcg OOM, the
//! hierarchy walk of global reclaim (`mem_cgroup_iter`, `shrink_node_memcgs`)
//! and the three soft-limit reclaim kernels of seed 002 (the switch
//! `kernel.soft_limit_reclaim`):
//!
//! - `base` (3.11, and today's v1): the soft-limit tree per node, ordered by
//!   excess, updated every [`SOFTLIMIT_EVENTS_TARGET`] page events; kswapd and
//!   direct reclaim first reclaim the largest-excess subtree at priority 0
//!   (`mem_cgroup_soft_limit_reclaim`), then shrink the node walking every group.
//!   The tree and its reclaim are in memcontrol_v1.rs.
//! - `rework` (Hocko's series, patches 1–4): no tree; shrink_node walks the
//!   whole hierarchy once reclaiming only from groups that are, or have an
//!   ancestor, over their soft limit (`mem_cgroup_soft_reclaim_eligible`
//!   climbs to the root for every group), and walks again without the filter
//!   if that pass scanned nothing.
//! - `reworkoptim` (patch 5 with 6–7): as rework, plus `children_in_excess`
//!   per group, so the filtered walk skips whole subtrees with no group in
//!   excess, and a system with no group in excess skips the filtered pass.
//!
//! Simplifications: a page's group is its owner's — anonymous pages belong to
//! the group of the task that maps them, page cache to the group of the task
//! that created the file (the kernel charges the task that faults the page
//! in); a group never moves. Charges are per page, without the per-CPU stock,
//! unless `kernel.memcg_charge_batch` (6.1's default) turns on the batch and the
//! stock of memcg_stock.rs.
//! Swap-cache pages are uncharged when they leave their page table (no memsw
//! counter). The soft-limit tree is per node, not per zone. memory.min and
//! memory.low protect a group by its own usage (no effective-protection
//! distribution among siblings). Per-memcg lruvec sizes are not split by
//! zone. The root group's lruvec is the node's.

use super::gfp::{Gfp, __GFP_DIRECT_RECLAIM, GFP_KERNEL};
use super::mmzone::{lru, Lruvec, PgData};
use super::page::{PageKind, Pfn, NIL, NO_OWNER};
use super::vmscan::{ScanControl, MAX_RECLAIM_RETRIES, SWAP_CLUSTER_MAX};
use crate::config::{CgroupShape, CgroupSpec, MemcgReclaimIter, SoftLimitReclaim};
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::page::PAGE_SIZE;
use crate::trace::TraceEvent;
use std::collections::BTreeSet;

/// Pages charged per refill of a CPU's charge stock (MEMCG_CHARGE_BATCH).
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// Fixed-point shift of an overage over memory.high (MEMCG_DELAY_PRECISION_SHIFT).
pub const MEMCG_DELAY_PRECISION_SHIFT: u32 = 20;
/// Scaling of the squared overage into jiffies (MEMCG_DELAY_SCALING_SHIFT).
pub const MEMCG_DELAY_SCALING_SHIFT: u32 = 14;
/// Longest over-high penalty per return to user space (MEMCG_MAX_HIGH_DELAY_JIFFIES = 2 * HZ) [s].
pub const MEMCG_MAX_HIGH_DELAY_SECS: u64 = 2;

/// The jiffies a task that charged `nr_pages` over memory.high sleeps for an overage
/// (calculate_high_delay): quadratic in the overage, in proportion to the task's share
/// of a charge batch.
pub fn calculate_high_delay(nr_pages: u64, max_overage: u64, hz: u64) -> u64 {
    if max_overage == 0 {
        return 0;
    }
    let o = max_overage as u128;
    let penalty = (o * o * hz as u128) >> (MEMCG_DELAY_PRECISION_SHIFT + MEMCG_DELAY_SCALING_SHIFT);
    (penalty * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128).min(u64::MAX as u128) as u64
}

/// Id of the root group (root_mem_cgroup).
pub const ROOT_MEM_CGROUP: u32 = 0;
/// "No group": the end of a sibling or child list.
pub const NO_MEMCG: u32 = u32::MAX;
/// The limit of a group without one (PAGE_COUNTER_MAX) [pages].
pub const PAGE_COUNTER_MAX: u64 = i64::MAX as u64 / PAGE_SIZE;
/// Page events between soft-limit tree / children_in_excess updates (SOFTLIMIT_EVENTS_TARGET, 3.11).
pub const SOFTLIMIT_EVENTS_TARGET: u64 = 1024;
/// Rounds of one subtree in soft-limit reclaim before giving up (MEM_CGROUP_MAX_RECLAIM_LOOPS).
pub const MEM_CGROUP_MAX_RECLAIM_LOOPS: u32 = 100;
/// Groups tried from the soft-limit tree when none reclaims (MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS).
pub const MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS: u32 = 2;

/// Per-group counters, named as memory.stat prints them (v1 names).
pub mod stat {
    /// Page cache charged to the group [pages].
    pub const CACHE: usize = 0;
    /// Anonymous memory charged to the group [pages].
    pub const RSS: usize = 1;
    /// Charging events (pgpgin).
    pub const PGPGIN: usize = 2;
    /// Uncharging events (pgpgout).
    pub const PGPGOUT: usize = 3;
    /// Page faults of the group's tasks (pgfault).
    pub const PGFAULT: usize = 4;
    /// Pages reclaimed from the group's lruvecs (v2 pgsteal).
    pub const PGSTEAL: usize = 5;
    /// Number of counters.
    pub const NR: usize = 6;
    /// Dirty page-cache pages (NR_FILE_DIRTY; v1 dirty, v2 file_dirty); in [`super::MemcgExt`].
    pub const DIRTY: usize = 0;
    /// Pages under writeback, page cache and swap (NR_WRITEBACK); in [`super::MemcgExt`].
    pub const WRITEBACK: usize = 1;
    /// Page-cache pages read back after eviction (WORKINGSET_REFAULT_FILE); in [`super::MemcgExt`].
    pub const WORKINGSET_REFAULT_FILE: usize = 2;
    /// Anonymous pages read back from swap with a shadow (WORKINGSET_REFAULT_ANON); in [`super::MemcgExt`].
    pub const WORKINGSET_REFAULT_ANON: usize = 3;
    /// Swap slots charged to the group (MEMCG_SWAP; v1 swap); in [`super::MemcgExt`].
    pub const SWAP: usize = 4;
    /// The group's pages in the swap cache (NR_SWAPCACHE; swapcached); in [`super::MemcgExt`].
    pub const SWAPCACHED: usize = 5;
    /// Number of the counters kept in [`super::MemcgExt`].
    pub const NR_EXT: usize = 6;
}

/// The events of memory.events (enum memcg_memory_event).
pub mod memcg_event {
    /// Reclaimed while under memory.low protection (MEMCG_LOW).
    pub const LOW: usize = 0;
    /// Usage went over memory.high and its reclaim ran (MEMCG_HIGH).
    pub const HIGH: usize = 1;
    /// A charge hit memory.max (MEMCG_MAX).
    pub const MAX: usize = 2;
    /// The memcg OOM killer was invoked (MEMCG_OOM).
    pub const OOM: usize = 3;
    /// A task of the group was OOM-killed (MEMCG_OOM_KILL).
    pub const OOM_KILL: usize = 4;
    /// Number of events.
    pub const NR: usize = 5;
    /// memory.events names, in the kernel's order.
    pub const NAMES: [&str; NR] = ["low", "high", "max", "oom", "oom_kill"];
}

/// A hierarchical page counter (struct page_counter) [pages].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCounter {
    /// Pages charged to the group and its descendants (usage).
    pub usage: u64,
    /// Hard limit (max; memory.limit_in_bytes / memory.max).
    pub max: u64,
    /// Hard protection (memory.min).
    pub min: u64,
    /// Best-effort protection (memory.low).
    pub low: u64,
    /// Largest usage seen (watermark; memory.max_usage_in_bytes).
    pub watermark: u64,
    /// Charges refused by the limit (failcnt).
    pub failcnt: u64,
}

impl Default for PageCounter {
    fn default() -> Self {
        PageCounter {
            usage: 0,
            max: PAGE_COUNTER_MAX,
            min: 0,
            low: 0,
            watermark: 0,
            failcnt: 0,
        }
    }
}

/// One memory cgroup (struct mem_cgroup), 128 bytes or so; lruvecs come lazily.
#[derive(Debug, Clone)]
pub struct MemCgroup {
    /// Parent group, NO_MEMCG for the root.
    pub parent: u32,
    /// First child.
    pub first_child: u32,
    /// Last child (where new children are appended).
    pub last_child: u32,
    /// Next sibling in creation order.
    pub next_sibling: u32,
    /// Depth below the root (root: 0).
    pub depth: u32,
    /// memory page counter.
    pub memory: PageCounter,
    /// memory.soft_limit_in_bytes [pages].
    pub soft_limit: u64,
    /// Descendants whose usage is over their soft limit (children_in_excess, seed 002).
    pub children_in_excess: u32,
    /// This group counts in its ancestors' children_in_excess (soft_contributed).
    pub soft_contributed: bool,
    /// Charge and uncharge events since creation (nr_page_events).
    pub nr_page_events: u64,
    /// Local counters, indexed by [`stat`].
    pub stat: [u64; stat::NR],
    /// This group's [`MemcgExt`] in `MemcgState::ext`, or NO_MEMCG before it needs one.
    pub ext: u32,
    /// First of this group's per-node records in `MemcgState::pn`, or NO_MEMCG before its first charge.
    pub pn: u32,
}

impl MemCgroup {
    fn new(parent: u32, depth: u32) -> Self {
        MemCgroup {
            parent,
            first_child: NO_MEMCG,
            last_child: NO_MEMCG,
            next_sibling: NO_MEMCG,
            depth,
            memory: PageCounter::default(),
            soft_limit: PAGE_COUNTER_MAX,
            children_in_excess: 0,
            soft_contributed: false,
            nr_page_events: 0,
            stat: [0; stat::NR],
            ext: NO_MEMCG,
            pn: NO_MEMCG,
        }
    }

    /// Pages over the soft limit (soft_limit_excess) [pages].
    #[inline(always)]
    pub fn soft_limit_excess(&self) -> u64 {
        self.memory.usage.saturating_sub(self.soft_limit)
    }
}

// Empty groups must stay cheap: 100,000 of them in well under 20 MB.
const _: () = assert!(std::mem::size_of::<MemCgroup>() <= 160);

/// What a group needs once it has dirty pages, events or memory.high (kept apart so
/// that empty groups stay small).
#[derive(Debug, Clone)]
pub struct MemcgExt {
    /// Counters indexed by `stat::DIRTY`, `stat::WRITEBACK`, `stat::WORKINGSET_REFAULT_FILE`.
    pub stat: [u64; stat::NR_EXT],
    /// memory.events, this group's and its descendants', indexed by [`memcg_event`].
    pub events: [u64; memcg_event::NR],
    /// memory.high (v2) [pages].
    pub high: u64,
    /// memory+swap page counter (cgroup v1 memory.memsw.*; charged with `memory` while
    /// memsw is accounted, and held by swap slots after swap-out).
    pub memsw: PageCounter,
    /// swap page counter (cgroup v2 memory.swap.*; charged per swap slot).
    pub swap: PageCounter,
    /// memory.swappiness (cgroup v1); None follows vm.swappiness.
    pub swappiness: Option<u64>,
    /// Kernel memory charged to the group and its descendants (the v1 `memcg->kmem`
    /// counter, memory.kmem.*; charged without a limit by memcg1_account_kmem) [pages].
    pub kmem: PageCounter,
    /// Kernel memory charged to this group itself (MEMCG_KMEM, memory.stat `kernel`) [pages].
    pub kmem_local: u64,
    /// Bytes charged and left over when a CPU's byte stock drained (objcg->nr_charged_bytes).
    pub nr_charged_bytes: u64,
    /// Slab objects charged to this group: NR_SLAB_RECLAIMABLE_B, NR_SLAB_UNRECLAIMABLE_B [bytes].
    pub slab_b: [u64; 2],
    /// zswap's compressed copies charged to this group (MEMCG_ZSWAP_B) [bytes].
    pub zswap_b: u64,
    /// Pages zswap holds for this group (MEMCG_ZSWAPPED).
    pub zswapped: u64,
    /// Pages of this group loaded from zswap (ZSWPIN).
    pub zswpin: u64,
    /// Pages of this group stored in zswap (ZSWPOUT).
    pub zswpout: u64,
    /// Pages of this group written back from zswap (ZSWPWB).
    pub zswpwb: u64,
}

impl Default for MemcgExt {
    fn default() -> Self {
        MemcgExt {
            stat: [0; stat::NR_EXT],
            events: [0; memcg_event::NR],
            high: PAGE_COUNTER_MAX,
            memsw: PageCounter::default(),
            swap: PageCounter::default(),
            swappiness: None,
            kmem: PageCounter::default(),
            kmem_local: 0,
            nr_charged_bytes: 0,
            slab_b: [0; 2],
            zswap_b: 0,
            zswapped: 0,
            zswpin: 0,
            zswpout: 0,
            zswpwb: 0,
        }
    }
}

/// A group's state on one node (struct mem_cgroup_per_node).
#[derive(Debug, Default)]
pub struct MemCgroupPerNode {
    /// The group's LRU lists on the node.
    pub lruvec: Lruvec,
    /// Excess the group is keyed by on the node's soft-limit tree (usage_in_excess) [pages].
    pub usage_in_excess: u64,
    /// On the soft-limit tree (on_tree).
    pub on_tree: bool,
}

/// Result of the soft-reclaim filter of the reworked iterator (enum mem_cgroup_filter_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemcgFilter {
    /// Reclaim from this group.
    Visit,
    /// Skip this group but walk its children.
    Skip,
    /// Skip this group and its whole subtree.
    SkipTree,
}

/// Counters of the hierarchy walks, for reports.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MemcgWalkStats {
    /// Groups visited by mem_cgroup_iter in reclaim.
    pub groups_visited: u64,
    /// Levels climbed by soft-limit eligibility checks.
    pub eligibility_climbs: u64,
    /// shrink_node_memcgs calls.
    pub shrink_node_memcgs: u64,
    /// Second, unfiltered passes after a soft pass scanned nothing (rework, reworkoptim).
    pub soft_fallback_passes: u64,
    /// mem_cgroup_soft_limit_reclaim calls (base).
    pub soft_limit_reclaim_calls: u64,
    /// Pages reclaimed by mem_cgroup_soft_limit_reclaim (base).
    pub soft_limit_reclaimed: u64,
    /// Limit reclaims (try_to_free_mem_cgroup_pages).
    pub limit_reclaims: u64,
    /// memcg OOM kills.
    pub oom_kills: u64,
}

/// The memory cgroups of the machine: an arena indexed by group id.
#[derive(Debug)]
pub struct MemcgState {
    /// Every group; index = id; 0 is the root.
    pub groups: Vec<MemCgroup>,
    /// Names of explicitly declared groups (path → id); generated groups are named by id.
    pub paths: indexmap::IndexMap<String, u32>,
    /// Per-node records, `nr_nodes` consecutive ones per group that has been charged.
    pub pn: Vec<MemCgroupPerNode>,
    /// Nodes of the machine.
    pub nr_nodes: usize,
    /// Group of each rmap chunk's owner (chunks belong to one task or file).
    pub chunk_memcg: Vec<u32>,
    /// Group of each task, by task id (root when absent).
    pub task_memcg: Vec<u32>,
    /// Group charged for each file's pages, by inode number (root when absent).
    pub inode_memcg: Vec<u32>,
    /// The soft-limit trees, one per node: (usage_in_excess, group) (soft_limit_tree, base).
    pub soft_limit_tree: Vec<BTreeSet<(u64, u32)>>,
    /// The group whose lruvec reclaim is scanning now (the lruvec argument of shrink_lruvec).
    pub scan_memcg: u32,
    /// Walk statistics.
    pub walk: MemcgWalkStats,
    /// The memory controller is on cgroup v2 (cgroup_subsys_on_dfl(memory_cgrp_subsys)).
    pub dfl: bool,
    /// The groups' [`MemcgExt`] records.
    pub ext: Vec<MemcgExt>,
    /// Every CPU's charge stock (memcg_stock_pcp), used under `kernel.memcg_charge_batch`.
    pub stock: super::memcg_stock::MemcgStock,
    /// The memsw counter counts failcnt (6.1; 6.18 sets track_failcnt on memory only).
    pub memsw_failcnt: bool,
    /// Where each target's partial reclaim walk stopped, by (target, node): the
    /// mem_cgroup_reclaim_iter position of `kernel.memcg_reclaim_iter = "cookie"`.
    pub reclaim_iter: std::collections::HashMap<(u32, usize), u32>,
}

impl MemcgState {
    /// Only the root group.
    pub fn new(nr_nodes: usize) -> Self {
        MemcgState {
            groups: vec![MemCgroup::new(NO_MEMCG, 0)],
            paths: indexmap::IndexMap::new(),
            pn: Vec::new(),
            nr_nodes,
            chunk_memcg: Vec::new(),
            task_memcg: Vec::new(),
            inode_memcg: Vec::new(),
            soft_limit_tree: (0..nr_nodes).map(|_| BTreeSet::new()).collect(),
            scan_memcg: ROOT_MEM_CGROUP,
            walk: MemcgWalkStats::default(),
            dfl: false,
            ext: Vec::new(),
            stock: super::memcg_stock::MemcgStock::default(),
            memsw_failcnt: true,
            reclaim_iter: std::collections::HashMap::new(),
        }
    }

    /// A group's [`MemcgExt`], made on first use.
    #[inline]
    pub fn ext_mut(&mut self, id: u32) -> &mut MemcgExt {
        if self.groups[id as usize].ext == NO_MEMCG {
            self.groups[id as usize].ext = self.ext.len() as u32;
            self.ext.push(MemcgExt::default());
        }
        &mut self.ext[self.groups[id as usize].ext as usize]
    }

    /// A group's [`MemcgExt`], or the defaults when it has none.
    #[inline]
    pub fn ext(&self, id: u32) -> std::borrow::Cow<'_, MemcgExt> {
        match self.groups[id as usize].ext {
            NO_MEMCG => std::borrow::Cow::Owned(MemcgExt::default()),
            e => std::borrow::Cow::Borrowed(&self.ext[e as usize]),
        }
    }

    /// memory.high of a group [pages].
    #[inline]
    pub fn high(&self, id: u32) -> u64 {
        match self.groups[id as usize].ext {
            NO_MEMCG => PAGE_COUNTER_MAX,
            e => self.ext[e as usize].high,
        }
    }

    /// Counts a memory.events event in a group and its ancestors below the root
    /// (memcg_memory_event).
    pub fn memcg_memory_event(&mut self, id: u32, event: usize) {
        let mut g = id;
        while g != ROOT_MEM_CGROUP && g != NO_MEMCG {
            self.ext_mut(g).events[event] += 1;
            g = self.groups[g as usize].parent;
        }
    }

    /// The largest overage over memory.high from a group up to the root's child, in
    /// 1/2^20 of the limit (mem_find_max_overage → calculate_overage).
    pub fn mem_find_max_overage(&self, id: u32) -> u64 {
        let mut max_overage = 0;
        let mut g = id;
        while g != ROOT_MEM_CGROUP && g != NO_MEMCG {
            let usage = self.groups[g as usize].memory.usage;
            let high = self.high(g);
            if usage > high {
                let high = high.max(1);
                let overage =
                    (((usage - high) as u128) << MEMCG_DELAY_PRECISION_SHIFT) / high as u128;
                max_overage = max_overage.max(overage.min(u64::MAX as u128) as u64);
            }
            g = self.groups[g as usize].parent;
        }
        max_overage
    }

    /// Whether any group besides the root exists; without one every path is today's.
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.groups.len() > 1
    }

    /// Creates an empty child of `parent` (mem_cgroup_css_alloc + online); returns its id.
    pub fn mem_cgroup_alloc(&mut self, parent: u32) -> u32 {
        let id = self.groups.len() as u32;
        let depth = self.groups[parent as usize].depth + 1;
        self.groups.push(MemCgroup::new(parent, depth));
        // mem_cgroup_css_alloc(): a new group starts with its parent's swappiness.
        if let Some(v) = self.ext(parent).swappiness {
            self.ext_mut(id).swappiness = Some(v);
        }
        let p = &mut self.groups[parent as usize];
        if p.last_child == NO_MEMCG {
            p.first_child = id;
        } else {
            let last = p.last_child as usize;
            self.groups[last].next_sibling = id;
        }
        self.groups[parent as usize].last_child = id;
        id
    }

    /// Creates `n` empty groups below `parent`, two children per group, breadth first
    /// (the "bunch" hierarchy of seed 002); returns the first id.
    pub fn generate_binary(&mut self, parent: u32, n: u64) -> u32 {
        let first = self.groups.len() as u32;
        self.groups.reserve(n as usize);
        for i in 0..n {
            // Group i (0-based) hangs below `parent` for i < 2, else below group (i - 2) / 2.
            let p = if i < 2 {
                parent
            } else {
                first + ((i - 2) / 2) as u32
            };
            self.mem_cgroup_alloc(p);
        }
        first
    }

    /// Creates `n` empty children of `parent`; returns the first id.
    pub fn generate_flat(&mut self, parent: u32, n: u64) -> u32 {
        let first = self.groups.len() as u32;
        for _ in 0..n {
            self.mem_cgroup_alloc(parent);
        }
        first
    }

    /// The next group of a pre-order walk of `root`'s subtree after `pos`, descending
    /// into `pos`'s children unless `skip_children` (css_next_descendant_pre, or the
    /// jump past cgroup_rightmost_descendant when skipping a subtree).
    #[inline]
    pub fn next_pre(&self, pos: u32, root: u32, skip_children: bool) -> u32 {
        let g = &self.groups[pos as usize];
        if !skip_children && g.first_child != NO_MEMCG {
            return g.first_child;
        }
        let mut p = pos;
        while p != root {
            let g = &self.groups[p as usize];
            if g.next_sibling != NO_MEMCG {
                return g.next_sibling;
            }
            p = g.parent;
        }
        NO_MEMCG
    }

    /// Path of a group as cgroupfs shows it below the root ("/" for the root).
    pub fn path(&self, id: u32) -> String {
        if id == ROOT_MEM_CGROUP {
            return "/".to_string();
        }
        if let Some((p, _)) = self.paths.iter().find(|(_, &v)| v == id) {
            return p.clone();
        }
        let parent = self.groups[id as usize].parent;
        let pp = self.path(parent);
        if pp == "/" {
            format!("g{id}")
        } else {
            format!("{pp}/g{id}")
        }
    }

    /// The group a page is charged to (folio_memcg): its owner's.
    #[inline(always)]
    pub fn folio_memcg(&self, kind: PageKind, owner: u32) -> u32 {
        if !self.enabled() || !matches!(kind, PageKind::Anon | PageKind::File) {
            return ROOT_MEM_CGROUP;
        }
        self.chunk_memcg
            .get((owner >> super::rmap::CHUNK_SHIFT) as usize)
            .copied()
            .unwrap_or(ROOT_MEM_CGROUP)
    }

    /// Allocates a group's per-node records on first use (alloc_mem_cgroup_per_node_info).
    pub(super) fn ensure_pn(&mut self, id: u32) {
        if self.groups[id as usize].pn == NO_MEMCG {
            self.groups[id as usize].pn = self.pn.len() as u32;
            for _ in 0..self.nr_nodes {
                self.pn.push(MemCgroupPerNode::default());
            }
        }
    }

    /// A group's per-node record, if it has been charged.
    #[inline(always)]
    pub fn mem_cgroup_nodeinfo(&self, id: u32, nid: usize) -> Option<&MemCgroupPerNode> {
        let pn = self.groups[id as usize].pn;
        (pn != NO_MEMCG).then(|| &self.pn[pn as usize + nid])
    }

    /// Pages on a group's lruvec lists of a node (lruvec_lru_size over all lists but unevictable).
    #[inline]
    pub fn lruvec_pages(&self, id: u32, nid: usize, nodes: &[PgData]) -> u64 {
        let lv = if id == ROOT_MEM_CGROUP {
            &nodes[nid].lruvec
        } else {
            match self.mem_cgroup_nodeinfo(id, nid) {
                Some(pn) => &pn.lruvec,
                None => return 0,
            }
        };
        lv.nr[..lru::UNEVICTABLE].iter().sum()
    }

    /// Charges `n` pages to `id` and every ancestor unless one would exceed its
    /// limit (page_counter_try_charge); Err(group over its limit) on failure.
    pub fn page_counter_try_charge(&mut self, id: u32, n: u64) -> Result<(), u32> {
        self.counter_try_charge(id, n, true, |m, c| &mut m.groups[c as usize].memory)
    }

    /// [`MemcgState::page_counter_try_charge`] on the counter `which` selects; a refusal
    /// counts in failcnt if `track_failcnt` (page_counter->track_failcnt).
    fn counter_try_charge(
        &mut self,
        id: u32,
        n: u64,
        track_failcnt: bool,
        which: fn(&mut MemcgState, u32) -> &mut PageCounter,
    ) -> Result<(), u32> {
        let mut c = id;
        while c != NO_MEMCG {
            let pc = which(self, c);
            if pc.usage + n > pc.max {
                if track_failcnt {
                    pc.failcnt += 1;
                }
                // Undo the levels below.
                let mut u = id;
                while u != c {
                    which(self, u).usage -= n;
                    u = self.groups[u as usize].parent;
                }
                return Err(c);
            }
            pc.usage += n;
            pc.watermark = pc.watermark.max(pc.usage);
            c = self.groups[c as usize].parent;
        }
        Ok(())
    }

    /// Charges `n` pages of the counter `which` selects to `id` and every ancestor,
    /// whatever their limits (page_counter_charge).
    fn counter_charge(
        &mut self,
        id: u32,
        n: u64,
        which: fn(&mut MemcgState, u32) -> &mut PageCounter,
    ) {
        let mut c = id;
        while c != NO_MEMCG {
            let pc = which(self, c);
            pc.usage += n;
            pc.watermark = pc.watermark.max(pc.usage);
            c = self.groups[c as usize].parent;
        }
    }

    /// Charges `n` pages to memory and, under v1, memsw over any limit (try_charge_memcg's
    /// `force:` of a charge that may not fail).
    pub fn force_charge_memory_memsw(&mut self, id: u32, n: u64) {
        self.counter_charge(id, n, |m, c| &mut m.groups[c as usize].memory);
        if self.do_memsw_account() {
            self.counter_charge(id, n, |m, c| &mut m.ext_mut(c).memsw);
        }
    }

    /// Moves a group's kernel-memory counters by `nr_pages`: MEMCG_KMEM and the v1 kmem
    /// page counter (account_kmem_nmi_safe + memcg1_account_kmem).
    pub fn memcg_account_kmem(&mut self, id: u32, nr_pages: i64) {
        let e = self.ext_mut(id);
        e.kmem_local = e.kmem_local.wrapping_add_signed(nr_pages);
        if nr_pages >= 0 {
            self.counter_charge(id, nr_pages as u64, |m, c| &mut m.ext_mut(c).kmem);
        } else {
            self.counter_uncharge(id, nr_pages.unsigned_abs(), |m, c| &mut m.ext_mut(c).kmem);
        }
    }

    /// Uncharges `n` pages of the counter `which` selects from `id` and every ancestor.
    fn counter_uncharge(
        &mut self,
        id: u32,
        n: u64,
        which: fn(&mut MemcgState, u32) -> &mut PageCounter,
    ) {
        let mut c = id;
        while c != NO_MEMCG {
            let pc = which(self, c);
            debug_assert!(pc.usage >= n, "memcg {c}: a counter uncharged below zero");
            pc.usage -= n;
            c = self.groups[c as usize].parent;
        }
    }

    /// Whether swap is charged with memory in one memsw counter (do_memsw_account):
    /// cgroup v1 with groups.
    #[inline]
    pub fn do_memsw_account(&self) -> bool {
        self.enabled() && !self.dfl
    }

    /// Charges `n` pages to memsw (under v1) and then memory, as try_charge_memcg does;
    /// Err((group over its limit, whether it was the memsw limit)).
    pub fn try_charge_memsw_memory(&mut self, id: u32, n: u64) -> Result<(), (u32, bool)> {
        let memsw = self.do_memsw_account();
        if memsw {
            let track = self.memsw_failcnt;
            self.counter_try_charge(id, n, track, |m, c| &mut m.ext_mut(c).memsw)
                .map_err(|over| (over, true))?;
        }
        self.page_counter_try_charge(id, n).map_err(|over| {
            if memsw {
                self.counter_uncharge(id, n, |m, c| &mut m.ext_mut(c).memsw);
            }
            (over, false)
        })
    }

    /// Uncharges `n` pages from memory and, under v1, memsw (page_counter_uncharge of both).
    pub fn uncharge_memory_memsw(&mut self, id: u32, n: u64) {
        self.page_counter_uncharge(id, n);
        if self.do_memsw_account() {
            self.counter_uncharge(id, n, |m, c| &mut m.ext_mut(c).memsw);
        }
    }

    /// Charges one swap slot to `id` against memory.swap.max (v2, page_counter_try_charge
    /// of memcg->swap); Err(group over its limit).
    pub fn swap_try_charge(&mut self, id: u32) -> Result<(), u32> {
        self.counter_try_charge(id, 1, true, |m, c| &mut m.ext_mut(c).swap)
    }

    /// Uncharges one swap slot from `id`: memsw under v1, swap under v2.
    pub fn swap_uncharge(&mut self, id: u32) {
        if self.do_memsw_account() {
            self.counter_uncharge(id, 1, |m, c| &mut m.ext_mut(c).memsw);
        } else {
            self.counter_uncharge(id, 1, |m, c| &mut m.ext_mut(c).swap);
        }
    }

    /// The swappiness reclaim uses for a group (mem_cgroup_swappiness): its own under v1,
    /// vm.swappiness for the root and under v2.
    pub fn mem_cgroup_swappiness(&self, id: u32, vm_swappiness: u64) -> u64 {
        if self.dfl || id == ROOT_MEM_CGROUP || id as usize >= self.groups.len() {
            return vm_swappiness;
        }
        self.ext(id).swappiness.unwrap_or(vm_swappiness)
    }

    /// Pages `id` may still charge before its limit (mem_cgroup_margin).
    pub fn mem_cgroup_margin(&self, id: u32) -> u64 {
        let m = &self.groups[id as usize].memory;
        m.max.saturating_sub(m.usage)
    }

    /// Uncharges `n` pages from `id` and every ancestor (page_counter_uncharge).
    pub fn page_counter_uncharge(&mut self, id: u32, n: u64) {
        self.counter_uncharge(id, n, |m, c| &mut m.groups[c as usize].memory);
    }

    /// Commits a charge's local statistics and runs the event ratelimit (mem_cgroup_commit_charge,
    /// memcg_check_events); `nid` is the page's node.
    pub fn commit_charge(&mut self, id: u32, file: bool, nid: usize, nr: u64) {
        self.ensure_pn(id);
        let g = &mut self.groups[id as usize];
        g.stat[if file { stat::CACHE } else { stat::RSS }] += nr;
        g.stat[stat::PGPGIN] += 1;
        self.memcg_check_events_nr(id, nid, nr);
    }

    /// Drops an uncharge's local statistics and runs the event ratelimit.
    pub fn commit_uncharge(&mut self, id: u32, file: bool, nid: usize, nr: u64) {
        let g = &mut self.groups[id as usize];
        let s = if file { stat::CACHE } else { stat::RSS };
        g.stat[s] = g.stat[s].saturating_sub(nr);
        g.stat[stat::PGPGOUT] += 1;
        self.memcg_check_events_nr(id, nid, nr);
    }

    /// [`MemCgroupTable::memcg_check_events`] for a folio of `nr` pages
    /// (memcg_charge_statistics adds nr_pages events; the ratelimit fires on crossing
    /// its next target).
    fn memcg_check_events_nr(&mut self, id: u32, nid: usize, nr: u64) {
        if nr == 1 {
            return self.memcg_check_events(id, nid);
        }
        let g = &mut self.groups[id as usize];
        let before = g.nr_page_events;
        g.nr_page_events += nr;
        if before / SOFTLIMIT_EVENTS_TARGET != g.nr_page_events / SOFTLIMIT_EVENTS_TARGET {
            self.mem_cgroup_update_soft_limit(id, nid);
        }
    }

    /// Counts a page event and, every SOFTLIMIT_EVENTS_TARGET events, refreshes the group's
    /// soft-limit state (memcg_check_events → mem_cgroup_update_tree / children_in_excess).
    #[inline]
    pub fn memcg_check_events(&mut self, id: u32, nid: usize) {
        let g = &mut self.groups[id as usize];
        g.nr_page_events += 1;
        if g.nr_page_events.is_multiple_of(SOFTLIMIT_EVENTS_TARGET) {
            self.mem_cgroup_update_soft_limit(id, nid);
        }
    }

    /// Refreshes the soft-limit state of a group and its ancestors: the node's
    /// soft-limit tree (mem_cgroup_update_tree, base) and the children_in_excess
    /// counts (mem_cgroup_update_soft_limit of seed 002). Both are kept in every
    /// kernel; each kernel reads only its own.
    pub fn mem_cgroup_update_soft_limit(&mut self, id: u32, nid: usize) {
        let mut c = id;
        while c != NO_MEMCG && c != ROOT_MEM_CGROUP {
            self.update_children_in_excess(c);
            self.mem_cgroup_update_tree(c, nid);
            c = self.groups[c as usize].parent;
        }
    }

    /// Applies a group's excess 0 ↔ >0 transition to its ancestors' children_in_excess.
    fn update_children_in_excess(&mut self, id: u32) {
        let g = &self.groups[id as usize];
        let delta: i64 = match (g.soft_limit_excess() > 0, g.soft_contributed) {
            (true, false) => 1,
            (false, true) => -1,
            _ => return,
        };
        self.groups[id as usize].soft_contributed = delta > 0;
        let mut p = self.groups[id as usize].parent;
        while p != NO_MEMCG {
            let a = &mut self.groups[p as usize];
            a.children_in_excess = (a.children_in_excess as i64 + delta) as u32;
            p = a.parent;
        }
    }

    /// Sets a group's soft limit (memory.soft_limit_in_bytes) and refreshes its state at once.
    pub fn set_soft_limit(&mut self, id: u32, pages: u64) {
        self.groups[id as usize].soft_limit = pages;
        for nid in 0..self.nr_nodes {
            self.mem_cgroup_update_soft_limit(id, nid);
        }
    }

    /// Sets a group's hard limit (memory.limit_in_bytes); refused (false) below the usage,
    /// where the kernel would reclaim first (mem_cgroup_resize_max).
    pub fn set_max(&mut self, id: u32, pages: u64) -> bool {
        let g = &mut self.groups[id as usize].memory;
        if pages < g.usage {
            return false;
        }
        g.max = pages;
        true
    }

    /// The soft-reclaim filter of the reworked walk (mem_cgroup_soft_reclaim_eligible):
    /// Visit if the group or an ancestor up to `root` is over its soft limit; with
    /// `children_in_excess` (reworkoptim) SkipTree when no descendant is either, else Skip.
    /// Returns the filter and the levels climbed.
    #[inline]
    pub fn soft_reclaim_eligible(
        &self,
        id: u32,
        root: u32,
        children_in_excess: bool,
    ) -> (MemcgFilter, u64) {
        let g = &self.groups[id as usize];
        let mut climbs = 1;
        if g.soft_limit_excess() > 0 {
            return (MemcgFilter::Visit, climbs);
        }
        if id != root {
            let mut p = g.parent;
            while p != NO_MEMCG {
                climbs += 1;
                let a = &self.groups[p as usize];
                if a.soft_limit_excess() > 0 {
                    return (MemcgFilter::Visit, climbs);
                }
                if p == root {
                    break;
                }
                p = a.parent;
            }
        }
        if children_in_excess && g.children_in_excess == 0 {
            return (MemcgFilter::SkipTree, climbs);
        }
        (MemcgFilter::Skip, climbs)
    }

    /// Whether a group is protected from reclaim by memory.min, or by memory.low unless
    /// `low_reclaim` (mem_cgroup_below_min / mem_cgroup_below_low, own usage only).
    #[inline]
    pub fn protected(&self, id: u32, low_reclaim: bool) -> bool {
        let m = &self.groups[id as usize].memory;
        m.usage > 0 && (m.usage <= m.min || (!low_reclaim && m.usage <= m.low))
    }

    /// Recounts every group's children_in_excess from the soft_contributed flags (for checks).
    pub fn recount_children_in_excess(&self) -> Vec<u32> {
        let mut count = vec![0u32; self.groups.len()];
        for g in &self.groups {
            if g.soft_contributed {
                let mut p = g.parent;
                while p != NO_MEMCG {
                    count[p as usize] += 1;
                    p = self.groups[p as usize].parent;
                }
            }
        }
        count
    }

    /// Verifies that every group's usage is its local charge plus its children's and within
    /// its limit, and that children_in_excess matches a recount (expensive).
    pub fn check_invariants(&self, local: &[u64]) -> Result<(), String> {
        let mut sum = local.to_vec();
        for i in (1..self.groups.len()).rev() {
            let p = self.groups[i].parent as usize;
            sum[p] += sum[i];
        }
        for (i, g) in self.groups.iter().enumerate() {
            if g.memory.usage != sum[i] {
                return Err(format!(
                    "memcg {i}: usage {} but charges below it add up to {}",
                    g.memory.usage, sum[i]
                ));
            }
            // Forced charges (kmem that may not fail) may go over the limit, by no more.
            let kmem = self.ext(i as u32).kmem.usage;
            if g.memory.usage > g.memory.max.saturating_add(kmem) {
                return Err(format!(
                    "memcg {i}: usage {} over its limit {}",
                    g.memory.usage, g.memory.max
                ));
            }
        }
        let count = self.recount_children_in_excess();
        for (i, g) in self.groups.iter().enumerate() {
            if g.children_in_excess != count[i] {
                return Err(format!(
                    "memcg {i}: children_in_excess {} but {} descendants contribute",
                    g.children_in_excess, count[i]
                ));
            }
        }
        Ok(())
    }
}

/// The lruvec of group `id` on node `nid` (mem_cgroup_lruvec); the root's is the node's.
/// Takes the fields apart so the caller can still borrow the frame table.
#[inline(always)]
pub fn mem_cgroup_lruvec<'a>(
    nodes: &'a mut [PgData],
    memcg: &'a mut MemcgState,
    id: u32,
    nid: usize,
) -> &'a mut Lruvec {
    if id == ROOT_MEM_CGROUP {
        return &mut nodes[nid].lruvec;
    }
    memcg.ensure_pn(id);
    let pn = memcg.groups[id as usize].pn as usize + nid;
    &mut memcg.pn[pn].lruvec
}

/// Read-only [`mem_cgroup_lruvec`]; reclaim scans only groups that have been charged.
#[inline(always)]
pub fn mem_cgroup_lruvec_ref<'a>(
    nodes: &'a [PgData],
    memcg: &'a MemcgState,
    id: u32,
    nid: usize,
) -> &'a Lruvec {
    match memcg.mem_cgroup_nodeinfo(id, nid) {
        Some(pn) if id != ROOT_MEM_CGROUP => &pn.lruvec,
        _ => &nodes[nid].lruvec,
    }
}

/// Whether page `pfn` of kind `kind` is charged at all (only anon and file pages are).
#[inline(always)]
pub fn is_charged_kind(kind: PageKind) -> bool {
    matches!(kind, PageKind::Anon | PageKind::File)
}

/// memory.stat of one group, v1 names: local counters, then the hierarchical
/// limit and the `total_` sums over the subtree.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MemoryStat {
    /// Path below the root.
    pub path: String,
    /// memory.usage_in_bytes [bytes].
    pub usage_in_bytes: u64,
    /// memory.max_usage_in_bytes [bytes].
    pub max_usage_in_bytes: u64,
    /// memory.limit_in_bytes [bytes].
    pub limit_in_bytes: u64,
    /// memory.soft_limit_in_bytes [bytes].
    pub soft_limit_in_bytes: u64,
    /// memory.failcnt.
    pub failcnt: u64,
    /// Descendants over their soft limit (children_in_excess, reworkoptim's counter).
    pub children_in_excess: u32,
    /// memory.stat lines in the kernel's order.
    pub stat: indexmap::IndexMap<String, u64>,
    /// memory.high [bytes] (cgroup v2 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<u64>,
    /// memory.events (cgroup v2 only): low, high, max, oom, oom_kill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<indexmap::IndexMap<String, u64>>,
    /// memory.memsw.usage_in_bytes (cgroup v1 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memsw_usage_in_bytes: Option<u64>,
    /// memory.memsw.max_usage_in_bytes (cgroup v1 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memsw_max_usage_in_bytes: Option<u64>,
    /// memory.memsw.limit_in_bytes (cgroup v1 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memsw_limit_in_bytes: Option<u64>,
    /// memory.memsw.failcnt (cgroup v1 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memsw_failcnt: Option<u64>,
    /// memory.kmem.usage_in_bytes (cgroup v1 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kmem_usage_in_bytes: Option<u64>,
    /// memory.kmem.max_usage_in_bytes (cgroup v1 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kmem_max_usage_in_bytes: Option<u64>,
    /// memory.swap.current (cgroup v2 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_current: Option<u64>,
    /// memory.swap.max (cgroup v2 only) [bytes].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_max: Option<u64>,
}

/// Where a charge's retry loop stands while its task sleeps inside limit reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChargeResume {
    /// try_charge_memcg's nr_retries left.
    pub nr_retries: u32,
    /// Pages the last reclaim freed.
    pub nr_reclaimed: u64,
    /// The stocks were drained (try_charge_memcg's `drained`).
    pub drained: bool,
}

/// The memory cgroups of a run's result.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MemcgReport {
    /// Groups in the hierarchy, the root included.
    pub nr_groups: u64,
    /// The root's and every declared group's files, by path.
    pub groups: indexmap::IndexMap<String, MemoryStat>,
    /// The reclaim walks' counters.
    pub walk: MemcgWalkStats,
}

impl MemcgState {
    /// The report of the root and the declared groups.
    pub fn report(&self, nodes: &[PgData]) -> MemcgReport {
        let mut groups = indexmap::IndexMap::new();
        groups.insert("/".to_string(), self.memory_stat(ROOT_MEM_CGROUP, nodes));
        for (p, &id) in &self.paths {
            groups.insert(p.clone(), self.memory_stat(id, nodes));
        }
        MemcgReport {
            nr_groups: self.groups.len() as u64,
            groups,
            walk: self.walk.clone(),
        }
    }

    /// Builds memory.stat for a group (memcg1_stat_show).
    pub fn memory_stat(&self, id: u32, nodes: &[PgData]) -> MemoryStat {
        let lru_names = [
            "inactive_anon",
            "active_anon",
            "inactive_file",
            "active_file",
            "unevictable",
        ];
        let local_lru = |g: u32| -> [u64; lru::NR_LRU_LISTS] {
            let mut n = [0u64; lru::NR_LRU_LISTS];
            if g == ROOT_MEM_CGROUP || self.groups[g as usize].pn != NO_MEMCG {
                for nid in 0..self.nr_nodes {
                    let lv = mem_cgroup_lruvec_ref(nodes, self, g, nid);
                    for (l, v) in n.iter_mut().enumerate() {
                        *v += lv.nr[l];
                    }
                }
            }
            n
        };
        let g = &self.groups[id as usize];
        let mut st = indexmap::IndexMap::new();
        let pg = PAGE_SIZE;
        st.insert("cache".to_string(), g.stat[stat::CACHE] * pg);
        st.insert("rss".to_string(), g.stat[stat::RSS] * pg);
        let ext = self.ext(id);
        st.insert("dirty".to_string(), ext.stat[stat::DIRTY] * pg);
        st.insert("writeback".to_string(), ext.stat[stat::WRITEBACK] * pg);
        st.insert("swap".to_string(), ext.stat[stat::SWAP] * pg);
        st.insert("swapcached".to_string(), ext.stat[stat::SWAPCACHED] * pg);
        st.insert(
            "workingset_refault_anon".to_string(),
            ext.stat[stat::WORKINGSET_REFAULT_ANON],
        );
        st.insert(
            "workingset_refault_file".to_string(),
            ext.stat[stat::WORKINGSET_REFAULT_FILE],
        );
        st.insert("pgpgin".to_string(), g.stat[stat::PGPGIN]);
        st.insert("pgpgout".to_string(), g.stat[stat::PGPGOUT]);
        st.insert("pgfault".to_string(), g.stat[stat::PGFAULT]);
        let lr = local_lru(id);
        for (l, name) in lru_names.iter().enumerate() {
            st.insert(name.to_string(), lr[l] * pg);
        }
        // hierarchical_memory_limit: the smallest limit on the way to the root.
        let mut lim = g.memory.max;
        let mut p = g.parent;
        while p != NO_MEMCG {
            lim = lim.min(self.groups[p as usize].memory.max);
            p = self.groups[p as usize].parent;
        }
        st.insert(
            "hierarchical_memory_limit".to_string(),
            lim.saturating_mul(pg),
        );
        let mut tot = [0u64; stat::NR];
        let mut tot_ext = [0u64; stat::NR_EXT];
        let mut tot_slab = [0u64; 2];
        // zswap, zswapped, zswpin, zswpout, zswpwb.
        let mut tot_zswap = [0u64; 5];
        let mut tot_lru = [0u64; lru::NR_LRU_LISTS];
        let mut pos = id;
        while pos != NO_MEMCG {
            let d = &self.groups[pos as usize];
            for (t, v) in tot.iter_mut().zip(d.stat.iter()) {
                *t += v;
            }
            for (t, v) in tot_ext.iter_mut().zip(self.ext(pos).stat.iter()) {
                *t += v;
            }
            for (t, v) in tot_slab.iter_mut().zip(self.ext(pos).slab_b.iter()) {
                *t += v;
            }
            let e = self.ext(pos);
            let z = [e.zswap_b, e.zswapped, e.zswpin, e.zswpout, e.zswpwb];
            for (t, v) in tot_zswap.iter_mut().zip(z) {
                *t += v;
            }
            let l = local_lru(pos);
            for (t, v) in tot_lru.iter_mut().zip(l.iter()) {
                *t += v;
            }
            pos = self.next_pre(pos, id, false);
        }
        st.insert("total_cache".to_string(), tot[stat::CACHE] * pg);
        st.insert("total_rss".to_string(), tot[stat::RSS] * pg);
        st.insert("total_dirty".to_string(), tot_ext[stat::DIRTY] * pg);
        st.insert("total_writeback".to_string(), tot_ext[stat::WRITEBACK] * pg);
        st.insert("total_swap".to_string(), tot_ext[stat::SWAP] * pg);
        st.insert(
            "total_swapcached".to_string(),
            tot_ext[stat::SWAPCACHED] * pg,
        );
        st.insert(
            "total_workingset_refault_anon".to_string(),
            tot_ext[stat::WORKINGSET_REFAULT_ANON],
        );
        st.insert(
            "total_workingset_refault_file".to_string(),
            tot_ext[stat::WORKINGSET_REFAULT_FILE],
        );
        st.insert("total_pgpgin".to_string(), tot[stat::PGPGIN]);
        st.insert("total_pgpgout".to_string(), tot[stat::PGPGOUT]);
        st.insert("total_pgfault".to_string(), tot[stat::PGFAULT]);
        for (l, name) in lru_names.iter().enumerate() {
            st.insert(format!("total_{name}"), tot_lru[l] * pg);
        }
        st.insert("total_pgsteal".to_string(), tot[stat::PGSTEAL]);
        if self.dfl {
            // cgroup v2's memory.stat (memory_stat_format): hierarchical values under
            // v2's names, in the kernel's order, for the counters vmsim keeps.
            let mut v2 = indexmap::IndexMap::new();
            let lines: [(&str, u64); 22] = [
                ("anon", tot[stat::RSS] * pg),
                ("file", tot[stat::CACHE] * pg),
                ("kernel", ext.kmem.usage * pg),
                ("zswap", tot_zswap[0]),
                ("zswapped", tot_zswap[1] * pg),
                ("file_dirty", tot_ext[stat::DIRTY] * pg),
                ("file_writeback", tot_ext[stat::WRITEBACK] * pg),
                ("swapcached", tot_ext[stat::SWAPCACHED] * pg),
                ("inactive_anon", tot_lru[lru::INACTIVE_ANON] * pg),
                ("active_anon", tot_lru[lru::ACTIVE_ANON] * pg),
                ("inactive_file", tot_lru[lru::INACTIVE_FILE] * pg),
                ("active_file", tot_lru[lru::ACTIVE_FILE] * pg),
                ("unevictable", tot_lru[lru::UNEVICTABLE] * pg),
                ("slab_reclaimable", tot_slab[0]),
                ("slab_unreclaimable", tot_slab[1]),
                (
                    "workingset_refault_anon",
                    tot_ext[stat::WORKINGSET_REFAULT_ANON],
                ),
                (
                    "workingset_refault_file",
                    tot_ext[stat::WORKINGSET_REFAULT_FILE],
                ),
                ("pgsteal", tot[stat::PGSTEAL]),
                ("pgfault", tot[stat::PGFAULT]),
                ("zswpin", tot_zswap[2]),
                ("zswpout", tot_zswap[3]),
                ("zswpwb", tot_zswap[4]),
            ];
            for (k, v) in lines {
                v2.insert(k.to_string(), v);
            }
            st = v2;
        }
        let v1 = self.do_memsw_account();
        MemoryStat {
            path: self.path(id),
            usage_in_bytes: g.memory.usage * pg,
            max_usage_in_bytes: g.memory.watermark * pg,
            limit_in_bytes: g.memory.max.saturating_mul(pg),
            soft_limit_in_bytes: g.soft_limit.saturating_mul(pg),
            failcnt: g.memory.failcnt,
            children_in_excess: g.children_in_excess,
            stat: st,
            high: self.dfl.then(|| self.high(id).saturating_mul(pg)),
            events: self.dfl.then(|| {
                memcg_event::NAMES
                    .iter()
                    .zip(ext.events)
                    .map(|(n, v)| (n.to_string(), v))
                    .collect()
            }),
            memsw_usage_in_bytes: v1.then_some(ext.memsw.usage * pg),
            memsw_max_usage_in_bytes: v1.then_some(ext.memsw.watermark * pg),
            memsw_limit_in_bytes: v1.then_some(ext.memsw.max.saturating_mul(pg)),
            memsw_failcnt: v1.then_some(ext.memsw.failcnt),
            kmem_usage_in_bytes: v1.then_some(ext.kmem.usage * pg),
            kmem_max_usage_in_bytes: v1.then_some(ext.kmem.watermark * pg),
            swap_current: self.dfl.then_some(ext.swap.usage * pg),
            swap_max: self.dfl.then_some(ext.swap.max.saturating_mul(pg)),
        }
    }

    /// memory.stat as the kernel prints it: one `name value` line each.
    pub fn memory_stat_text(ms: &MemoryStat) -> String {
        let mut out = String::new();
        for (k, v) in &ms.stat {
            out.push_str(&format!("{k} {v}\n"));
        }
        out
    }

    /// Creates the scenario's groups (mkdir in the memory controller and the limit writes).
    pub fn create_from_specs(&mut self, specs: &[CgroupSpec]) {
        let pages = |b: u64| b / PAGE_SIZE;
        self.dfl = specs
            .first()
            .is_some_and(|c| c.hierarchy == crate::config::CgroupHierarchy::V2);
        for c in specs {
            let parent = match c.path.rsplit_once('/') {
                Some((p, _)) => self.paths[p],
                None => ROOT_MEM_CGROUP,
            };
            let id = self.mem_cgroup_alloc(parent);
            self.paths.insert(c.path.clone(), id);
            if let Some(b) = c.limit_in_bytes.or(c.max) {
                self.groups[id as usize].memory.max = pages(b.0);
            }
            if let Some(b) = c.high {
                self.ext_mut(id).high = pages(b.0);
            }
            if let Some(b) = c.min {
                self.groups[id as usize].memory.min = pages(b.0);
            }
            if let Some(b) = c.low {
                self.groups[id as usize].memory.low = pages(b.0);
            }
            if let Some(b) = c.soft_limit_in_bytes {
                self.set_soft_limit(id, pages(b.0));
            }
            if let Some(m) = &c.memsw {
                self.ext_mut(id).memsw.max = pages(m.limit_in_bytes.0);
            }
            if let Some(sw) = &c.swap {
                self.ext_mut(id).swap.max = pages(sw.max.0);
            }
            if c.swappiness.is_some() {
                self.ext_mut(id).swappiness = c.swappiness;
            }
            if let Some(g) = &c.generate {
                match g.shape {
                    CgroupShape::Binary => self.generate_binary(id, g.groups),
                    CgroupShape::Flat => self.generate_flat(id, g.groups),
                };
            }
        }
    }
}

impl Kernel {
    /// The group a task runs in (mem_cgroup_from_task).
    #[inline(always)]
    pub fn task_memcg(&self, tid: TaskId) -> u32 {
        self.mm
            .memcg
            .task_memcg
            .get(tid as usize)
            .copied()
            .unwrap_or(ROOT_MEM_CGROUP)
    }

    /// Puts a task in a group (cgroup.procs); its later pages are charged there.
    pub fn attach_task_memcg(&mut self, tid: TaskId, id: u32) {
        let v = &mut self.mm.memcg.task_memcg;
        if v.len() <= tid as usize {
            v.resize(tid as usize + 1, ROOT_MEM_CGROUP);
        }
        v[tid as usize] = id;
    }

    /// The group charged for a file's pages: the group of the task that created it.
    #[inline(always)]
    pub fn inode_memcg(&self, ino: u32) -> u32 {
        self.mm
            .memcg
            .inode_memcg
            .get(ino as usize)
            .copied()
            .filter(|&g| g != NO_MEMCG)
            .unwrap_or(ROOT_MEM_CGROUP)
    }

    /// The group charged for a file's pages; the first task to bring one of its pages
    /// into the page cache decides it.
    pub fn file_memcg(&mut self, ino: u32, tid: TaskId) -> u32 {
        if !self.mm.memcg.enabled() {
            return ROOT_MEM_CGROUP;
        }
        let id = self.task_memcg(tid);
        let v = &mut self.mm.memcg.inode_memcg;
        if v.len() <= ino as usize {
            v.resize(ino as usize + 1, NO_MEMCG);
        }
        if v[ino as usize] == NO_MEMCG {
            v[ino as usize] = id;
        }
        v[ino as usize]
    }

    /// Charges a freshly allocated page or frees it; the allocation's failure when the charge fails.
    pub fn charge_or_free_alloc(&mut self, p: Pfn, id: u32, tid: TaskId) -> Option<AllocResult> {
        match self.mem_cgroup_try_charge(id, tid) {
            AllocResult::Page(_) => None,
            r => {
                let cpu = self.tasks[tid as usize].cpu;
                self.mm.free_pages(p, 0, cpu);
                Some(r)
            }
        }
    }

    /// Charges a new page-cache folio of `order` or frees it (mem_cgroup_charge in
    /// filemap_add_folio): order 0 as [`Kernel::charge_or_free_alloc`], a large folio by
    /// [`Kernel::try_charge_memcg_folio`]; the failure when the charge fails.
    pub fn charge_folio_or_free(
        &mut self,
        p: Pfn,
        order: usize,
        id: u32,
        gfp: Gfp,
        tid: TaskId,
    ) -> Option<AllocResult> {
        if order == 0 {
            return self.charge_or_free_alloc(p, id, tid);
        }
        let r = self.try_charge_memcg_folio(id, 1 << order, gfp, tid);
        if matches!(r, AllocResult::Page(_)) {
            return None;
        }
        let cpu = self.tasks[tid as usize].cpu;
        self.mm.free_pages(p, order, cpu);
        Some(r)
    }

    /// Charges a large folio of `nr_pages` to group `id` (try_charge_memcg with
    /// nr_pages > 1): from the CPU's stock if it holds enough (consume_stock, only up to
    /// MEMCG_CHARGE_BATCH), else as a batch of max(MEMCG_CHARGE_BATCH, nr_pages) whose
    /// rest is stocked, else as the folio alone; over the limit it reclaims `nr_pages`,
    /// retries while the margin fits the folio, drains the stocks once and retries, and
    /// then gives up under __GFP_NORETRY (every large page-cache folio asks with it).
    /// Without __GFP_NORETRY it retries up to MAX_RECLAIM_RETRIES and never calls the OOM
    /// killer (mem_cgroup_oom refuses orders above PAGE_ALLOC_COSTLY_ORDER, and a folio
    /// of at most 8 pages is not asked for here). A reclaim throttled for the flushers
    /// (reclaim_throttle) returns `Retry`: the task sleeps where the kernel's reclaim would,
    /// and the allocation starts over when it wakes; its waits for the disk are taken in
    /// the step (`Kernel::sleep_in_step`). `Page(NIL)` when charged, `Failed` when not.
    pub fn try_charge_memcg_folio(
        &mut self,
        id: u32,
        nr_pages: u64,
        gfp: Gfp,
        tid: TaskId,
    ) -> AllocResult {
        if !self.mm.memcg.enabled() {
            return AllocResult::Page(NIL);
        }
        let levels = self.mm.memcg.groups[id as usize].depth as u64 + 1;
        self.mm.cur.acc += levels * self.mm.cost.memcg_charge;
        let cpu = self.tasks[tid as usize].cpu;
        let stock = self.mm.kcfg.rules().memcg_charge_batch && id != ROOT_MEM_CGROUP;
        let mut batch = if stock {
            MEMCG_CHARGE_BATCH.max(nr_pages)
        } else {
            nr_pages
        };
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        loop {
            if stock
                && nr_pages <= MEMCG_CHARGE_BATCH
                && self.mm.memcg.consume_stock(cpu, id, nr_pages)
            {
                return AllocResult::Page(NIL);
            }
            let (over, memsw) = match self.mm.memcg.try_charge_memsw_memory(id, batch) {
                Ok(()) => {
                    if batch > nr_pages {
                        self.mm.memcg.refill_stock(cpu, id, batch - nr_pages);
                    }
                    if self.mm.memcg.dfl {
                        self.mem_cgroup_note_over_high(id, tid, batch);
                    }
                    return AllocResult::Page(NIL);
                }
                Err(over) => over,
            };
            if batch > nr_pages {
                batch = nr_pages;
                continue;
            }
            if !gfp.has(__GFP_DIRECT_RECLAIM) {
                return AllocResult::Failed;
            }
            self.mm.memcg.memcg_memory_event(over, memcg_event::MAX);
            // Over memsw, swapping cannot help: reclaim without MEMCG_RECLAIM_MAY_SWAP.
            self.try_to_free_mem_cgroup_pages_swap(over, nr_pages, tid, !memsw);
            if self.mm.cur.sleep > 0 {
                return AllocResult::Retry;
            }
            if self.mm.memcg.mem_cgroup_margin(over) >= nr_pages {
                continue;
            }
            if !drained {
                if stock {
                    self.mm.memcg.drain_all_stock(over);
                }
                drained = true;
                continue;
            }
            if gfp.has(super::gfp::__GFP_NORETRY) || nr_retries == 0 {
                return AllocResult::Failed;
            }
            nr_retries -= 1;
        }
    }

    /// [`Kernel::charge_or_free_alloc`] for the fault path.
    pub fn charge_or_free(&mut self, p: Pfn, id: u32, tid: TaskId) -> Option<super::memory::Fault> {
        use super::memory::Fault;
        self.charge_or_free_alloc(p, id, tid).map(|r| match r {
            AllocResult::Killed => Fault::Killed,
            AllocResult::Retry => Fault::Retry,
            _ => Fault::Failed,
        })
    }

    /// Charges one new page to group `id` before it is mapped or inserted
    /// (try_charge_memcg): over a limit, reclaims from the limited subtree; a reclaim
    /// that freed pages is retried at once, one that freed none uses up one of
    /// MAX_RECLAIM_RETRIES, and then the memcg OOM killer runs. Reclaim throttled for the
    /// flushers (reclaim_throttle) ends the attempt with `Retry`: the task sleeps while
    /// the flusher and the disk run, and the loop resumes where it was when the
    /// allocation is retried; its waits for the disk alone (a full request queue, a
    /// folio under writeback) are taken in the step and the reclaim goes on. Under
    /// `kernel.memcg_charge_batch` the charge is taken from the CPU's stock, else charged
    /// as a batch of MEMCG_CHARGE_BATCH whose rest is stocked, else (the batch failed,
    /// counted in failcnt) as the page alone;
    /// limit reclaim that leaves no margin drains the stocks once. `Page(NIL)` when
    /// charged; `Killed` if `tid` was chosen; `Failed` if no victim is left.
    pub fn mem_cgroup_try_charge(&mut self, id: u32, tid: TaskId) -> AllocResult {
        if !self.mm.memcg.enabled() {
            return AllocResult::Page(NIL);
        }
        let levels = self.mm.memcg.groups[id as usize].depth as u64 + 1;
        self.mm.cur.acc += levels * self.mm.cost.memcg_charge;
        let cpu = self.tasks[tid as usize].cpu;
        // The root group is never charged through the stock (try_charge()).
        let stock = self.mm.kcfg.rules().memcg_charge_batch && id != ROOT_MEM_CGROUP;
        let resume = self.tasks[tid as usize].memcg_charge.take();
        let mut nr_retries = resume.map_or(MAX_RECLAIM_RETRIES, |r| r.nr_retries);
        // Pages the last reclaim of this charge freed; None before the first.
        let mut progress = resume.map(|r| r.nr_reclaimed);
        let mut drained = resume.is_some_and(|r| r.drained);
        // max(MEMCG_CHARGE_BATCH, nr_pages) until a batch fails; a resumed charge is past that.
        let mut batch = if stock && resume.is_none() {
            MEMCG_CHARGE_BATCH
        } else {
            1
        };
        loop {
            if stock && self.mm.memcg.consume_stock(cpu, id, 1) {
                return AllocResult::Page(NIL);
            }
            let (over, memsw) = match self.mm.memcg.try_charge_memsw_memory(id, batch) {
                Ok(()) => {
                    if batch > 1 {
                        self.mm.memcg.refill_stock(cpu, id, batch - 1);
                    }
                    if self.mm.memcg.dfl {
                        self.mem_cgroup_note_over_high(id, tid, batch);
                    }
                    return AllocResult::Page(NIL);
                }
                Err(e) => e,
            };
            if batch > 1 {
                batch = 1;
                continue;
            }
            if progress == Some(0) {
                if nr_retries == 0 {
                    // mem_cgroup_oom()
                    self.mm.memcg.memcg_memory_event(over, memcg_event::OOM);
                    match self.mem_cgroup_out_of_memory(over) {
                        Some(v) if v == tid => return AllocResult::Killed,
                        // passed_oom: a victim died; start over with full retries.
                        Some(_) => {
                            nr_retries = MAX_RECLAIM_RETRIES;
                            progress = None;
                            continue;
                        }
                        None => return AllocResult::Failed,
                    }
                }
                nr_retries -= 1;
            }
            self.mm.memcg.memcg_memory_event(over, memcg_event::MAX);
            // Over memsw, swapping cannot help: reclaim without MEMCG_RECLAIM_MAY_SWAP.
            let nr_reclaimed = self.try_to_free_mem_cgroup_pages_swap(over, 1, tid, !memsw);
            progress = Some(nr_reclaimed);
            // No margin left by the reclaim: give back what the stocks hold, once.
            if stock && !drained && self.mm.memcg.mem_cgroup_margin(over) == 0 {
                self.mm.memcg.drain_all_stock(over);
                drained = true;
            }
            if self.mm.cur.sleep > 0 {
                self.tasks[tid as usize].memcg_charge = Some(ChargeResume {
                    nr_retries,
                    nr_reclaimed,
                    drained,
                });
                return AllocResult::Retry;
            }
        }
    }

    /// Charges a new huge page of `nr_pages` to group `id` (mem_cgroup_charge from
    /// vma_alloc_anon_folio_pmd, try_charge_memcg with nr_pages > 1): the whole folio or
    /// nothing. Over the limit, a fault whose `gfp` may not block fails at once
    /// (`!gfpflags_allow_blocking`); one that may reclaims `nr_pages` from the limited
    /// group up to MAX_RECLAIM_RETRIES times while the margin stays short, never retries
    /// merely because something was reclaimed (huge pages "are rather unlikely to succeed so
    /// close to the limit") and never calls the memcg OOM killer (mem_cgroup_oom refuses
    /// orders above PAGE_ALLOC_COSTLY_ORDER): the fault falls back to base pages. A reclaim
    /// throttled for the flushers ends the attempt too, where the kernel would sleep and
    /// retry (a simplification). True when charged.
    pub fn mem_cgroup_charge_huge(
        &mut self,
        id: u32,
        nr_pages: u64,
        gfp: Gfp,
        tid: TaskId,
    ) -> bool {
        if !self.mm.memcg.enabled() {
            return true;
        }
        let levels = self.mm.memcg.groups[id as usize].depth as u64 + 1;
        self.mm.cur.acc += levels * self.mm.cost.memcg_charge;
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        loop {
            let (over, memsw) = match self.mm.memcg.try_charge_memsw_memory(id, nr_pages) {
                Ok(()) => {
                    if self.mm.memcg.dfl {
                        self.mem_cgroup_note_over_high(id, tid, nr_pages);
                    }
                    return true;
                }
                Err(e) => e,
            };
            if !gfp.has(__GFP_DIRECT_RECLAIM) || nr_retries == 0 {
                return false;
            }
            self.mm.memcg.memcg_memory_event(over, memcg_event::MAX);
            self.try_to_free_mem_cgroup_pages_swap(over, nr_pages, tid, !memsw);
            if self.mm.cur.sleep > 0 {
                return false;
            }
            nr_retries -= 1;
        }
    }

    /// Commits a charge once the page has its owner (commit_charge): the page's rmap
    /// chunk is tied to the group and the group's counters move.
    pub fn mem_cgroup_commit_charge(&mut self, p: Pfn, id: u32) {
        if !self.mm.memcg.enabled() {
            return;
        }
        let page = self.mm.map[p as usize];
        let chunk = (page.owner >> super::rmap::CHUNK_SHIFT) as usize;
        let cm = &mut self.mm.memcg.chunk_memcg;
        if cm.len() <= chunk {
            cm.resize(chunk + 1, ROOT_MEM_CGROUP);
        }
        cm[chunk] = id;
        let nid = self.mm.pfn_to_nid(p);
        let nr = self.mm.folio_nr_pages(p);
        self.mm
            .memcg
            .commit_charge(id, page.kind() == PageKind::File, nid, nr);
    }

    /// Moves a group counter of the group a page is charged to (mod_lruvec_page_state
    /// for a memcg item); nothing for an uncharged page.
    #[inline]
    pub fn mod_memcg_page_state(&mut self, p: Pfn, idx: usize, delta: i64) {
        if !self.mm.memcg.enabled() {
            return;
        }
        let page = self.mm.map[p as usize];
        if page.owner == NO_OWNER || !is_charged_kind(page.kind()) {
            return;
        }
        let id = self.mm.memcg.folio_memcg(page.kind(), page.owner);
        let v = &mut self.mm.memcg.ext_mut(id).stat[idx];
        *v = v.wrapping_add_signed(delta);
    }

    /// Uncharges a page leaving its owner (mem_cgroup_uncharge); call before its owner is cleared.
    /// A page still under writeback leaves the group's writeback count now: its owner is gone
    /// when the write completes.
    pub fn mem_cgroup_uncharge(&mut self, p: Pfn) {
        self.uncharge_folio(p, true);
    }

    /// Uncharges a page's memory, and its memsw too unless the charge stays with a swap
    /// slot (`memsw` false: memcg1_swapout) (uncharge_folio + uncharge_batch).
    fn uncharge_folio(&mut self, p: Pfn, memsw: bool) {
        if !self.mm.memcg.enabled() {
            return;
        }
        let page = self.mm.map[p as usize];
        if page.owner == NO_OWNER || !is_charged_kind(page.kind()) {
            return;
        }
        let nr = self.mm.folio_nr_pages(p);
        if page.test(super::page::pg::WRITEBACK) {
            self.mod_memcg_page_state(p, stat::WRITEBACK, -(nr as i64));
        }
        let id = self.mm.memcg.folio_memcg(page.kind(), page.owner);
        let levels = self.mm.memcg.groups[id as usize].depth as u64 + 1;
        self.mm.cur.acc += levels * self.mm.cost.memcg_charge;
        if memsw {
            self.mm.memcg.uncharge_memory_memsw(id, nr);
        } else {
            self.mm.memcg.page_counter_uncharge(id, nr);
        }
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .memcg
            .commit_uncharge(id, page.kind() == PageKind::File, nid, nr);
    }

    /// Charges a page's new swap slot (__mem_cgroup_try_charge_swap): under v2 the group's
    /// swap counter against memory.swap.max (false when over: MEMCG_SWAP_MAX, the page is
    /// not swapped) and the slot remembers the group; under v1 memsw already holds it and
    /// the slot is recorded at swap-out.
    pub fn mem_cgroup_try_charge_swap(&mut self, p: Pfn, s: u32) -> bool {
        if !self.mm.memcg.enabled() || self.mm.memcg.do_memsw_account() {
            return true;
        }
        let page = self.mm.map[p as usize];
        let id = self.mm.memcg.folio_memcg(page.kind(), page.owner);
        if id != ROOT_MEM_CGROUP && self.mm.memcg.swap_try_charge(id).is_err() {
            return false;
        }
        self.swap.swap_cgroup_record(s, id);
        self.mm.memcg.ext_mut(id).stat[stat::SWAP] += 1;
        true
    }

    /// Releases the charge a swap slot holds (mem_cgroup_uncharge_swap): memsw under v1,
    /// swap under v2; nothing for a slot without one.
    pub fn mem_cgroup_uncharge_swap(&mut self, s: u32) {
        let id = self.swap.swap_cgroup_record(s, NO_OWNER);
        if id == NO_OWNER || !self.mm.memcg.enabled() {
            return;
        }
        let e = &mut self.mm.memcg.ext_mut(id).stat[stat::SWAP];
        *e = e.saturating_sub(1);
        if self.mm.memcg.do_memsw_account() || id != ROOT_MEM_CGROUP {
            self.mm.memcg.swap_uncharge(id);
        }
    }

    /// Uncharges a swap-cache page that reclaim frees (mem_cgroup_swapout → memcg1_swapout):
    /// under v1 its memory goes and its memsw charge stays with the slot, recorded for it;
    /// under v2 it is uncharged as any page (the slot was charged when it was allocated).
    pub fn mem_cgroup_swapout(&mut self, p: Pfn, s: u32) {
        self.mod_memcg_page_state(p, stat::SWAPCACHED, -1);
        if !self.mm.memcg.do_memsw_account() {
            self.uncharge_folio(p, true);
            return;
        }
        let page = self.mm.map[p as usize];
        let id = self.mm.memcg.folio_memcg(page.kind(), page.owner);
        self.swap.swap_cgroup_record(s, id);
        self.mm.memcg.ext_mut(id).stat[stat::SWAP] += 1;
        self.uncharge_folio(p, false);
    }

    /// Whether a swap-cache page should give its slot up (mem_cgroup_swap_full): swap is
    /// more than half full, or (v2) a group on its way to the root uses half its memory.swap.max.
    pub fn mem_cgroup_swap_full(&self, p: Pfn) -> bool {
        if self.swap.vm_swap_full() {
            return true;
        }
        let m = &self.mm.memcg;
        if !m.enabled() || m.do_memsw_account() {
            return false;
        }
        let page = self.mm.map[p as usize];
        let mut g = m.folio_memcg(page.kind(), page.owner);
        while g != ROOT_MEM_CGROUP && g != NO_MEMCG {
            let c = m.ext(g).swap;
            if c.usage * 2 >= c.max {
                return true;
            }
            g = m.groups[g as usize].parent;
        }
        false
    }

    /// Recounts every group's charges from the frame table and checks the hierarchy's
    /// counters against them (expensive): usage = own pages + children's usage, no
    /// usage over its limit, children_in_excess = a recount.
    pub fn check_memcg(&self) -> Result<(), String> {
        let m = &self.mm.memcg;
        if !m.enabled() {
            return Ok(());
        }
        let mut local = vec![0u64; m.groups.len()];
        let mut dirty = vec![0u64; m.groups.len()];
        let mut writeback = vec![0u64; m.groups.len()];
        for page in self.mm.map.iter() {
            if is_charged_kind(page.kind()) && page.owner != NO_OWNER {
                let g = m.folio_memcg(page.kind(), page.owner) as usize;
                // A page-cache folio counts its pages (its tails have no owner).
                let nr = if page.kind() == PageKind::File {
                    1u64 << page.order()
                } else {
                    1
                };
                local[g] += nr;
                if page.kind() == PageKind::File && page.test(super::page::pg::DIRTY) {
                    dirty[g] += nr;
                }
                if page.test(super::page::pg::WRITEBACK) {
                    writeback[g] += nr;
                }
            }
        }
        // Stocked charges are in the counters without a page, and so is kernel memory.
        for (g, n) in m.stock.stocked(m.groups.len()).into_iter().enumerate() {
            local[g] += n + m.ext(g as u32).kmem_local;
        }
        for g in 0..m.groups.len() {
            let e = m.ext(g as u32);
            if (e.stat[stat::DIRTY], e.stat[stat::WRITEBACK]) != (dirty[g], writeback[g]) {
                return Err(format!(
                    "memcg {g}: dirty/writeback {}/{} but the frames say {}/{}",
                    e.stat[stat::DIRTY],
                    e.stat[stat::WRITEBACK],
                    dirty[g],
                    writeback[g]
                ));
            }
        }
        m.check_invariants(&local)?;
        self.check_swap_charges()
    }

    /// Checks the swap charges against the slots' records (expensive): each group's
    /// MEMCG_SWAP count is its recorded slots, and its memsw (v1) is its memory usage plus
    /// the slots recorded in its subtree, its swap counter (v2) those slots.
    pub fn check_swap_charges(&self) -> Result<(), String> {
        let m = &self.mm.memcg;
        let n = m.groups.len();
        let mut local = vec![0u64; n];
        for s in 0..self.swap.max() {
            let id = self.swap.swap_cgroup(s);
            if id != NO_OWNER {
                if !self.swap.in_use(s) {
                    return Err(format!("swap slot {s} is free but charged to memcg {id}"));
                }
                local[id as usize] += 1;
            }
        }
        for (g, &l) in local.iter().enumerate() {
            if m.ext(g as u32).stat[stat::SWAP] != l {
                return Err(format!(
                    "memcg {g}: swap stat {} but {l} slots are recorded for it",
                    m.ext(g as u32).stat[stat::SWAP]
                ));
            }
        }
        let mut sum = local;
        for i in (1..n).rev() {
            let p = m.groups[i].parent as usize;
            sum[p] += sum[i];
        }
        for (g, &below) in sum.iter().enumerate() {
            let e = m.ext(g as u32);
            let (got, want) = if m.do_memsw_account() {
                (e.memsw.usage, m.groups[g].memory.usage + below)
            } else if g as u32 != ROOT_MEM_CGROUP {
                (e.swap.usage, below)
            } else {
                continue;
            };
            if got != want {
                return Err(format!(
                    "memcg {g}: {} usage {got} but memory and recorded swap add up to {want}",
                    if m.do_memsw_account() {
                        "memsw"
                    } else {
                        "swap"
                    }
                ));
            }
        }
        Ok(())
    }

    /// Counts a page fault of a task in its group (count_memcg_events PGFAULT).
    #[inline]
    pub fn count_memcg_pgfault(&mut self, tid: TaskId) {
        if self.mm.memcg.enabled() {
            let id = self.task_memcg(tid);
            self.mm.memcg.groups[id as usize].stat[stat::PGFAULT] += 1;
        }
    }

    /// Kills the task with the largest footprint in a group's subtree (mem_cgroup_out_of_memory).
    pub fn mem_cgroup_out_of_memory(&mut self, root: u32) -> Option<TaskId> {
        self.mm.cur.acc += self.mm.cost.oom_kill;
        let mut chosen = None;
        let mut points = 0;
        for (i, t) in self.tasks.iter().enumerate() {
            if !t.alive || t.kthread || t.oom_killed {
                continue;
            }
            // mem_cgroup_is_descendant()
            let mut g = self.task_memcg(i as TaskId);
            while g != NO_MEMCG && g != root {
                g = self.mm.memcg.groups[g as usize].parent;
            }
            if g != root {
                continue;
            }
            let pts = self.task_footprint(i as TaskId);
            if chosen.is_none() || pts > points {
                chosen = Some(i as TaskId);
                points = pts;
            }
        }
        let victim = chosen?;
        self.mm.count_vm_events(super::vmstat::Event::OOM_KILL, 1);
        let victim_memcg = self.task_memcg(victim);
        self.mm
            .memcg
            .memcg_memory_event(victim_memcg, memcg_event::OOM_KILL);
        self.mm.memcg.walk.oom_kills += 1;
        self.tasks[victim as usize].oom_killed = true;
        let now = self.mm.clock();
        self.exit_task(victim, now);
        self.mm.cur.kill.push(victim);
        Some(victim)
    }

    /// Reclaims at least `nr_pages` from a group's subtree on every node
    /// (try_to_free_mem_cgroup_pages), between the mm_vmscan_memcg_reclaim tracepoints.
    pub fn try_to_free_mem_cgroup_pages(&mut self, id: u32, nr_pages: u64, tid: TaskId) -> u64 {
        self.try_to_free_mem_cgroup_pages_swap(id, nr_pages, tid, true)
    }

    /// [`Kernel::try_to_free_mem_cgroup_pages`] with MEMCG_RECLAIM_MAY_SWAP as `may_swap`
    /// (cleared when the charge failed on memory.memsw.limit_in_bytes).
    pub fn try_to_free_mem_cgroup_pages_swap(
        &mut self,
        id: u32,
        nr_pages: u64,
        tid: TaskId,
        may_swap: bool,
    ) -> u64 {
        self.mm.memcg.walk.limit_reclaims += 1;
        let cpu = self.tasks[tid as usize].cpu;
        let mut sc = ScanControl::new(GFP_KERNEL, 0, nr_pages.max(SWAP_CLUSTER_MAX), tid, cpu);
        sc.target_mem_cgroup = id;
        sc.may_swap = may_swap;
        sc.memcg_on_dfl = self.mm.memcg.dfl;
        self.trace(TraceEvent::MmVmscanMemcgReclaimBegin {
            order: 0,
            gfp_flags: sc.gfp_mask.0,
            may_writepage: 1,
        });
        let now = self.mm.clock();
        self.process_io(now);
        // The kernel's limit reclaim sleeps (a full request queue, a wait on writeback) and
        // goes on; vmsim has no point to resume it from, so it waits for the disk in the
        // step. A throttle for the flushers stays a sleep after it (reclaim_throttle).
        let outer = std::mem::replace(&mut self.sleep_in_step, !self.mm.cur.atomic);
        let nr_reclaimed = self.do_try_to_free_mem_cgroup_pages(&mut sc);
        self.sleep_in_step = outer;
        self.trace(TraceEvent::MmVmscanMemcgReclaimEnd { nr_reclaimed });
        nr_reclaimed
    }

    /// After a charge: a group over memory.high on the way to the root makes the task owe
    /// reclaim on its return to user space, and more than a batch owed is paid at once
    /// (try_charge_memcg's tail, cgroup v2).
    fn mem_cgroup_note_over_high(&mut self, id: u32, tid: TaskId, batch: u64) {
        let mut g = id;
        while g != NO_MEMCG {
            if self.mm.memcg.groups[g as usize].memory.usage > self.mm.memcg.high(g) {
                self.tasks[tid as usize].memcg_nr_pages_over_high += batch;
                break;
            }
            g = self.mm.memcg.groups[g as usize].parent;
        }
        if self.tasks[tid as usize].memcg_nr_pages_over_high > MEMCG_CHARGE_BATCH
            && self.tasks[tid as usize].reclaim.is_none()
        {
            self.mem_cgroup_handle_over_high(tid);
        }
    }

    /// Reclaims `nr_pages` from every group over memory.high from `id` up to the root's
    /// child (reclaim_high); returns pages reclaimed.
    fn reclaim_high(&mut self, id: u32, nr_pages: u64, tid: TaskId) -> u64 {
        let mut nr_reclaimed = 0;
        let mut g = id;
        while g != ROOT_MEM_CGROUP && g != NO_MEMCG {
            if self.mm.memcg.groups[g as usize].memory.usage > self.mm.memcg.high(g) {
                self.mm.memcg.memcg_memory_event(g, memcg_event::HIGH);
                nr_reclaimed += self.try_to_free_mem_cgroup_pages(g, nr_pages, tid);
                if self.mm.cur.sleep > 0 {
                    break;
                }
            }
            g = self.mm.memcg.groups[g as usize].parent;
        }
        nr_reclaimed
    }

    /// On the return to user space of a task that charged pages over memory.high: reclaim
    /// while it makes progress, then sleep a penalty that grows with the square of the
    /// overage, at most 2 s (mem_cgroup_handle_over_high). A reclaim that sleeps (a
    /// throttle) ends the payment: the task sleeps, and charges over high later bring it back.
    pub fn mem_cgroup_handle_over_high(&mut self, tid: TaskId) {
        let nr_pages = std::mem::take(&mut self.tasks[tid as usize].memcg_nr_pages_over_high);
        if nr_pages == 0 || !self.mm.memcg.dfl {
            return;
        }
        let memcg = self.task_memcg(tid);
        let hz = self.mm.kcfg.hz;
        let mut nr_retries = MAX_RECLAIM_RETRIES;
        let mut in_retry = false;
        loop {
            // task_is_dying()
            let t = &self.tasks[tid as usize];
            if !t.alive || t.oom_killed {
                return;
            }
            let target = if in_retry { SWAP_CLUSTER_MAX } else { nr_pages };
            let nr_reclaimed = self.reclaim_high(memcg, target, tid);
            if self.mm.cur.sleep > 0 {
                return;
            }
            let overage = self.mm.memcg.mem_find_max_overage(memcg);
            let penalty_jiffies =
                calculate_high_delay(nr_pages, overage, hz).min(MEMCG_MAX_HIGH_DELAY_SECS * hz);
            // Not worth sleeping for a hundredth of a second.
            if penalty_jiffies <= hz / 100 {
                return;
            }
            if nr_reclaimed > 0 || nr_retries > 0 {
                if nr_reclaimed == 0 {
                    nr_retries -= 1;
                }
                in_retry = true;
                continue;
            }
            // schedule_timeout_killable(penalty_jiffies)
            self.mm.cur.sleep += penalty_jiffies * (1_000_000_000 / hz);
            self.throttle_ns += penalty_jiffies * (1_000_000_000 / hz);
            return;
        }
    }

    /// The priority loop of a limit reclaim (do_try_to_free_pages for a cgroup target).
    fn do_try_to_free_mem_cgroup_pages(&mut self, sc: &mut ScanControl) -> u64 {
        loop {
            for nid in 0..self.mm.nodes.len() {
                sc.nr = super::vmscan::ReclaimStat::default();
                self.shrink_node_memcgs(nid, sc);
                // shrink_node()'s tail: with cgroup v2, limit reclaim that found every dirty
                // page already queued and marked for reclaim tags the target's lruvec
                // LRUVEC_CGROUP_CONGESTED and stalls for I/O completions.
                if sc.writeback_throttling_sane()
                    && sc.nr.nr_dirty > 0
                    && sc.nr.nr_dirty == sc.nr.nr_congested
                {
                    self.reclaim_throttle(nid, super::vmscan::VMSCAN_THROTTLE_CONGESTED);
                }
                // Done, or asleep (throttled, waiting on writeback): the charge decides.
                if sc.nr_reclaimed >= sc.nr_to_reclaim || self.mm.cur.sleep > 0 {
                    return sc.nr_reclaimed;
                }
            }
            sc.priority -= 1;
            if sc.priority < 0 {
                if self.retry_with_full_walks(sc) {
                    continue;
                }
                return sc.nr_reclaimed;
            }
        }
    }

    /// do_try_to_free_pages' last resort under `kernel.memcg_reclaim_iter = "cookie"`:
    /// partial walks that reclaimed nothing at any priority are retried as full walks, from
    /// DEF_PRIORITY ("high concurrency can result in individual threads not seeing enough
    /// cgroups to make meaningful forward progress"). Whether it starts the retry.
    pub(crate) fn retry_with_full_walks(&mut self, sc: &mut ScanControl) -> bool {
        if self.mm.kcfg.rules().memcg_reclaim_iter != MemcgReclaimIter::Cookie
            || sc.memcg_full_walk
            || sc.nr_reclaimed > 0
            || !self.mm.memcg.enabled()
        {
            return false;
        }
        sc.memcg_full_walk = true;
        sc.priority = super::vmscan::DEF_PRIORITY;
        true
    }

    /// Reclaims a node's lruvecs of `sc.target_mem_cgroup`'s subtree, walking the
    /// hierarchy as `kernel.soft_limit_reclaim` says (shrink_node_memcgs; the
    /// rework's shrink_zone with its soft and fallback passes).
    pub fn shrink_node_memcgs(&mut self, nid: usize, sc: &mut ScanControl) {
        let root = sc.target_mem_cgroup;
        self.mm.memcg.walk.shrink_node_memcgs += 1;
        let scanned = sc.nr_scanned;
        let low_skipped = match self.mm.kcfg.soft_limit_reclaim {
            SoftLimitReclaim::Base => self.shrink_memcg_walk(nid, sc, None, false),
            policy => {
                let optim = policy == SoftLimitReclaim::Reworkoptim;
                // reworkoptim (patch 6/8): no soft pass when nothing below root is in excess.
                let soft = !optim
                    || self.mm.memcg.soft_reclaim_eligible(root, root, true).0
                        != MemcgFilter::SkipTree;
                if soft {
                    self.shrink_memcg_walk(nid, sc, Some(optim), false);
                }
                if sc.nr_scanned == scanned {
                    if soft {
                        self.mm.memcg.walk.soft_fallback_passes += 1;
                    }
                    self.shrink_memcg_walk(nid, sc, None, false)
                } else {
                    false
                }
            }
        };
        // memory.low: reclaim protected groups only when nothing else could be scanned.
        if low_skipped && sc.nr_scanned == scanned {
            self.shrink_memcg_walk(nid, sc, None, true);
        }
    }

    /// One pre-order walk of the target's subtree shrinking every visited group's lruvec;
    /// `soft` filters by soft-limit eligibility (Some(children_in_excess) in the rework
    /// kernels). Returns whether a group was skipped for memory.low.
    fn shrink_memcg_walk(
        &mut self,
        nid: usize,
        sc: &mut ScanControl,
        soft: Option<bool>,
        low_reclaim: bool,
    ) -> bool {
        let root = sc.target_mem_cgroup;
        let global = root == ROOT_MEM_CGROUP;
        let (c_iter, c_check, c_visit) = (
            self.mm.cost.memcg_iter,
            self.mm.cost.memcg_soft_check,
            self.mm.cost.memcg_shrink_lruvec,
        );
        let mode = self.mm.kcfg.rules().memcg_reclaim_iter;
        // mem_cgroup_iter with a reclaim cookie: resume after where the last walk stopped,
        // from the first group if it had reached the end.
        let partial = mode == MemcgReclaimIter::Cookie && !sc.kswapd && !sc.memcg_full_walk;
        let mut low_skipped = false;
        let mut pos = root;
        if partial {
            if let Some(&last) = self.mm.memcg.reclaim_iter.get(&(root, nid)) {
                let next = self.mm.memcg.next_pre(last, root, false);
                if next != NO_MEMCG {
                    pos = next;
                }
            }
        }
        loop {
            self.mm.cur.acc += c_iter;
            self.mm.memcg.walk.groups_visited += 1;
            let mut skip_children = false;
            let mut visit = true;
            if let Some(optim) = soft {
                let (f, climbs) = self.mm.memcg.soft_reclaim_eligible(pos, root, optim);
                self.mm.cur.acc += climbs * c_check;
                self.mm.memcg.walk.eligibility_climbs += climbs;
                match f {
                    MemcgFilter::Visit => {}
                    MemcgFilter::Skip => visit = false,
                    MemcgFilter::SkipTree => {
                        visit = false;
                        skip_children = true;
                    }
                }
            }
            if visit {
                if self.mm.memcg.protected(pos, low_reclaim) {
                    let m = &self.mm.memcg.groups[pos as usize].memory;
                    low_skipped |= m.usage > m.min;
                } else {
                    self.mm.cur.acc += c_visit;
                    let shrunk = self.mm.memcg.lruvec_pages(pos, nid, &self.mm.nodes) > 0;
                    if shrunk {
                        let before = sc.nr_reclaimed;
                        self.shrink_memcg_lruvec(pos, nid, sc);
                        let got = sc.nr_reclaimed - before;
                        self.mm.memcg.groups[pos as usize].stat[stat::PGSTEAL] += got;
                    }
                    // shrink_slab(memcg): the group's dentries and inodes, and the
                    // memcg-aware shadow-node shrinker.
                    if sc.may_shrinkslab {
                        let cpu = sc.cpu;
                        sc.nr_reclaimed += self.shrink_slab(sc.gfp_mask, sc.priority, cpu, pos);
                        if self.mm.kcfg.workingset {
                            self.shrink_shadow_nodes(pos, sc.gfp_mask, sc.priority);
                        }
                    }
                    let enough = sc.nr_reclaimed >= sc.nr_to_reclaim;
                    match mode {
                        // A partial walk stops once it has enough (mem_cgroup_iter_break);
                        // the cookie keeps this group as its position (the kernel stores
                        // every group it returns, for concurrent walkers; vmsim's walks do
                        // not interleave, so the one it stops at is enough).
                        MemcgReclaimIter::Cookie if partial && enough => {
                            self.mm.memcg.reclaim_iter.insert((root, nid), pos);
                            break;
                        }
                        MemcgReclaimIter::Restart if shrunk && !global && enough => break,
                        _ => {}
                    }
                }
            }
            pos = self.mm.memcg.next_pre(pos, root, skip_children);
            if pos == NO_MEMCG {
                // The end of the subtree: the next walk starts at its first group.
                if partial {
                    self.mm.memcg.reclaim_iter.remove(&(root, nid));
                }
                break;
            }
        }
        low_skipped
    }

    /// shrink_lruvec() on group `id`'s lruvec of a node, with that lruvec's scan balance.
    pub(super) fn shrink_memcg_lruvec(&mut self, id: u32, nid: usize, sc: &mut ScanControl) {
        self.mm.memcg.scan_memcg = id;
        self.prepare_scan_control(nid, sc);
        self.shrink_lruvec(nid, sc);
        self.mm.memcg.scan_memcg = ROOT_MEM_CGROUP;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(n: u64) -> MemcgState {
        let mut m = MemcgState::new(1);
        let a = m.mem_cgroup_alloc(ROOT_MEM_CGROUP);
        m.generate_binary(a, n);
        m
    }

    #[test]
    fn binary_tree_has_two_children_per_group_and_walks_in_preorder() {
        let m = tree(14);
        // ids: root 0, a 1, generated 2..=15 below a.
        assert_eq!(m.groups.len(), 16);
        let kids = |g: u32| {
            let mut v = Vec::new();
            let mut c = m.groups[g as usize].first_child;
            while c != NO_MEMCG {
                v.push(c);
                c = m.groups[c as usize].next_sibling;
            }
            v
        };
        assert_eq!(kids(1), vec![2, 3]);
        assert_eq!(kids(2), vec![4, 5]);
        assert_eq!(kids(3), vec![6, 7]);
        let mut order = Vec::new();
        let mut pos = ROOT_MEM_CGROUP;
        while pos != NO_MEMCG {
            order.push(pos);
            pos = m.next_pre(pos, ROOT_MEM_CGROUP, false);
        }
        assert_eq!(order.len(), 16, "every group once");
        assert_eq!(&order[..6], &[0, 1, 2, 4, 8, 9]);
        // Skipping group 2's subtree goes to its sibling.
        assert_eq!(m.next_pre(2, ROOT_MEM_CGROUP, true), 3);
        // A walk rooted at 2 never leaves its subtree.
        let mut pos = 2;
        let mut n = 0;
        while pos != NO_MEMCG {
            n += 1;
            pos = m.next_pre(pos, 2, false);
        }
        assert_eq!(n, 7, "2, 4, 5, 8, 9, 10, 11");
    }

    #[test]
    fn hard_limit_refuses_the_charge_at_the_limited_ancestor() {
        let mut m = tree(6);
        m.set_max(1, 10);
        for _ in 0..10 {
            m.page_counter_try_charge(5, 1).unwrap();
        }
        assert_eq!(m.page_counter_try_charge(5, 1), Err(1));
        assert_eq!(m.groups[5].memory.usage, 10, "the failed charge was undone");
        assert_eq!(m.groups[0].memory.usage, 10);
        assert_eq!(m.groups[1].memory.failcnt, 1);
        m.page_counter_uncharge(5, 10);
        assert!(m.groups.iter().all(|g| g.memory.usage == 0));
    }

    #[test]
    fn eligibility_climbs_and_children_in_excess_skip_subtrees() {
        let mut m = tree(14);
        // Group 9 (below 1 → 2 → 4) goes over a soft limit of 0.
        m.set_soft_limit(9, 0);
        m.page_counter_try_charge(9, 3).unwrap();
        m.mem_cgroup_update_soft_limit(9, 0);
        assert_eq!(m.groups[4].children_in_excess, 1);
        assert_eq!(m.groups[1].children_in_excess, 1);
        assert_eq!(m.groups[3].children_in_excess, 0);
        assert_eq!(m.soft_reclaim_eligible(9, 0, true).0, MemcgFilter::Visit);
        assert_eq!(m.soft_reclaim_eligible(3, 0, true).0, MemcgFilter::SkipTree);
        assert_eq!(m.soft_reclaim_eligible(3, 0, false).0, MemcgFilter::Skip);
        assert_eq!(m.soft_reclaim_eligible(2, 0, true).0, MemcgFilter::Skip);
        // The climb of a deep group walks every ancestor to the root.
        let (_, climbs) = m.soft_reclaim_eligible(15, 0, false);
        assert_eq!(climbs, m.groups[15].depth as u64 + 1);
        // The soft-limit tree holds the group in excess, keyed by its excess.
        assert_eq!(m.pop_largest_soft_limit_node(0), Some(9));
        m.page_counter_uncharge(9, 3);
        m.mem_cgroup_update_soft_limit(9, 0);
        assert_eq!(m.groups[1].children_in_excess, 0);
        assert!(m.check_invariants(&vec![0; m.groups.len()]).is_ok());
    }

    #[test]
    fn the_soft_limit_tree_hands_out_the_largest_excess_first() {
        let mut m = tree(6);
        for (g, soft, usage) in [(3u32, 10u64, 50u64), (5, 0, 20), (7, 100, 90), (4, 5, 200)] {
            m.set_soft_limit(g, soft);
            m.page_counter_try_charge(g, usage).unwrap();
            m.mem_cgroup_update_soft_limit(g, 0);
        }
        // Group 7 is under its soft limit; 1 (the parent of all) has no soft limit.
        assert_eq!(m.pop_largest_soft_limit_node(0), Some(4)); // excess 195
        assert_eq!(m.pop_largest_soft_limit_node(0), Some(3)); // 40
        m.reinsert_exceeded(4, 0);
        assert_eq!(m.pop_largest_soft_limit_node(0), Some(4));
        assert_eq!(m.pop_largest_soft_limit_node(0), Some(5)); // 20
        assert_eq!(m.pop_largest_soft_limit_node(0), None);
        // A group whose excess went away meanwhile is dropped, not handed out.
        m.reinsert_exceeded(5, 0);
        m.page_counter_uncharge(5, 20);
        assert_eq!(m.pop_largest_soft_limit_node(0), None);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Act {
            Charge(u32, u64),
            Uncharge(u32, u64),
            Soft(u32, u64),
            Max(u32, u64),
        }

        fn act() -> impl Strategy<Value = Act> {
            prop_oneof![
                (0u32..31, 1u64..40).prop_map(|(g, n)| Act::Charge(g, n)),
                (0u32..31, 1u64..40).prop_map(|(g, n)| Act::Uncharge(g, n)),
                (0u32..31, 0u64..60).prop_map(|(g, n)| Act::Soft(g, n)),
                (0u32..31, 0u64..200).prop_map(|(g, n)| Act::Max(g, n)),
            ]
        }

        proptest! {
            #[test]
            fn charges_balance_limits_hold_and_children_in_excess_recounts(
                acts in proptest::collection::vec(act(), 1..200)
            ) {
                let mut m = tree(29); // 31 groups
                let mut local = vec![0u64; m.groups.len()];
                for a in acts {
                    match a {
                        Act::Charge(g, n) => {
                            if m.page_counter_try_charge(g, n).is_ok() {
                                local[g as usize] += n;
                            }
                        }
                        Act::Uncharge(g, n) => {
                            let n = n.min(local[g as usize]);
                            m.page_counter_uncharge(g, n);
                            local[g as usize] -= n;
                        }
                        Act::Soft(g, n) => m.set_soft_limit(g, n),
                        Act::Max(g, n) => {
                            m.set_max(g, n);
                        }
                    }
                    // Every group's state is refreshed (the ratelimit reached) before checking.
                    for g in 1..m.groups.len() as u32 {
                        m.mem_cgroup_update_soft_limit(g, 0);
                    }
                    prop_assert_eq!(m.check_invariants(&local), Ok(()));
                    for (i, g) in m.groups.iter().enumerate() {
                        prop_assert_eq!(g.soft_contributed, i != 0 && g.soft_limit_excess() > 0);
                    }
                }
            }
        }
    }
}
