//! LRU list maintenance.
//!
//! Models mm/swap.c and include/linux/mm_inline.h: lruvec_add_folio() and
//! lruvec_del_folio() with the LRU size counters, lru_add (new pages start
//! on the inactive list of their type), folio_mark_accessed() (the
//! inactive,unreferenced → inactive,referenced → active ladder for pages
//! accessed through syscalls) and folio_activate(). The per-CPU folio
//! batches are modelled by taking `lru_lock` once per PAGEVEC_SIZE pages.

use super::mmzone::lru;
use super::page::{pg, PageKind, Pfn};
use super::vmstat::{Event, NodeStat, ZoneStat};
use super::Mm;

/// Pages gathered per CPU before lru_lock is taken (PAGEVEC_SIZE / folio_batch size).
pub const PAGEVEC_SIZE: u64 = 15;

impl Mm {
    /// Base pages in the folio headed by `pfn` (folio_nr_pages): 2^order of its block,
    /// 1 for every page but a large page-cache folio.
    #[inline(always)]
    pub fn folio_nr_pages(&self, pfn: Pfn) -> u64 {
        1 << self.map[pfn as usize].order()
    }

    /// The LRU list a page belongs on (folio_lru_list).
    #[inline(always)]
    pub fn folio_lru_list(&self, pfn: Pfn) -> usize {
        let p = &self.map[pfn as usize];
        if p.test(pg::UNEVICTABLE) {
            return lru::UNEVICTABLE;
        }
        let base = if p.kind() == PageKind::File {
            lru::INACTIVE_FILE
        } else {
            lru::INACTIVE_ANON
        };
        base + p.test(pg::ACTIVE) as usize
    }

    /// Adjusts the node and zone LRU size counters and the page's lruvec's (update_lru_size).
    #[inline(always)]
    fn update_lru_size(&mut self, pfn: Pfn, l: usize, delta: i64) {
        let zid = self.page_zone(pfn);
        let nid = self.zones[zid].nid;
        self.zones[zid].vm_stat[ZoneStat::NR_ZONE_INACTIVE_ANON as usize + l] += delta;
        self.nodes[nid].vm_stat[NodeStat::NR_INACTIVE_ANON as usize + l] += delta;
        let lv = self.folio_lruvec(pfn, nid);
        lv.nr[l] = (lv.nr[l] as i64 + delta) as u64;
    }

    /// The lruvec a page lives on (folio_lruvec): its memcg's on its node.
    #[inline(always)]
    fn folio_lruvec(&mut self, pfn: Pfn, nid: usize) -> &mut super::mmzone::Lruvec {
        let page = self.map[pfn as usize];
        let id = self.memcg.folio_memcg(page.kind(), page.owner);
        super::memcontrol::mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, id, nid)
    }

    /// Checks the LRU lists against their sizes (expensive): every page on a list is PageLRU,
    /// belongs on that list (folio_lru_list), to the list's node and memcg, and is on no
    /// other list; every PageLRU frame is on one; each list's length is its lruvec's size,
    /// and the node and zone NR_*_ANON/FILE and NR_UNEVICTABLE counters are the recount.
    pub fn check_lru(&self) -> Result<(), String> {
        use super::memcontrol::{NO_MEMCG, ROOT_MEM_CGROUP};
        let nr_nodes = self.nodes.len();
        // The group of each per-node lruvec of the memcg table.
        let mut pn_group = vec![NO_MEMCG; self.memcg.pn.len()];
        for (id, g) in self.memcg.groups.iter().enumerate() {
            if g.pn != NO_MEMCG {
                for nid in 0..nr_nodes {
                    pn_group[g.pn as usize + nid] = id as u32;
                }
            }
        }
        let lruvecs = self
            .nodes
            .iter()
            .enumerate()
            .map(|(nid, n)| (nid, ROOT_MEM_CGROUP, &n.lruvec))
            .chain(self.memcg.pn.iter().enumerate().filter_map(|(i, pn)| {
                (pn_group[i] != NO_MEMCG).then_some((i % nr_nodes, pn_group[i], &pn.lruvec))
            }));
        let mut seen = vec![false; self.map.len()];
        let mut node_nr = vec![[0i64; lru::NR_LRU_LISTS]; nr_nodes];
        let mut zone_nr = vec![[0i64; lru::NR_LRU_LISTS]; self.zones.len()];
        for (nid, memcg, lv) in lruvecs {
            for l in 0..lru::NR_LRU_LISTS {
                let mut len = 0u64;
                for p in lv.lists[l].iter(&self.map) {
                    let page = &self.map[p as usize];
                    let at = format!("pfn {p} on LRU list {l} of node {nid} memcg {memcg}");
                    if seen[p as usize] {
                        return Err(format!("{at}: on two LRU lists (or a cycle)"));
                    }
                    seen[p as usize] = true;
                    if !page.test(pg::LRU) {
                        return Err(format!("{at}: not PageLRU (flags {:#x})", page.flags));
                    }
                    if self.folio_lru_list(p) != l {
                        return Err(format!("{at}: belongs on list {}", self.folio_lru_list(p)));
                    }
                    if self.pfn_to_nid(p) != nid {
                        return Err(format!("{at}: on node {}", self.pfn_to_nid(p)));
                    }
                    let owner = self.memcg.folio_memcg(page.kind(), page.owner);
                    if owner != memcg {
                        return Err(format!("{at}: charged to memcg {owner}"));
                    }
                    let nr = self.folio_nr_pages(p);
                    zone_nr[self.page_zone(p)][l] += nr as i64;
                    len += nr;
                }
                if len != lv.nr[l] {
                    return Err(format!(
                        "LRU list {l} of node {nid} memcg {memcg}: size {} but the list holds {len}",
                        lv.nr[l]
                    ));
                }
                node_nr[nid][l] += len as i64;
            }
        }
        if let Some(p) = (0..self.map.len()).find(|&p| self.map[p].test(pg::LRU) && !seen[p]) {
            return Err(format!("pfn {p} is PageLRU but on no LRU list"));
        }
        for (nid, (n, listed)) in self.nodes.iter().zip(&node_nr).enumerate() {
            for (l, &held) in listed.iter().enumerate() {
                let counter = n.vm_stat[NodeStat::NR_INACTIVE_ANON as usize + l];
                if counter != held {
                    return Err(format!(
                        "node {nid}: LRU counter {} is {counter} but its lists hold {held}",
                        NodeStat::NAMES[NodeStat::NR_INACTIVE_ANON as usize + l],
                    ));
                }
            }
        }
        for (zone, listed) in self.zones.iter().zip(&zone_nr) {
            for (l, &held) in listed.iter().enumerate() {
                let counter = zone.vm_stat[ZoneStat::NR_ZONE_INACTIVE_ANON as usize + l];
                if counter != held {
                    return Err(format!(
                        "zone {} of node {}: LRU counter {counter} for list {l} but its lists hold {held}",
                        zone.zone_type.name(),
                        zone.nid,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Puts a page on the head of its LRU list (lruvec_add_folio).
    #[inline]
    pub fn lruvec_add_folio(&mut self, pfn: Pfn) {
        let l = self.folio_lru_list(pfn);
        let nid = self.pfn_to_nid(pfn);
        self.map[pfn as usize].flags |= pg::LRU;
        let page = self.map[pfn as usize];
        let id = self.memcg.folio_memcg(page.kind(), page.owner);
        super::memcontrol::mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, id, nid).lists[l]
            .push_front(&mut self.map, pfn);
        self.update_lru_size(pfn, l, self.folio_nr_pages(pfn) as i64);
    }

    /// Puts a page on the tail of its LRU list (lruvec_add_folio_tail).
    #[inline]
    pub fn lruvec_add_folio_tail(&mut self, pfn: Pfn) {
        let l = self.folio_lru_list(pfn);
        let nid = self.pfn_to_nid(pfn);
        self.map[pfn as usize].flags |= pg::LRU;
        let page = self.map[pfn as usize];
        let id = self.memcg.folio_memcg(page.kind(), page.owner);
        super::memcontrol::mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, id, nid).lists[l]
            .push_back(&mut self.map, pfn);
        self.update_lru_size(pfn, l, self.folio_nr_pages(pfn) as i64);
    }

    /// Takes a page off its LRU list (lruvec_del_folio).
    #[inline]
    pub fn lruvec_del_folio(&mut self, pfn: Pfn) {
        debug_assert!(self.map[pfn as usize].test(pg::LRU));
        let l = self.folio_lru_list(pfn);
        let nid = self.pfn_to_nid(pfn);
        let page = self.map[pfn as usize];
        let id = self.memcg.folio_memcg(page.kind(), page.owner);
        super::memcontrol::mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, id, nid).lists[l]
            .remove(&mut self.map, pfn);
        self.map[pfn as usize].flags &= !pg::LRU;
        self.update_lru_size(pfn, l, -(self.folio_nr_pages(pfn) as i64));
    }

    /// The lruvec reclaim is scanning on a node (the lruvec argument of shrink_lruvec):
    /// the node's unless memcg reclaim is walking a group.
    #[inline(always)]
    pub fn scan_lruvec(&self, nid: usize) -> &super::mmzone::Lruvec {
        let id = self.memcg.scan_memcg;
        super::memcontrol::mem_cgroup_lruvec_ref(&self.nodes, &self.memcg, id, nid)
    }

    /// Mutable [`Mm::scan_lruvec`].
    #[inline(always)]
    pub fn scan_lruvec_mut(&mut self, nid: usize) -> &mut super::mmzone::Lruvec {
        let id = self.memcg.scan_memcg;
        super::memcontrol::mem_cgroup_lruvec(&mut self.nodes, &mut self.memcg, id, nid)
    }

    /// Charges the per-CPU batching of LRU additions: lru_lock is taken once per batch.
    #[inline]
    fn lru_batch_lock(&mut self, nid: usize, cpu: usize) {
        self.cur.acc += self.cost.lru_add;
        self.lru_batch[cpu] += 1;
        if self.lru_batch[cpu] >= PAGEVEC_SIZE {
            self.lru_batch[cpu] = 0;
            let hold = PAGEVEC_SIZE * self.cost.lru_lock_page;
            let at = self.clock();
            self.cur.acc += hold + self.nodes[nid].lruvec.lru_lock.acquire(at, hold);
        }
    }

    /// Adds a new page to the inactive list of its type (folio_add_lru).
    pub fn folio_add_lru(&mut self, pfn: Pfn, cpu: usize) {
        let nid = self.pfn_to_nid(pfn);
        self.lru_batch_lock(nid, cpu);
        self.lruvec_add_folio(pfn);
    }

    /// Takes a page off the LRU before it is freed (folio_put → __folio_clear_lru_flags).
    pub fn lru_remove_for_free(&mut self, pfn: Pfn, cpu: usize) {
        if self.map[pfn as usize].test(pg::LRU) {
            let nid = self.pfn_to_nid(pfn);
            self.lru_batch_lock(nid, cpu);
            self.lruvec_del_folio(pfn);
        }
        self.map[pfn as usize].flags &= !(pg::ACTIVE
            | pg::REFERENCED
            | pg::YOUNG
            | pg::DIRTY
            | pg::RECLAIM
            | pg::WORKINGSET
            | pg::MAPPED);
    }

    /// Moves an inactive page to the active list (folio_activate).
    pub fn folio_activate(&mut self, pfn: Pfn, cpu: usize) {
        let p = &self.map[pfn as usize];
        if !p.test(pg::LRU) || p.test(pg::ACTIVE) || p.test(pg::UNEVICTABLE) {
            return;
        }
        let nid = self.pfn_to_nid(pfn);
        self.lru_batch_lock(nid, cpu);
        self.lruvec_del_folio(pfn);
        self.map[pfn as usize].flags |= pg::ACTIVE;
        self.lruvec_add_folio(pfn);
        self.count_vm_events(Event::PGACTIVATE, self.folio_nr_pages(pfn));
    }

    /// An access through a syscall (read/write of the page cache) (folio_mark_accessed):
    /// inactive,unreferenced → inactive,referenced → active,unreferenced → active,referenced.
    pub fn folio_mark_accessed(&mut self, pfn: Pfn, cpu: usize) {
        let flags = self.map[pfn as usize].flags;
        if flags & pg::UNEVICTABLE != 0 {
            return;
        }
        if flags & pg::ACTIVE == 0 && flags & pg::REFERENCED != 0 {
            if flags & pg::LRU != 0 {
                self.folio_activate(pfn, cpu);
            } else {
                self.map[pfn as usize].flags |= pg::ACTIVE;
            }
            self.map[pfn as usize].flags &= !pg::REFERENCED;
        } else if flags & pg::REFERENCED == 0 {
            self.map[pfn as usize].flags |= pg::REFERENCED;
        }
    }

    /// Pages on a node's LRU list `l`, for zones up to `reclaim_idx` (lruvec_lru_size).
    pub fn lruvec_lru_size(&self, nid: usize, l: usize, reclaim_idx: usize) -> u64 {
        if self.memcg.enabled() {
            // Per-memcg sizes are not split by zone.
            return self.scan_lruvec(nid).nr[l];
        }
        let mut n = 0i64;
        for zt in 0..=reclaim_idx {
            let z = &self.zones[self.nodes[nid].zones[zt]];
            n += z.vm_stat[ZoneStat::NR_ZONE_INACTIVE_ANON as usize + l];
        }
        n.max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;
    use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;

    fn mm() -> Mm {
        let sc = Scenario::from_toml("[machine]\nmemory=\"256MiB\"\ncpus=1\n").unwrap();
        Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
    }

    #[test]
    fn mark_accessed_climbs_the_ladder() {
        let mut m = mm();
        let p = m.alloc_pages_fast(GFP_HIGHUSER_MOVABLE, 0, 0, 0).0.unwrap();
        m.map[p as usize].set_kind(PageKind::File);
        m.folio_add_lru(p, 0);
        assert_eq!(m.folio_lru_list(p), lru::INACTIVE_FILE);
        assert_eq!(m.nodes[0].lruvec.nr[lru::INACTIVE_FILE], 1);
        m.folio_mark_accessed(p, 0);
        assert!(m.map[p as usize].test(pg::REFERENCED));
        assert_eq!(m.folio_lru_list(p), lru::INACTIVE_FILE);
        m.folio_mark_accessed(p, 0);
        assert_eq!(m.folio_lru_list(p), lru::ACTIVE_FILE);
        assert!(!m.map[p as usize].test(pg::REFERENCED));
        assert_eq!(m.nodes[0].lruvec.nr[lru::INACTIVE_FILE], 0);
        assert_eq!(m.nodes[0].lruvec.nr[lru::ACTIVE_FILE], 1);
        assert_eq!(m.events[Event::PGACTIVATE as usize], 1);
        m.lru_remove_for_free(p, 0);
        assert_eq!(m.nodes[0].lruvec.nr[lru::ACTIVE_FILE], 0);
        assert!(m.nodes[0].lruvec.lists[lru::ACTIVE_FILE].is_empty());
    }
}
