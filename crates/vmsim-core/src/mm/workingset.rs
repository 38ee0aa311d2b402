//! Working-set detection of evicted page-cache pages.
//!
//! Models mm/workingset.c on the classic two-list LRU (not MGLRU): every
//! lruvec has a `nonresident_age` clock that advances on evictions and
//! activations (workingset_age_nonresident, up the memcg hierarchy). A file
//! page reclaim evicts leaves a shadow entry in its page-cache slot with the
//! clock of the reclaim target's lruvec (workingset_eviction); when the page
//! is read back, the refault distance — the clock's advance since — is
//! compared with the working set the eviction lruvec could have kept
//! (workingset_test_recent): within it, the page comes back active
//! (workingset_refault). The counters are /proc/vmstat's
//! `workingset_refault_file`, `workingset_activate_file` and
//! `workingset_restore_file`.
//!
//! Simplified: shadow entries live in a table keyed by page-cache slot rather
//! than in the xarray, and the shadow-node shrinker (`workingset_nodes`,
//! `workingset_nodereclaim`) is not modelled: a shadow stays until the page
//! comes back or its file is truncated. No `bucket_order` is needed: the
//! eviction clock is kept whole. Anonymous refaults keep swap.rs's own rule.

use std::collections::HashMap;

use super::memcontrol::{mem_cgroup_lruvec, ROOT_MEM_CGROUP};
use super::mmzone::lru;
use super::page::{pg, Pfn};
use super::vmstat::NodeStat;
use super::Mm;
use crate::kernel::Kernel;

/// What an evicted page leaves in its slot (pack_shadow's fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shadow {
    /// The memcg whose lruvec's clock was read (the reclaim target's).
    pub memcg: u32,
    /// The node the page was on.
    pub nid: u16,
    /// The clock at eviction (nonresident_age) [pages].
    pub eviction: u64,
    /// The page was in the working set (PG_workingset) when it was evicted.
    pub workingset: bool,
}

/// Shadow entries of the page cache, by rmap slot.
#[derive(Debug, Clone, Default)]
pub struct ShadowTable {
    map: HashMap<u32, Shadow>,
}

impl ShadowTable {
    /// Leaves a shadow in a slot (__filemap_remove_folio with a shadow).
    pub fn store(&mut self, slot: u32, s: Shadow) {
        self.map.insert(slot, s);
    }

    /// Takes the shadow out of a slot a page is being added to (__filemap_add_folio).
    pub fn take(&mut self, slot: u32) -> Option<Shadow> {
        self.map.remove(&slot)
    }

    /// Shadow entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no shadow is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl Mm {
    /// Advances the non-resident clock of a group's lruvec on a node and of every
    /// ancestor's (workingset_age_nonresident).
    pub fn workingset_age_nonresident(&mut self, memcg: u32, nid: usize, nr: u64) {
        let mut id = memcg;
        loop {
            mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, id, nid).nonresident_age += nr;
            if id == ROOT_MEM_CGROUP {
                break;
            }
            id = self.memcg.groups[id as usize].parent;
        }
    }

    /// Whether a refault is within the working set the eviction lruvec could have
    /// held (workingset_test_recent, file pages).
    fn workingset_test_recent(&mut self, s: Shadow, swap_available: bool) -> bool {
        let lv = mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, s.memcg, s.nid as usize);
        let refault_distance = lv.nonresident_age.wrapping_sub(s.eviction);
        let mut workingset_size = lv.nr[lru::ACTIVE_FILE];
        if swap_available {
            workingset_size += lv.nr[lru::ACTIVE_ANON] + lv.nr[lru::INACTIVE_ANON];
        }
        refault_distance <= workingset_size
    }
}

impl Kernel {
    /// The shadow an evicted file page leaves, read from the reclaim target's lruvec
    /// on the page's node, whose clock the eviction then advances (workingset_eviction).
    pub fn workingset_eviction(&mut self, p: Pfn, target_memcg: u32) -> Shadow {
        let nid = self.mm.pfn_to_nid(p);
        let eviction = mem_cgroup_lruvec(&mut self.mm.nodes, &mut self.mm.memcg, target_memcg, nid)
            .nonresident_age;
        self.mm.workingset_age_nonresident(target_memcg, nid, 1);
        Shadow {
            memcg: target_memcg,
            nid: nid as u16,
            eviction,
            workingset: self.mm.map[p as usize].test(pg::WORKINGSET),
        }
    }

    /// A file page read back into the slot its shadow was in, before it goes on
    /// the LRU (workingset_refault): counted as a refault; within the working set it
    /// comes back active, and restored if it was in the working set before.
    pub fn workingset_refault(&mut self, p: Pfn, s: Shadow) {
        let nid = self.mm.pfn_to_nid(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::WORKINGSET_REFAULT_FILE, 1);
        let swap_available = self.swap.pages > 0 && self.swap.nr_free() > 0;
        if !self.mm.workingset_test_recent(s, swap_available) {
            return;
        }
        let page = self.mm.map[p as usize];
        let memcg = self.mm.memcg.folio_memcg(page.kind(), page.owner);
        self.mm.map[p as usize].flags |= pg::ACTIVE;
        self.mm.workingset_age_nonresident(memcg, nid, 1);
        self.mm
            .mod_node_page_state(nid, NodeStat::WORKINGSET_ACTIVATE_FILE, 1);
        if s.workingset {
            self.mm.map[p as usize].flags |= pg::WORKINGSET;
            // lru_note_cost_refault(): the refault is I/O that reclaiming file cost.
            self.lru_note_cost(nid, true, 1, 0);
            self.mm
                .mod_node_page_state(nid, NodeStat::WORKINGSET_RESTORE_FILE, 1);
        }
    }
}
