//! The per-CPU memcg charge stock (`struct memcg_stock_pcp` in mm/memcontrol.c).
//!
//! With `kernel.memcg_charge_batch`, `try_charge_memcg()` charges the page
//! counters MEMCG_CHARGE_BATCH pages at a time and keeps what the charge did
//! not need on the charging CPU's stock, from which the next charges of the
//! same group are taken without touching the counters (`consume_stock()`).
//! Stocked pages are charged: they count in the group's usage until a charge
//! consumes them or the stock is drained (`drain_stock()`), by a refill of a
//! group that finds no slot (`refill_stock()`), by an overfull slot, or by
//! limit reclaim that left no margin (`drain_all_stock()`).
//!
//! How many groups a CPU's stock holds is `kernel.memcg_stock_groups`: 6.1
//! caches one (`stock->cached`; a refill of another group drains it first),
//! 6.18 up to NR_MEMCG_STOCK = 7 (`stock->cached[]`; a full stock drains a
//! slot chosen at random, here from the scenario's seeded stream).
//!
//! Beside it, each CPU has a byte stock of kernel-memory charges
//! (`struct obj_stock_pcp`): bytes of pages charged to one group's objcg and not
//! yet used by objects, from which kmem objects are charged
//! (`consume_obj_stock()`); mm/memcg_kmem.rs charges and refills it.
//!
//! Simplifications: drain_all_stock() drains every CPU at once (the kernel
//! drains the current CPU and queues work on the others); a group's objcg is
//! the group itself (groups are never removed, so no objcg is reparented).

use super::memcontrol::{MemcgState, MEMCG_CHARGE_BATCH, NO_MEMCG};
use crate::engine::rng::{streams, Stream};

/// One slot of a CPU's stock: a group and the pages charged to it ahead of use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockSlot {
    /// The cached group (`stock->cached[i]`), NO_MEMCG when empty.
    pub memcg: u32,
    /// Pages charged and not yet used (`stock->nr_pages[i]`).
    pub nr_pages: u64,
}

const EMPTY: StockSlot = StockSlot {
    memcg: NO_MEMCG,
    nr_pages: 0,
};

/// One CPU's kmem byte stock (struct obj_stock_pcp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjStock {
    /// The cached group's objcg (`stock->cached_objcg`), NO_MEMCG when empty.
    pub objcg: u32,
    /// Bytes charged and not yet used by objects (`stock->nr_bytes`) [bytes].
    pub nr_bytes: u64,
}

/// An empty byte stock.
pub const EMPTY_OBJ_STOCK: ObjStock = ObjStock {
    objcg: NO_MEMCG,
    nr_bytes: 0,
};

/// Every CPU's charge stock.
#[derive(Debug, Clone)]
pub struct MemcgStock {
    /// Slots per CPU (`kernel.memcg_stock_groups`).
    pub nr_slots: usize,
    /// The slots, `nr_slots` per CPU, CPU by CPU (grown on first use of a CPU).
    pub slots: Vec<StockSlot>,
    /// The stream that picks the slot a full stock gives up (get_random_u32_below).
    rng: Stream,
    /// Every CPU's kmem byte stock (obj_stock), grown on first use of a CPU.
    pub obj: Vec<ObjStock>,
}

impl MemcgStock {
    /// Empty stocks of `nr_slots` groups per CPU, evicting with the scenario seed's stream.
    pub fn new(nr_slots: u64, seed: u64) -> Self {
        MemcgStock {
            nr_slots: nr_slots.max(1) as usize,
            slots: Vec::new(),
            rng: Stream::new(seed, streams::MEMCG_STOCK),
            obj: Vec::new(),
        }
    }

    /// The slots of one CPU (this_cpu_ptr(&memcg_stock)).
    fn cpu_slots(&mut self, cpu: usize) -> &mut [StockSlot] {
        let n = self.nr_slots;
        if self.slots.len() < (cpu + 1) * n {
            self.slots.resize((cpu + 1) * n, EMPTY);
        }
        &mut self.slots[cpu * n..(cpu + 1) * n]
    }

    /// Pages stocked for each group (for the counters' invariant check).
    pub fn stocked(&self, nr_groups: usize) -> Vec<u64> {
        let mut v = vec![0u64; nr_groups];
        for s in self.slots.iter().filter(|s| s.memcg != NO_MEMCG) {
            v[s.memcg as usize] += s.nr_pages;
        }
        v
    }
}

impl Default for MemcgStock {
    fn default() -> Self {
        Self::new(1, 1)
    }
}

impl MemcgState {
    /// Takes `nr_pages` already charged to `id` from `cpu`'s stock (consume_stock); false
    /// when the stock does not hold `id` or holds fewer pages.
    pub fn consume_stock(&mut self, cpu: usize, id: u32, nr_pages: u64) -> bool {
        if nr_pages > MEMCG_CHARGE_BATCH {
            return false;
        }
        match self.stock.cpu_slots(cpu).iter_mut().find(|s| s.memcg == id) {
            Some(s) if s.nr_pages >= nr_pages => {
                s.nr_pages -= nr_pages;
                true
            }
            _ => false,
        }
    }

    /// Uncharges a slot's pages and empties it (drain_stock).
    fn drain_stock(&mut self, cpu: usize, i: usize) {
        let s = std::mem::replace(&mut self.stock.cpu_slots(cpu)[i], EMPTY);
        if s.memcg != NO_MEMCG && s.nr_pages > 0 {
            self.uncharge_memory_memsw(s.memcg, s.nr_pages);
        }
    }

    /// Keeps `nr_pages` charged to `id` on `cpu`'s stock (refill_stock): its slot, else an
    /// empty one, else a slot drained for it (6.1's only one; 6.18's chosen at random);
    /// a slot over MEMCG_CHARGE_BATCH is drained.
    pub fn refill_stock(&mut self, cpu: usize, id: u32, nr_pages: u64) {
        if nr_pages > MEMCG_CHARGE_BATCH {
            self.uncharge_memory_memsw(id, nr_pages);
            return;
        }
        let slots = self.stock.cpu_slots(cpu);
        if let Some(i) = slots.iter().position(|s| s.memcg == id) {
            slots[i].nr_pages += nr_pages;
            if slots[i].nr_pages > MEMCG_CHARGE_BATCH {
                self.drain_stock(cpu, i);
            }
            return;
        }
        let i = match slots.iter().position(|s| s.memcg == NO_MEMCG) {
            Some(i) => i,
            None => {
                let n = self.stock.nr_slots as u64;
                let i = if n == 1 {
                    0
                } else {
                    self.stock.rng.below(n) as usize
                };
                self.drain_stock(cpu, i);
                i
            }
        };
        self.stock.cpu_slots(cpu)[i] = StockSlot {
            memcg: id,
            nr_pages,
        };
    }

    /// Whether `id` is `root` or below it (mem_cgroup_is_descendant).
    pub fn is_descendant(&self, mut id: u32, root: u32) -> bool {
        while id != NO_MEMCG {
            if id == root {
                return true;
            }
            id = self.groups[id as usize].parent;
        }
        false
    }

    /// Drains, on every CPU, the stocked charges of `root`'s subtree, page stocks and
    /// kmem byte stocks (drain_all_stock: is_memcg_drain_needed, obj_stock_flush_required).
    pub fn drain_all_stock(&mut self, root: u32) {
        for j in 0..self.stock.slots.len() {
            let s = self.stock.slots[j];
            if s.memcg != NO_MEMCG && s.nr_pages > 0 && self.is_descendant(s.memcg, root) {
                let n = self.stock.nr_slots;
                self.drain_stock(j / n, j % n);
            }
        }
        for cpu in 0..self.stock.obj.len() {
            let o = self.stock.obj[cpu].objcg;
            if o != NO_MEMCG && self.is_descendant(o, root) {
                self.drain_obj_stock(cpu);
            }
        }
    }

    /// One CPU's kmem byte stock (this_cpu_ptr(&obj_stock)).
    pub fn obj_stock(&mut self, cpu: usize) -> &mut ObjStock {
        if self.stock.obj.len() <= cpu {
            self.stock.obj.resize(cpu + 1, EMPTY_OBJ_STOCK);
        }
        &mut self.stock.obj[cpu]
    }

    /// Takes `nr_bytes` already charged to `objcg` from `cpu`'s byte stock
    /// (consume_obj_stock); false when it caches another group or holds fewer bytes.
    pub fn consume_obj_stock(&mut self, cpu: usize, objcg: u32, nr_bytes: u64) -> bool {
        let s = self.obj_stock(cpu);
        if s.objcg == objcg && s.nr_bytes >= nr_bytes {
            s.nr_bytes -= nr_bytes;
            return true;
        }
        false
    }

    /// Empties `cpu`'s byte stock (drain_obj_stock): its whole pages are uncharged from
    /// the group's counters at once (memcg_uncharge, not into the page stock), the bytes
    /// left over go to the group's `nr_charged_bytes`.
    pub fn drain_obj_stock(&mut self, cpu: usize) {
        let s = std::mem::replace(self.obj_stock(cpu), EMPTY_OBJ_STOCK);
        if s.objcg == NO_MEMCG || s.nr_bytes == 0 {
            return;
        }
        let nr_pages = s.nr_bytes >> crate::mm::page::PAGE_SHIFT;
        if nr_pages > 0 {
            self.memcg_account_kmem(s.objcg, -(nr_pages as i64));
            self.uncharge_memory_memsw(s.objcg, nr_pages);
        }
        self.ext_mut(s.objcg).nr_charged_bytes += s.nr_bytes & (crate::mm::page::PAGE_SIZE - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root plus groups 1 and 2 (children of the root) limited to `max` pages each.
    fn state(slots: u64, max: u64) -> MemcgState {
        let mut m = MemcgState::new(1);
        m.stock = MemcgStock::new(slots, 1);
        for _ in 0..2 {
            let g = m.mem_cgroup_alloc(0);
            m.set_max(g, max);
        }
        m
    }

    #[test]
    fn a_refill_is_consumed_by_the_same_group_on_the_same_cpu_only() {
        let mut m = state(1, 1000);
        m.try_charge_memsw_memory(1, 64).unwrap();
        m.refill_stock(0, 1, 63);
        assert!(!m.consume_stock(1, 1, 1), "another CPU's stock");
        assert!(!m.consume_stock(0, 2, 1), "another group");
        assert!(m.consume_stock(0, 1, 63));
        assert!(!m.consume_stock(0, 1, 1), "used up");
        assert_eq!(m.groups[1].memory.usage, 64);
    }

    #[test]
    fn one_group_stock_of_6_1_drains_when_another_group_refills() {
        let mut m = state(1, 1000);
        m.try_charge_memsw_memory(1, 64).unwrap();
        m.refill_stock(0, 1, 63);
        m.try_charge_memsw_memory(2, 64).unwrap();
        m.refill_stock(0, 2, 63);
        // Group 1's 63 stocked pages went back to its counter.
        assert_eq!(m.groups[1].memory.usage, 1);
        assert!(!m.consume_stock(0, 1, 1));
        assert!(m.consume_stock(0, 2, 1));
    }

    #[test]
    fn seven_group_stock_of_6_18_keeps_both_groups() {
        let mut m = state(7, 1000);
        m.try_charge_memsw_memory(1, 64).unwrap();
        m.refill_stock(0, 1, 63);
        m.try_charge_memsw_memory(2, 64).unwrap();
        m.refill_stock(0, 2, 63);
        assert_eq!(m.groups[1].memory.usage, 64);
        assert!(m.consume_stock(0, 1, 1));
        assert!(m.consume_stock(0, 2, 1));
    }

    #[test]
    fn an_overfull_slot_and_drain_all_stock_uncharge() {
        let mut m = state(7, 1000);
        m.try_charge_memsw_memory(1, 128).unwrap();
        m.refill_stock(0, 1, 60);
        m.refill_stock(0, 1, 10); // 70 > MEMCG_CHARGE_BATCH: the slot drains
        assert_eq!(m.groups[1].memory.usage, 58);
        m.try_charge_memsw_memory(2, 64).unwrap();
        m.refill_stock(3, 2, 40);
        m.drain_all_stock(2);
        assert_eq!(m.groups[2].memory.usage, 24);
        assert_eq!(m.stock.stocked(3), vec![0, 0, 0]);
    }

    #[test]
    fn a_byte_stock_serves_its_group_and_drains_whole_pages_to_the_counter() {
        let mut m = state(7, 1000);
        m.try_charge_memsw_memory(1, 2).unwrap();
        m.memcg_account_kmem(1, 2);
        *m.obj_stock(0) = ObjStock {
            objcg: 1,
            nr_bytes: 4096 + 100,
        };
        assert!(!m.consume_obj_stock(0, 2, 8), "another group");
        assert!(!m.consume_obj_stock(1, 1, 8), "another CPU");
        assert!(m.consume_obj_stock(0, 1, 96));
        assert!(!m.consume_obj_stock(0, 1, 4096 + 8), "not enough bytes");
        m.drain_obj_stock(0);
        // One whole page goes back to the counters, the 4 bytes left to nr_charged_bytes.
        assert_eq!(m.groups[1].memory.usage, 1);
        assert_eq!(m.ext(1).kmem.usage, 1);
        assert_eq!(m.ext(1).nr_charged_bytes, 4);
        assert_eq!(m.obj_stock(0).objcg, NO_MEMCG);
    }
}
