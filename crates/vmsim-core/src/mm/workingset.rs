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
//! `workingset_restore_file`. Since 5.9 (`kernel.workingset_anon`) an
//! anonymous page reclaimed to swap leaves its shadow in the swap cache and
//! its swap-in is judged the same way (`workingset_*_anon`).
//!
//! The page cache's xarray is modelled as far as shadows need it: each run of
//! 64 slots (XA_CHUNK_SIZE) of a file is a node with a count of entries and of
//! values (shadows); a node holding only shadows is on the shadow-node list
//! (workingset_update_node, the `workingset_nodes` gauge), and the shadow-node
//! shrinker frees such nodes, with their shadows, when there are more than one
//! per 8 pages the node could cache (count_shadow_nodes, shadow_lru_isolate,
//! `workingset_nodereclaim`).
//!
//! Simplified: shadow entries live in a table keyed by page-cache slot; each
//! memcg has one shadow-node list for all NUMA nodes, counted against its
//! lruvec pages on every node (the root's also against all slab, which vmsim
//! does not charge to groups); no `bucket_order` is
//! needed: the eviction clock is kept whole. Swap-cache shadows are kept by
//! swap slot and do not count in the xarray nodes.

use std::collections::{HashMap, VecDeque};

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

/// Slots per xarray node (XA_CHUNK_SHIFT).
pub const XA_CHUNK_SHIFT: u32 = 6;

/// The counts of one xarray node of the page cache (struct xa_node's count, nr_values).
#[derive(Debug, Clone, Copy, Default)]
struct XaNode {
    /// Entries, pages and shadows.
    count: u8,
    /// Shadow entries.
    nr_values: u8,
    /// On the shadow-node list (list_lru).
    on_list: bool,
    /// NUMA node its gauge is counted on.
    nid: u8,
    /// The memcg whose shadow-node list it is on (the group charged for the node:
    /// the file's).
    memcg: u32,
}

/// The simulated `struct shrinker *` of the shadow-node shrinker (workingset_shadow_shrinker).
pub const SHADOW_SHRINKER_ID: u64 = 0x1;

impl XaNode {
    /// Holds shadows only (workingset_update_node's condition).
    fn shadow_only(&self) -> bool {
        self.count > 0 && self.count == self.nr_values
    }
}

/// Bits of a packed shadow's eviction clock (what is left of 64 bits after the memcg
/// id, node and workingset bits, less a presence bit).
const EVICTION_BITS: u32 = 36;
/// The clock bits a refault distance is computed in (EVICTION_MASK).
pub const EVICTION_MASK: u64 = (1 << EVICTION_BITS) - 1;
/// Bits of a memcg id in a packed shadow (MEM_CGROUP_ID_SHIFT; 1,000,000 groups fit).
const MEMCG_BITS: u32 = 20;
/// Bits of a node id in a packed shadow (NODES_SHIFT: 64 nodes).
const NID_BITS: u32 = 6;

impl Shadow {
    /// The shadow as one machine word, never 0 (pack_shadow).
    fn pack(self) -> u64 {
        let mut v = self.eviction & EVICTION_MASK;
        v = (v << MEMCG_BITS) | self.memcg as u64;
        v = (v << NID_BITS) | self.nid as u64;
        v = (v << 1) | self.workingset as u64;
        (v << 1) | 1
    }

    /// A shadow from its word (unpack_shadow); None for 0, an empty slot.
    fn unpack(v: u64) -> Option<Shadow> {
        if v == 0 {
            return None;
        }
        let v = v >> 1;
        let workingset = v & 1 == 1;
        let v = v >> 1;
        let nid = (v & ((1 << NID_BITS) - 1)) as u16;
        let v = v >> NID_BITS;
        let memcg = (v & ((1 << MEMCG_BITS) - 1)) as u32;
        let eviction = v >> MEMCG_BITS;
        Some(Shadow {
            memcg,
            nid,
            eviction,
            workingset,
        })
    }
}

/// Shadow entries of the page cache, by rmap slot, and the xarray nodes they are in.
#[derive(Debug, Clone, Default)]
pub struct ShadowTable {
    map: HashMap<u32, Shadow>,
    /// Packed shadows of swapped-out anonymous pages, by swap slot (the swap cache's
    /// entries; 0 where there is none).
    swap: Vec<u64>,
    /// Nodes by slot >> XA_CHUNK_SHIFT.
    nodes: Vec<XaNode>,
    /// Per memcg, the nodes that held only shadows when they were listed, oldest
    /// first (the shadow_nodes list_lru, one list per memcg).
    lists: Vec<VecDeque<u32>>,
    /// Per memcg, the nodes that hold only shadows now.
    memcg_nodes: Vec<u64>,
    /// Per memcg, the shrinker's deferred work (nr_deferred) [nodes].
    deferred: Vec<u64>,
}

/// A change of the shadow-only node count: (node the gauge is on, +1 or -1).
pub type NodeDelta = Option<(usize, i64)>;

impl ShadowTable {
    /// Moves a node's counts and tells whether it joined or left the shadow-only nodes
    /// (workingset_update_node); a node made by this entry is `memcg`'s, on `nid`.
    fn update_node(
        &mut self,
        slot: u32,
        count: i8,
        values: i8,
        nid: usize,
        memcg: u32,
    ) -> NodeDelta {
        let i = (slot >> XA_CHUNK_SHIFT) as usize;
        if self.nodes.len() <= i {
            self.nodes.resize(i + 1, XaNode::default());
        }
        let n = &mut self.nodes[i];
        let was = n.shadow_only();
        if n.count == 0 {
            n.nid = nid as u8;
            n.memcg = memcg;
        }
        n.count = n.count.wrapping_add_signed(count);
        n.nr_values = n.nr_values.wrapping_add_signed(values);
        let is = n.shadow_only();
        let (nid, memcg) = (n.nid as usize, n.memcg as usize);
        match (was, is) {
            (false, true) => {
                if self.lists.len() <= memcg {
                    self.lists.resize(memcg + 1, VecDeque::new());
                    self.memcg_nodes.resize(memcg + 1, 0);
                }
                if !n.on_list {
                    n.on_list = true;
                    self.lists[memcg].push_back(i as u32);
                }
                self.memcg_nodes[memcg] += 1;
                Some((nid, 1))
            }
            (true, false) => {
                self.memcg_nodes[memcg] -= 1;
                Some((nid, -1))
            }
            _ => None,
        }
    }

    /// Leaves a shadow in the swap cache slot of a reclaimed anonymous page
    /// (__delete_from_swap_cache with a shadow).
    pub fn store_swap(&mut self, swap_slot: u32, s: Shadow) {
        let i = swap_slot as usize;
        if self.swap.len() <= i {
            self.swap.resize(i + 1, 0);
        }
        self.swap[i] = s.pack();
    }

    /// Shadows held in the swap cache.
    pub fn swap_len(&self) -> usize {
        self.swap.iter().filter(|&&v| v != 0).count()
    }

    /// Nodes that hold only shadows now, in every memcg.
    pub fn nr_shadow_nodes(&self) -> u64 {
        self.memcg_nodes.iter().sum()
    }

    /// Takes the shadow of a swap slot being read back or freed.
    pub fn take_swap(&mut self, swap_slot: u32) -> Option<Shadow> {
        Shadow::unpack(std::mem::take(self.swap.get_mut(swap_slot as usize)?))
    }

    /// A page (or, with `value`, a shadow) of a file charged to `memcg` entered a node's
    /// slot, or moved into a node from the xarray's head.
    pub fn page_added(&mut self, slot: u32, nid: usize, memcg: u32) -> NodeDelta {
        self.update_node(slot, 1, 0, nid, memcg)
    }

    /// Counts a shadow already in the table in its slot's node (moved from the head).
    pub fn value_added(&mut self, slot: u32, nid: usize, memcg: u32) -> NodeDelta {
        self.update_node(slot, 1, 1, nid, memcg)
    }

    /// Whether a slot holds a shadow.
    pub fn has(&self, slot: u32) -> bool {
        self.map.contains_key(&slot)
    }

    /// A page left a page-cache slot.
    pub fn page_removed(&mut self, slot: u32, nid: usize) -> NodeDelta {
        self.update_node(slot, -1, 0, nid, ROOT_MEM_CGROUP)
    }

    /// Leaves a shadow in a slot of a file charged to `memcg` (__filemap_remove_folio
    /// with a shadow), counted in the slot's node when `in_node`.
    pub fn store(&mut self, slot: u32, s: Shadow, memcg: u32, in_node: bool) -> NodeDelta {
        self.map.insert(slot, s);
        if !in_node {
            return None;
        }
        self.update_node(slot, 1, 1, s.nid as usize, memcg)
    }

    /// Takes the shadow out of a slot a page is being added to, or truncated
    /// (__filemap_add_folio, truncate_inode_pages).
    pub fn take(&mut self, slot: u32, in_node: bool) -> (Option<Shadow>, NodeDelta) {
        match self.map.remove(&slot) {
            Some(s) if in_node => (
                Some(s),
                self.update_node(slot, -1, -1, s.nid as usize, ROOT_MEM_CGROUP),
            ),
            s => (s, None),
        }
    }

    /// Takes a memcg's deferred shrinker work (xchg_nr_deferred).
    pub fn take_deferred(&mut self, memcg: u32) -> u64 {
        self.deferred
            .get_mut(memcg as usize)
            .map_or(0, std::mem::take)
    }

    /// Adds to a memcg's deferred shrinker work (add_nr_deferred).
    pub fn add_deferred(&mut self, memcg: u32, n: u64) -> u64 {
        if self.deferred.len() <= memcg as usize {
            self.deferred.resize(memcg as usize + 1, 0);
        }
        self.deferred[memcg as usize] += n;
        self.deferred[memcg as usize]
    }

    /// Shadow-only nodes on a memcg's list (list_lru_shrink_count).
    pub fn memcg_shadow_nodes(&self, memcg: u32) -> u64 {
        self.memcg_nodes.get(memcg as usize).copied().unwrap_or(0)
    }

    /// Takes the oldest node on a memcg's list that still holds only shadows off it and
    /// deletes it with its shadows (shadow_lru_isolate); its NUMA node and shadows freed.
    pub fn isolate_oldest(&mut self, memcg: u32) -> Option<(usize, u64)> {
        let list = self.lists.get_mut(memcg as usize)?;
        while let Some(i) = list.pop_front() {
            let n = &mut self.nodes[i as usize];
            n.on_list = false;
            if !n.shadow_only() {
                continue;
            }
            let (nid, freed) = (n.nid as usize, n.nr_values as u64);
            *n = XaNode::default();
            self.memcg_nodes[memcg as usize] -= 1;
            let first = i << XA_CHUNK_SHIFT;
            for slot in first..first + (1 << XA_CHUNK_SHIFT) {
                self.map.remove(&slot);
            }
            return Some((nid, freed));
        }
        None
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
    /// held (workingset_test_recent): the active file list, the inactive file list too
    /// for an anonymous page, and with swap space left the active anon list, plus the
    /// inactive anon list for a file page.
    fn workingset_test_recent(&mut self, s: Shadow, file: bool, swap_available: bool) -> bool {
        let lv = mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, s.memcg, s.nid as usize);
        let refault_distance = lv.nonresident_age.wrapping_sub(s.eviction) & EVICTION_MASK;
        let mut workingset_size = lv.nr[lru::ACTIVE_FILE];
        if !file {
            workingset_size += lv.nr[lru::INACTIVE_FILE];
        }
        if swap_available {
            workingset_size += lv.nr[lru::ACTIVE_ANON];
            if file {
                workingset_size += lv.nr[lru::INACTIVE_ANON];
            }
        }
        refault_distance <= workingset_size
    }
}

impl Kernel {
    /// Takes a page-cache slot's shadow, if any (the xarray store that replaces it).
    pub fn shadow_take(&mut self, ino: u32, slot: u32) -> Option<Shadow> {
        let in_node = self.inodes[ino as usize].xa_nodes;
        let (s, d) = self.shadows.take(slot, in_node);
        self.account_shadow_nodes(d);
        s
    }

    /// Leaves an evicted page's shadow in its page-cache slot.
    pub fn shadow_store(&mut self, ino: u32, slot: u32, s: Shadow) {
        let in_node = self.inodes[ino as usize].xa_nodes;
        let memcg = self.inode_memcg(ino);
        let d = self.shadows.store(slot, s, memcg, in_node);
        self.account_shadow_nodes(d);
    }

    /// A page entered a file's page cache at `index`. A file's xarray has nodes once it
    /// holds an entry beyond index 0 (xas_expand): its index-0 entry, page or shadow,
    /// moves from the head into the first node then.
    pub fn xa_page_added(&mut self, ino: u32, index: u64, slot: u32, nid: usize, memcg: u32) {
        // Without workingset detection no shadow is ever stored: nothing to count.
        if !self.mm.kcfg.workingset {
            return;
        }
        if index > 0 && !self.inodes[ino as usize].xa_nodes {
            self.inodes[ino as usize].xa_nodes = true;
            if let Some(s0) = self.inodes[ino as usize].pages.slot(0) {
                let d = match self.rmap.get(s0) {
                    super::rmap::Entry::Page(_) => self.shadows.page_added(s0, nid, memcg),
                    _ if self.shadows.has(s0) => self.shadows.value_added(s0, nid, memcg),
                    _ => None,
                };
                self.account_shadow_nodes(d);
            }
        }
        if self.inodes[ino as usize].xa_nodes {
            let d = self.shadows.page_added(slot, nid, memcg);
            self.account_shadow_nodes(d);
        }
    }

    /// A page left a file's page cache.
    pub fn xa_page_removed(&mut self, ino: u32, slot: u32, nid: usize) {
        if self.mm.kcfg.workingset && self.inodes[ino as usize].xa_nodes {
            let d = self.shadows.page_removed(slot, nid);
            self.account_shadow_nodes(d);
        }
    }

    /// Applies a change of the shadow-only node count to the `workingset_nodes` gauge.
    pub fn account_shadow_nodes(&mut self, d: NodeDelta) {
        if let Some((nid, delta)) = d {
            self.mm
                .mod_node_page_state(nid, NodeStat::WORKINGSET_NODES, delta);
        }
    }

    /// Frees a memcg's shadow-only nodes beyond one per 8 pages its lruvecs hold (and,
    /// for the root, the slab), half the excess per call and deferred work (count_shadow_nodes,
    /// do_shrink_slab with seeks 0, shadow_lru_isolate); returns nodes freed.
    pub fn shrink_shadow_nodes(&mut self, memcg: u32, gfp: super::gfp::Gfp, priority: i32) -> u64 {
        let nodes = self.shadows.memcg_shadow_nodes(memcg);
        if nodes == 0 {
            return 0;
        }
        let mut pages = 0u64;
        for nid in 0..self.mm.nodes.len() {
            pages += self.mm.memcg.lruvec_pages(memcg, nid, &self.mm.nodes);
            if memcg == ROOT_MEM_CGROUP {
                // Slab is not charged to groups in vmsim: all of it is the root's.
                let n = &self.mm.nodes[nid];
                pages += (n.vm_stat[NodeStat::NR_SLAB_RECLAIMABLE as usize]
                    + n.vm_stat[NodeStat::NR_SLAB_UNRECLAIMABLE as usize])
                    .max(0) as u64;
            }
        }
        // max_nodes = pages >> (XA_CHUNK_SHIFT - 3)
        let max_nodes = pages >> (XA_CHUNK_SHIFT - 3);
        if nodes <= max_nodes {
            return 0;
        }
        let freeable = nodes - max_nodes;
        // Objects that cost no I/O to rebuild are trimmed by half the excess, plus the
        // work earlier calls deferred (nr_deferred, per memcg).
        let nr = self.shadows.take_deferred(memcg);
        let delta = freeable / 2;
        let mut total_scan = ((nr >> priority.clamp(0, 63)) + delta).min(2 * freeable);
        let nid = self.mm.cpu_to_node[self.mm.cur.cpu] as i32;
        let shr = SHADOW_SHRINKER_ID;
        self.trace(crate::trace::TraceEvent::MmShrinkSlabStart {
            shr,
            shrink: crate::trace::SHRINK_SCAN_SHADOW_NODES,
            nid,
            nr_objects_to_shrink: nr as i64,
            gfp_flags: gfp.0,
            cache_items: freeable,
            delta,
            total_scan,
            priority,
        });
        let first_total = total_scan;
        let batch = super::shrinker::SHRINK_BATCH;
        let mut freed = 0;
        let mut scanned = 0;
        while total_scan >= batch || total_scan >= freeable {
            let nr_to_scan = batch.min(total_scan);
            if nr_to_scan == 0 {
                break;
            }
            for _ in 0..nr_to_scan {
                let Some((nid, _)) = self.shadows.isolate_oldest(memcg) else {
                    break;
                };
                self.mm.cur.acc += self.mm.cost.shrink_object;
                self.mm
                    .mod_node_page_state(nid, NodeStat::WORKINGSET_NODES, -1);
                self.mm
                    .mod_node_page_state(nid, NodeStat::WORKINGSET_NODERECLAIM, 1);
                freed += 1;
            }
            self.mm
                .count_vm_events(super::vmstat::Event::SLABS_SCANNED, nr_to_scan);
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        // New work not done is deferred, old deferred work done is taken off.
        let next_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
        let new_nr = self.shadows.add_deferred(memcg, next_deferred);
        self.trace(crate::trace::TraceEvent::MmShrinkSlabEnd {
            shr,
            nid,
            shrink: crate::trace::SHRINK_SCAN_SHADOW_NODES,
            unused_scan: nr as i64,
            new_scan: new_nr as i64,
            retval: freed as i32,
            total_scan: first_total as i64,
        });
        freed
    }

    /// The shadow an evicted file page leaves, read from the reclaim target's lruvec
    /// on the page's node, whose clock the eviction then advances (workingset_eviction).
    pub fn workingset_eviction(&mut self, p: Pfn, target_memcg: u32) -> Shadow {
        let nid = self.mm.pfn_to_nid(p);
        let eviction = mem_cgroup_lruvec(&mut self.mm.nodes, &mut self.mm.memcg, target_memcg, nid)
            .nonresident_age;
        let nr = self.mm.folio_nr_pages(p);
        self.mm.workingset_age_nonresident(target_memcg, nid, nr);
        Shadow {
            memcg: target_memcg,
            nid: nid as u16,
            eviction,
            workingset: self.mm.map[p as usize].test(pg::WORKINGSET),
        }
    }

    /// A page read back into the slot its shadow was in (the page cache, or the swap
    /// cache for an anonymous page), before it goes on the LRU (workingset_refault):
    /// counted as a refault; within the working set it comes back active, and restored
    /// if it was in the working set before.
    pub fn workingset_refault(&mut self, p: Pfn, s: Shadow) {
        use super::memcontrol::stat;
        let nid = self.mm.pfn_to_nid(p);
        let nr = self.mm.folio_nr_pages(p);
        let file = self.mm.map[p as usize].kind() == super::page::PageKind::File;
        let pick = |f: NodeStat, a: NodeStat| if file { f } else { a };
        self.mm.mod_node_page_state(
            nid,
            pick(
                NodeStat::WORKINGSET_REFAULT_FILE,
                NodeStat::WORKINGSET_REFAULT_ANON,
            ),
            nr as i64,
        );
        let memcg_item = if file {
            stat::WORKINGSET_REFAULT_FILE
        } else {
            stat::WORKINGSET_REFAULT_ANON
        };
        self.mod_memcg_page_state(p, memcg_item, nr as i64);
        let swap_available = self.swap.pages > 0 && self.swap.nr_free() > 0;
        if !self.mm.workingset_test_recent(s, file, swap_available) {
            return;
        }
        let page = self.mm.map[p as usize];
        let memcg = self.mm.memcg.folio_memcg(page.kind(), page.owner);
        self.mm.map[p as usize].flags |= pg::ACTIVE;
        self.mm.workingset_age_nonresident(memcg, nid, nr);
        self.mm.mod_node_page_state(
            nid,
            pick(
                NodeStat::WORKINGSET_ACTIVATE_FILE,
                NodeStat::WORKINGSET_ACTIVATE_ANON,
            ),
            nr as i64,
        );
        if s.workingset {
            self.mm.map[p as usize].flags |= pg::WORKINGSET;
            // lru_note_cost_refault(): the refault is I/O that reclaiming this type cost.
            self.lru_note_cost(nid, file, nr, 0);
            self.mm.mod_node_page_state(
                nid,
                pick(
                    NodeStat::WORKINGSET_RESTORE_FILE,
                    NodeStat::WORKINGSET_RESTORE_ANON,
                ),
                nr as i64,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shadow() -> Shadow {
        Shadow {
            memcg: ROOT_MEM_CGROUP,
            nid: 0,
            eviction: 0,
            workingset: false,
        }
    }

    #[test]
    fn a_node_is_shadow_only_while_it_holds_shadows_and_no_page() {
        let mut t = ShadowTable::default();
        // Two pages in the node of slots 64..128.
        assert_eq!(t.page_added(64, 0, 0), None);
        assert_eq!(t.page_added(65, 0, 0), None);
        // One evicted: a page and a shadow.
        assert_eq!(t.page_removed(64, 0), None);
        assert_eq!(t.store(64, shadow(), 0, true), None);
        // The other evicted: only shadows from the moment its page leaves.
        assert_eq!(t.page_removed(65, 0), Some((0, 1)));
        assert_eq!(t.store(65, shadow(), 0, true), None);
        assert_eq!(t.nr_shadow_nodes(), 1);
        // A refault brings a page back: no longer shadow-only.
        let (s, d) = t.take(64, true);
        assert!(s.is_some());
        assert_eq!(d, None, "one shadow left, count 1 = nr_values 1");
        assert_eq!(t.page_added(64, 0, 0), Some((0, -1)));
        assert_eq!(t.nr_shadow_nodes(), 0);
        // The shrinker skips the node, listed but no longer shadow-only.
        assert_eq!(t.isolate_oldest(0), None);
    }

    #[test]
    fn a_shadow_packs_into_a_word_and_back() {
        let s = Shadow {
            memcg: 1_000_000,
            nid: 63,
            eviction: EVICTION_MASK,
            workingset: true,
        };
        assert_eq!(Shadow::unpack(s.pack()), Some(s));
        let t = Shadow {
            memcg: 0,
            nid: 0,
            eviction: 0,
            workingset: false,
        };
        assert_ne!(t.pack(), 0, "an empty slot is 0");
        assert_eq!(Shadow::unpack(t.pack()), Some(t));
        assert_eq!(Shadow::unpack(0), None);
        let mut tab = ShadowTable::default();
        tab.store_swap(7, s);
        tab.store_swap(7, t);
        assert_eq!(tab.swap_len(), 1);
        assert_eq!(tab.take_swap(7), Some(t));
        assert_eq!(tab.take_swap(7), None);
        assert_eq!(tab.take_swap(1 << 30), None);
        assert_eq!(tab.swap_len(), 0);
    }

    #[test]
    fn isolating_a_node_frees_its_shadows() {
        let mut t = ShadowTable::default();
        for slot in 0..64 {
            t.store(slot, shadow(), 0, true);
        }
        t.store(200, shadow(), 0, true);
        assert_eq!(t.nr_shadow_nodes(), 2);
        assert_eq!(t.isolate_oldest(0), Some((0, 64)));
        assert_eq!(t.len(), 1);
        assert_eq!(t.take(5, true), (None, None));
        assert_eq!(t.nr_shadow_nodes(), 1);
        assert_eq!(t.isolate_oldest(0), Some((0, 1)));
        assert!(t.is_empty());
    }
}
