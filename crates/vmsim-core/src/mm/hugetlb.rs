//! The hugetlb pool: persistent huge pages of the default size (2 MiB on x86-64).
//!
//! Models mm/hugetlb.c (≈v6.17) for the default hstate: `vm.nr_hugepages`
//! and the per-node `nr_hugepages` files grow and shrink the pool through
//! `set_max_huge_pages()`. Growing asks the buddy allocator for one order-9
//! folio at a time, round-robin over the allowed nodes
//! (`for_each_node_mask_to_alloc`, `alloc_pool_huge_folio()`), with
//! `htlb_alloc_mask() | __GFP_THISNODE | __GFP_COMP | __GFP_NOWARN` plus
//! `__GFP_RETRY_MAYFAIL` — or `__GFP_NORETRY` on a node whose last try-hard
//! allocation failed during this resize (`node_alloc_noretry`,
//! `alloc_buddy_hugetlb_folio()`) — and stops at the first folio no node can
//! give. Shrinking frees free pool pages round-robin
//! (`for_each_node_mask_to_free`). Pool pages are allocated memory: no other
//! user of the machine can have them, reclaim and compaction leave them alone.
//!
//! Simplifications: no surplus pages (`nr_overcommit_hugepages` 0), no
//! reservations or faults of hugetlbfs mappings (the pool only), no gigantic
//! pages, no vmemmap optimisation.

use super::gfp::{
    Gfp, __GFP_COMP, __GFP_NORETRY, __GFP_NOWARN, __GFP_RETRY_MAYFAIL, __GFP_THISNODE,
    GFP_HIGHUSER_MOVABLE,
};
use super::huge_memory::{HPAGE_PMD_NR, HPAGE_PMD_ORDER};
use super::page::{PageKind, Pfn, NO_OWNER};
use super::vmstat::{Event, NodeStat};
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// The default hstate (struct hstate for 2 MiB pages).
#[derive(Debug, Clone, Default)]
pub struct Hstate {
    /// Huge pages in the pool (nr_huge_pages).
    pub nr_huge_pages: u64,
    /// Of those, free (free_huge_pages).
    pub free_huge_pages: u64,
    /// Pool pages per node (nr_huge_pages_node).
    pub nr_huge_pages_node: Vec<u64>,
    /// Free pool folios per node (hugepage_freelists), head pfns.
    pub free_list: Vec<Vec<Pfn>>,
    /// The node the next pool allocation starts at (next_nid_to_alloc).
    pub next_nid_to_alloc: usize,
    /// The node the next shrink frees from first (next_nid_to_free).
    pub next_nid_to_free: usize,
    /// Nodes whose last try-hard allocation failed in the resize in progress
    /// (node_alloc_noretry); empty when no resize is in progress.
    pub node_alloc_noretry: Vec<bool>,
}

/// What one step of a pool resize did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// The pool has the size asked for, or as much of it as the machine gave.
    Done,
    /// The step's time is used up (cond_resched); call again.
    Yield,
    /// The allocating task must sleep (throttled or waiting for I/O); call again.
    Sleep,
}

impl Hstate {
    /// Persistent huge pages of the pool, on one node or all (persistent_huge_pages).
    pub fn persistent_huge_pages(&self, nid: Option<usize>) -> u64 {
        match nid {
            Some(n) => self.nr_huge_pages_node.get(n).copied().unwrap_or(0),
            None => self.nr_huge_pages,
        }
    }
}

impl Kernel {
    /// Changes the pool to `count` huge pages, on node `nid` only or spread over every
    /// node, as task `tid`, within the step's quantum `quantum` [ns] (set_max_huge_pages).
    pub fn set_max_huge_pages(
        &mut self,
        count: u64,
        nid: Option<usize>,
        tid: TaskId,
        quantum: u64,
    ) -> Resize {
        let nr_nodes = self.mm.nodes.len();
        self.ensure_hstate();
        // A per-node count is a change of that node's share of the global pool.
        let target = match nid {
            Some(n) => self.hstate.nr_huge_pages - self.hstate.nr_huge_pages_node[n] + count,
            None => count,
        };
        if self.hstate.node_alloc_noretry.is_empty() {
            self.hstate.node_alloc_noretry = vec![false; nr_nodes];
        }
        while target > self.hstate.nr_huge_pages {
            if self.mm.cur.acc >= quantum {
                return Resize::Yield;
            }
            match self.alloc_pool_huge_folio(nid, tid) {
                AllocResult::Page(p) => self.prep_new_hugetlb_folio(p),
                AllocResult::Retry => return Resize::Sleep,
                AllocResult::Failed | AllocResult::Killed => break,
            }
        }
        // Shrinking frees free pool pages only (no surplus: used pages stay).
        while target < self.hstate.nr_huge_pages {
            if !self.free_pool_huge_folio(nid) {
                break;
            }
        }
        self.hstate.node_alloc_noretry.clear();
        Resize::Done
    }

    /// Sizes the per-node tables of the hstate once the machine is known.
    fn ensure_hstate(&mut self) {
        let n = self.mm.nodes.len();
        if self.hstate.nr_huge_pages_node.len() != n {
            self.hstate.nr_huge_pages_node = vec![0; n];
            self.hstate.free_list = vec![Vec::new(); n];
        }
    }

    /// One new pool folio from the next node in turn that can give one
    /// (alloc_pool_huge_folio over for_each_node_mask_to_alloc).
    fn alloc_pool_huge_folio(&mut self, nid: Option<usize>, tid: TaskId) -> AllocResult {
        let nr_nodes = self.mm.nodes.len();
        let nodes: Vec<usize> = match nid {
            Some(n) => vec![n],
            None => (0..nr_nodes)
                .map(|k| (self.hstate.next_nid_to_alloc + k) % nr_nodes)
                .collect(),
        };
        for (i, node) in nodes.iter().copied().enumerate() {
            if nid.is_none() && i == 0 {
                self.hstate.next_nid_to_alloc = (node + 1) % nr_nodes;
            }
            match self.alloc_buddy_hugetlb_folio(node, tid) {
                AllocResult::Failed => {
                    if nid.is_none() {
                        self.hstate.next_nid_to_alloc = (node + 1) % nr_nodes;
                    }
                    continue;
                }
                other => return other,
            }
        }
        AllocResult::Failed
    }

    /// One order-9 folio from the buddy allocator on node `nid`, trying hard unless the
    /// node failed a try-hard allocation earlier in this resize (alloc_buddy_hugetlb_folio).
    fn alloc_buddy_hugetlb_folio(&mut self, nid: usize, tid: TaskId) -> AllocResult {
        let try_hard = !self.hstate.node_alloc_noretry[nid];
        // htlb_alloc_mask(): 2 MiB pages can migrate, so they are movable.
        let mut gfp: Gfp = GFP_HIGHUSER_MOVABLE | __GFP_THISNODE | __GFP_COMP | __GFP_NOWARN;
        gfp = gfp
            | if try_hard {
                __GFP_RETRY_MAYFAIL
            } else {
                __GFP_NORETRY
            };
        let r = self.alloc_pages_node(gfp, HPAGE_PMD_ORDER, nid, tid);
        match r {
            AllocResult::Page(_) => {
                if !try_hard {
                    // A state change: try hard again on this node.
                    self.hstate.node_alloc_noretry[nid] = false;
                }
                self.mm.count_vm_events(Event::HTLB_BUDDY_ALLOC_SUCCESS, 1);
            }
            AllocResult::Failed | AllocResult::Killed => {
                if try_hard {
                    self.hstate.node_alloc_noretry[nid] = true;
                }
                self.mm.count_vm_events(Event::HTLB_BUDDY_ALLOC_FAIL, 1);
            }
            AllocResult::Retry => {}
        }
        r
    }

    /// Puts a new folio into the pool as a free huge page (prep_new_hugetlb_folio,
    /// enqueue_hugetlb_folio).
    fn prep_new_hugetlb_folio(&mut self, p: Pfn) {
        let nid = self.mm.pfn_to_nid(p);
        let page = &mut self.mm.map[p as usize];
        page.set_kind(PageKind::Hugetlb);
        page.owner = NO_OWNER;
        let h = &mut self.hstate;
        h.nr_huge_pages += 1;
        h.free_huge_pages += 1;
        h.nr_huge_pages_node[nid] += 1;
        h.free_list[nid].push(p);
        self.mm
            .mod_node_page_state(nid, NodeStat::NR_HUGETLB, HPAGE_PMD_NR as i64);
    }

    /// Frees one free pool folio to the buddy allocator, from `nid` or the next node in
    /// turn that has one (remove_pool_hugetlb_folio, update_and_free_hugetlb_folio);
    /// false if there is none.
    fn free_pool_huge_folio(&mut self, nid: Option<usize>) -> bool {
        let nr_nodes = self.mm.nodes.len();
        let nodes: Vec<usize> = match nid {
            Some(n) => vec![n],
            None => (0..nr_nodes)
                .map(|k| (self.hstate.next_nid_to_free + k) % nr_nodes)
                .collect(),
        };
        for node in nodes {
            if let Some(p) = self.hstate.free_list[node].pop() {
                if nid.is_none() {
                    self.hstate.next_nid_to_free = (node + 1) % nr_nodes;
                }
                let h = &mut self.hstate;
                h.nr_huge_pages -= 1;
                h.free_huge_pages -= 1;
                h.nr_huge_pages_node[node] -= 1;
                self.mm
                    .mod_node_page_state(node, NodeStat::NR_HUGETLB, -(HPAGE_PMD_NR as i64));
                self.mm.map[p as usize].set_kind(PageKind::Other);
                let cpu = self.mm.cur.cpu;
                self.mm.free_pages(p, HPAGE_PMD_ORDER, cpu);
                return true;
            }
        }
        false
    }

    /// The boot-time pool of `vm.nr_hugepages` (hugetlb_hstate_alloc_pages): allocated
    /// before any task runs, from free memory; stops at the first folio that cannot be had.
    pub fn hugetlb_hstate_alloc_pages(&mut self, count: u64) {
        self.ensure_hstate();
        let nr_nodes = self.mm.nodes.len();
        let gfp = GFP_HIGHUSER_MOVABLE | __GFP_THISNODE | __GFP_COMP | __GFP_NOWARN;
        while self.hstate.nr_huge_pages < count {
            let node = self.hstate.next_nid_to_alloc;
            self.hstate.next_nid_to_alloc = (node + 1) % nr_nodes;
            let cpu = self.mm.nodes[node].cpus.first().copied().unwrap_or(0);
            let (page, _) = self.mm.alloc_pages_fast(gfp, HPAGE_PMD_ORDER, node, cpu);
            match page {
                Some(p) => {
                    self.mm.count_vm_events(Event::HTLB_BUDDY_ALLOC_SUCCESS, 1);
                    self.prep_new_hugetlb_folio(p);
                }
                None => {
                    self.mm.count_vm_events(Event::HTLB_BUDDY_ALLOC_FAIL, 1);
                    break;
                }
            }
        }
        self.mm.cur.acc = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scenario;

    fn kernel(mem: &str, nodes: u32) -> (Kernel, TaskId) {
        let sc = Scenario::from_toml(&format!(
            "[machine]\nmemory = \"{mem}\"\ncpus = 2\nnodes = {nodes}\n"
        ))
        .unwrap();
        let mut k = Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("sysctl", 0, false);
        assert!(k.copy_process(tid, 0));
        (k, tid)
    }

    #[test]
    fn a_pool_on_a_free_machine_is_taken_round_robin_and_given_back() {
        let (mut k, tid) = kernel("2GiB", 2);
        assert_eq!(k.set_max_huge_pages(100, None, tid, u64::MAX), Resize::Done);
        assert_eq!(k.hstate.nr_huge_pages, 100);
        assert_eq!(k.hstate.free_huge_pages, 100);
        assert_eq!(k.hstate.nr_huge_pages_node, vec![50, 50]);
        let stat = |k: &Kernel| -> i64 {
            k.mm.nodes
                .iter()
                .map(|n| n.vm_stat[NodeStat::NR_HUGETLB as usize])
                .sum()
        };
        assert_eq!(stat(&k), 100 * 512);
        assert_eq!(k.mm.events[Event::HTLB_BUDDY_ALLOC_SUCCESS as usize], 100);
        let free = k.mm.nr_free_pages();
        assert_eq!(k.set_max_huge_pages(40, None, tid, u64::MAX), Resize::Done);
        assert_eq!(k.hstate.nr_huge_pages, 40);
        assert_eq!(k.mm.nr_free_pages(), free + 60 * 512);
        assert_eq!(stat(&k), 40 * 512);
        k.mm.check_invariants().unwrap();
    }

    #[test]
    fn a_pool_larger_than_memory_stops_at_the_first_failure() {
        let (mut k, tid) = kernel("512MiB", 1);
        let mut steps = 0;
        while k.set_max_huge_pages(1000, None, tid, u64::MAX) != Resize::Done {
            steps += 1;
            k.mm.cur.sleep = 0;
            assert!(steps < 1000);
        }
        let got = k.hstate.nr_huge_pages;
        assert!(got > 150 && got < 256, "{got}");
        assert!(k.mm.events[Event::HTLB_BUDDY_ALLOC_FAIL as usize] >= 1);
        // The node failed trying hard: the resize is over, the next one tries hard again.
        assert!(k.hstate.node_alloc_noretry.is_empty());
    }

    #[test]
    fn a_per_node_count_changes_that_node_only() {
        let (mut k, tid) = kernel("2GiB", 2);
        assert_eq!(
            k.set_max_huge_pages(30, Some(1), tid, u64::MAX),
            Resize::Done
        );
        assert_eq!(k.hstate.nr_huge_pages_node, vec![0, 30]);
        assert_eq!(
            k.set_max_huge_pages(10, Some(0), tid, u64::MAX),
            Resize::Done
        );
        assert_eq!(k.hstate.nr_huge_pages_node, vec![10, 30]);
        assert_eq!(k.hstate.nr_huge_pages, 40);
    }
}
