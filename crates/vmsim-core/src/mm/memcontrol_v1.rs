//! The cgroup v1 soft-limit tree and its reclaim.
//!
//! Models mm/memcontrol-v1.c: the per-node soft-limit tree of groups keyed by
//! their excess over memory.soft_limit_in_bytes (mem_cgroup_update_tree,
//! __mem_cgroup_largest_soft_limit_node, __mem_cgroup_insert_exceeded) and
//! mem_cgroup_soft_limit_reclaim(), which global reclaim runs before it
//! shrinks a node (the `base` kernel of seed 002, and today's cgroup v1).
//! The tree is per node, not per zone as in 3.11.

use super::memcontrol::*;
use super::vmscan::ScanControl;
use crate::config::SoftLimitReclaim;
use crate::kernel::Kernel;
use crate::trace::TraceEvent;

impl MemcgState {
    /// Re-keys a group on a node's soft-limit tree by its current excess (mem_cgroup_update_tree).
    pub(super) fn mem_cgroup_update_tree(&mut self, id: u32, nid: usize) {
        let excess = self.groups[id as usize].soft_limit_excess();
        let pn = self.groups[id as usize].pn;
        if pn == NO_MEMCG {
            if excess == 0 {
                return;
            }
            self.ensure_pn(id);
        }
        let pn = self.groups[id as usize].pn as usize + nid;
        let rec = &mut self.pn[pn];
        if excess == 0 && !rec.on_tree {
            return;
        }
        if rec.on_tree {
            self.soft_limit_tree[nid].remove(&(rec.usage_in_excess, id));
        }
        rec.on_tree = excess > 0;
        rec.usage_in_excess = excess;
        if excess > 0 {
            self.soft_limit_tree[nid].insert((excess, id));
        }
    }

    /// Takes the largest-excess group off a node's tree (__mem_cgroup_largest_soft_limit_node).
    pub fn pop_largest_soft_limit_node(&mut self, nid: usize) -> Option<u32> {
        loop {
            let (_, id) = self.soft_limit_tree[nid].pop_last()?;
            let pn = self.groups[id as usize].pn as usize + nid;
            self.pn[pn].on_tree = false;
            if self.groups[id as usize].soft_limit_excess() > 0 {
                return Some(id);
            }
        }
    }

    /// Puts a group back on a node's tree with its current excess, if any (__mem_cgroup_insert_exceeded).
    pub fn reinsert_exceeded(&mut self, id: u32, nid: usize) {
        let excess = self.groups[id as usize].soft_limit_excess();
        let pn = self.groups[id as usize].pn as usize + nid;
        if excess > 0 && !self.pn[pn].on_tree {
            self.pn[pn].on_tree = true;
            self.pn[pn].usage_in_excess = excess;
            self.soft_limit_tree[nid].insert((excess, id));
        }
    }
}

impl Kernel {
    /// The soft-limit reclaim of the base kernel before a node is shrunk
    /// (mem_cgroup_soft_limit_reclaim): the groups with the largest excess on the
    /// node's tree, each subtree reclaimed at priority 0. Adds what it reclaimed and
    /// scanned to `sc`; returns pages reclaimed. Nothing in the rework kernels.
    pub fn mem_cgroup_soft_limit_reclaim(&mut self, nid: usize, sc: &mut ScanControl) -> u64 {
        if sc.order > 0
            || !self.mm.memcg.enabled()
            || self.mm.kcfg.soft_limit_reclaim != SoftLimitReclaim::Base
            || sc.target_mem_cgroup != ROOT_MEM_CGROUP
        {
            return 0;
        }
        self.mm.memcg.walk.soft_limit_reclaim_calls += 1;
        let mut nr_reclaimed = 0;
        let mut next: Option<u32> = None;
        let mut loops = 0u32;
        loop {
            let mz = match next.take() {
                Some(m) => m,
                None => match self.mm.memcg.pop_largest_soft_limit_node(nid) {
                    Some(m) => m,
                    None => break,
                },
            };
            let (reclaimed, scanned) = self.mem_cgroup_soft_reclaim(mz, nid, sc);
            nr_reclaimed += reclaimed;
            sc.nr_scanned += scanned;
            if reclaimed == 0 {
                next = self.mm.memcg.pop_largest_soft_limit_node(nid);
            }
            self.mm.memcg.reinsert_exceeded(mz, nid);
            loops += 1;
            if nr_reclaimed == 0
                && (next.is_none() || loops > MEM_CGROUP_MAX_SOFT_LIMIT_RECLAIM_LOOPS)
            {
                break;
            }
            if nr_reclaimed > 0 {
                break;
            }
        }
        sc.nr_reclaimed += nr_reclaimed;
        self.mm.memcg.walk.soft_limit_reclaimed += nr_reclaimed;
        nr_reclaimed
    }

    /// Reclaims a group's subtree on a node at priority 0 until its excess is gone, a
    /// quarter of it is reclaimed after two rounds, or 100 rounds pass
    /// (mem_cgroup_soft_reclaim); returns (reclaimed, scanned).
    fn mem_cgroup_soft_reclaim(&mut self, root: u32, nid: usize, psc: &ScanControl) -> (u64, u64) {
        let excess = self.mm.memcg.groups[root as usize].soft_limit_excess();
        let mut total = 0u64;
        let mut scanned = 0u64;
        let mut rounds = 0u32;
        let mut victim = NO_MEMCG;
        loop {
            victim = if victim == NO_MEMCG {
                root
            } else {
                self.mm.memcg.next_pre(victim, root, false)
            };
            self.mm.cur.acc += self.mm.cost.memcg_iter;
            self.mm.memcg.walk.groups_visited += 1;
            if victim == NO_MEMCG {
                rounds += 1;
                if rounds >= 2
                    && (total == 0 || total >= excess >> 2 || rounds > MEM_CGROUP_MAX_RECLAIM_LOOPS)
                {
                    break;
                }
                continue;
            }
            if self.mm.memcg.lruvec_pages(victim, nid, &self.mm.nodes) == 0 {
                continue;
            }
            // mem_cgroup_shrink_node_zone(): priority 0, no cut-off at nr_to_reclaim.
            let mut sc = ScanControl::new(psc.gfp_mask, 0, u64::MAX, psc.tid, psc.cpu);
            sc.priority = 0;
            sc.kswapd = psc.kswapd;
            sc.target_mem_cgroup = victim;
            sc.may_writepage = psc.may_writepage;
            self.mm.cur.acc += self.mm.cost.memcg_shrink_lruvec;
            // mem_cgroup_shrink_node()
            self.trace(TraceEvent::MmVmscanMemcgSoftlimitReclaimBegin {
                order: sc.order as i32,
                gfp_flags: sc.gfp_mask.0,
                may_writepage: sc.may_writepage as i32,
            });
            self.shrink_memcg_lruvec(victim, nid, &mut sc);
            self.trace(TraceEvent::MmVmscanMemcgSoftlimitReclaimEnd {
                nr_reclaimed: sc.nr_reclaimed,
            });
            self.mm.memcg.groups[victim as usize].stat[stat::PGSTEAL] += sc.nr_reclaimed;
            total += sc.nr_reclaimed;
            scanned += sc.nr_scanned;
            if self.mm.memcg.groups[root as usize].soft_limit_excess() == 0 {
                break;
            }
        }
        (total, scanned)
    }
}
