//! Kernel memory charged to memory cgroups (the objcg half of mm/memcontrol.c).
//!
//! Under `kernel.memcg_kmem`, kernel memory that a task of a group allocates is
//! charged to that group besides its user pages: objects of accounted slab
//! caches (SLAB_ACCOUNT caches such as dentry and the inode caches, and
//! buffer_heads, which `folio_alloc_buffers` asks for with __GFP_ACCOUNT) by
//! their size plus the objcg pointer (`obj_full_size`), and user page tables
//! (GFP_PGTABLE_USER) by the page.
//!
//! An object is charged from the CPU's byte stock (`consume_obj_stock`); when
//! that stock caches another group or holds too few bytes, a whole page is
//! charged by `try_charge_memcg` (`obj_cgroup_charge_pages`, through the page
//! stock and its batch of MEMCG_CHARGE_BATCH) and the page's unused bytes go to
//! the byte stock (`refill_obj_stock` without uncharging). A freed object's
//! bytes go back to the byte stock; once it holds more than a page, the whole
//! pages are uncharged into the CPU's *page* stock (`obj_cgroup_uncharge_pages`
//! → `refill_stock`), not to the counter: the next user page the group charges
//! on that CPU is taken from them. Reclaim that frees a large folio's 256
//! buffer_heads (28,672 bytes) so hands six pages to the charge that called it.
//!
//! Simplifications: a group's objcg is the group (groups are never removed);
//! the per-CPU batching of the slab vmstat bytes (`__account_obj_stock`) is not
//! modelled (the group's slab bytes move at once); a charge that may not fail
//! (__GFP_NOFAIL: buffer_heads) is forced over the limit after the retries
//! without calling the memcg OOM killer, and when its reclaim would sleep; the
//! kernel stack is not charged.

use super::gfp::{Gfp, __GFP_NOFAIL};
use super::memcontrol::{MemcgState, NO_MEMCG, ROOT_MEM_CGROUP};
use super::page::{PAGE_SHIFT, PAGE_SIZE};
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};

/// Bytes of the objcg pointer kept beside each accounted object (sizeof(struct obj_cgroup *)).
pub const OBJCG_POINTER_BYTES: u64 = 8;

impl MemcgState {
    /// Puts `nr_bytes` charged to `objcg` on `cpu`'s byte stock (refill_obj_stock): a
    /// stock of another group is drained first and takes the group's leftover bytes;
    /// with `allow_uncharge` (always after such a switch) whole pages over a page are
    /// handed back (obj_cgroup_uncharge_pages), into the page stock if `page_stock`.
    pub fn refill_obj_stock(
        &mut self,
        cpu: usize,
        objcg: u32,
        nr_bytes: u64,
        mut allow_uncharge: bool,
        page_stock: bool,
    ) {
        if self.obj_stock(cpu).objcg != objcg {
            self.drain_obj_stock(cpu);
            let left = std::mem::take(&mut self.ext_mut(objcg).nr_charged_bytes);
            *self.obj_stock(cpu) = super::memcg_stock::ObjStock {
                objcg,
                nr_bytes: left,
            };
            allow_uncharge = true;
        }
        let s = self.obj_stock(cpu);
        s.nr_bytes += nr_bytes;
        let mut nr_pages = 0;
        if allow_uncharge && s.nr_bytes > PAGE_SIZE {
            nr_pages = s.nr_bytes >> PAGE_SHIFT;
            s.nr_bytes &= PAGE_SIZE - 1;
        }
        if nr_pages > 0 {
            self.obj_cgroup_uncharge_pages(cpu, objcg, nr_pages, page_stock);
        }
    }

    /// Uncharges `nr_pages` of kernel memory of `objcg` (obj_cgroup_uncharge_pages): out
    /// of the kmem counters, and into `cpu`'s page stock (refill_stock) if `page_stock`,
    /// else off the counters.
    pub fn obj_cgroup_uncharge_pages(
        &mut self,
        cpu: usize,
        objcg: u32,
        nr_pages: u64,
        page_stock: bool,
    ) {
        self.memcg_account_kmem(objcg, -(nr_pages as i64));
        if objcg == ROOT_MEM_CGROUP {
            return;
        }
        if page_stock {
            self.refill_stock(cpu, objcg, nr_pages);
        } else {
            self.uncharge_memory_memsw(objcg, nr_pages);
        }
    }
}

impl Kernel {
    /// The group `tid`'s kernel memory is charged to (current_obj_cgroup): its own, none
    /// for the root group or without `kernel.memcg_kmem`.
    pub fn current_obj_cgroup(&self, tid: TaskId) -> u32 {
        if !self.mm.memcg.enabled() || !self.mm.kcfg.rules().memcg_kmem {
            return NO_MEMCG;
        }
        match self.task_memcg(tid) {
            ROOT_MEM_CGROUP => NO_MEMCG,
            id => id,
        }
    }

    /// Whether uncharged kernel pages go to the per-CPU page stock (it exists only with
    /// the charge batch).
    fn kmem_page_stock(&self) -> bool {
        self.mm.kcfg.rules().memcg_charge_batch
    }

    /// Charges `nr_pages` of kernel memory to `objcg` (obj_cgroup_charge_pages →
    /// try_charge_memcg, then the kmem counters). A charge that may fail is the user
    /// page's charge loop (reclaim, retries, the memcg OOM killer); one of __GFP_NOFAIL
    /// reclaims and retries as a folio's and is then forced over the limit.
    pub fn obj_cgroup_charge_pages(
        &mut self,
        objcg: u32,
        gfp: Gfp,
        nr_pages: u64,
        tid: TaskId,
    ) -> AllocResult {
        let nofail = gfp.has(__GFP_NOFAIL);
        let r = if nr_pages == 1 && !nofail {
            self.mem_cgroup_try_charge(objcg, tid)
        } else {
            self.try_charge_memcg_folio(objcg, nr_pages, gfp, tid)
        };
        match r {
            AllocResult::Page(_) => {}
            _ if nofail => self.mm.memcg.force_charge_memory_memsw(objcg, nr_pages),
            other => return other,
        }
        self.mm.memcg.memcg_account_kmem(objcg, nr_pages as i64);
        AllocResult::Page(super::page::NIL)
    }

    /// Charges `size` bytes of an object to `objcg` (obj_cgroup_charge_account): from the
    /// CPU's byte stock, else whole pages whose unused bytes are stocked.
    pub fn obj_cgroup_charge_account(
        &mut self,
        objcg: u32,
        gfp: Gfp,
        size: u64,
        tid: TaskId,
    ) -> AllocResult {
        let cpu = self.tasks[tid as usize].cpu;
        if self.mm.memcg.consume_obj_stock(cpu, objcg, size) {
            return AllocResult::Page(super::page::NIL);
        }
        let nr_pages = size.div_ceil(PAGE_SIZE);
        let nr_bytes = size & (PAGE_SIZE - 1);
        let r = self.obj_cgroup_charge_pages(objcg, gfp, nr_pages, tid);
        if matches!(r, AllocResult::Page(_)) && nr_bytes > 0 {
            let page_stock = self.kmem_page_stock();
            self.mm
                .memcg
                .refill_obj_stock(cpu, objcg, PAGE_SIZE - nr_bytes, false, page_stock);
        }
        r
    }

    /// Charges a new object of `cache` to the allocating task's group
    /// (memcg_slab_post_alloc_hook); Ok(the group charged, NO_MEMCG for none).
    pub fn memcg_slab_post_alloc_hook(
        &mut self,
        cache: usize,
        tid: TaskId,
        gfp: Gfp,
    ) -> Result<u32, AllocResult> {
        if !self.slab.caches[cache].account {
            return Ok(NO_MEMCG);
        }
        let objcg = self.current_obj_cgroup(tid);
        if objcg == NO_MEMCG {
            return Ok(NO_MEMCG);
        }
        let size = self.obj_full_size(cache);
        match self.obj_cgroup_charge_account(objcg, gfp, size, tid) {
            AllocResult::Page(_) => {}
            r => return Err(r),
        }
        let i = (!self.slab.caches[cache].reclaimable) as usize;
        self.mm.memcg.ext_mut(objcg).slab_b[i] += size;
        Ok(objcg)
    }

    /// Returns a freed object's charge to the CPU's byte stock (memcg_slab_free_hook).
    pub fn memcg_slab_free_hook(&mut self, cache: usize, objcg: u32, cpu: usize) {
        if objcg == NO_MEMCG {
            return;
        }
        let size = self.obj_full_size(cache);
        let i = (!self.slab.caches[cache].reclaimable) as usize;
        let b = &mut self.mm.memcg.ext_mut(objcg).slab_b[i];
        *b = b.saturating_sub(size);
        let page_stock = self.kmem_page_stock();
        self.mm
            .memcg
            .refill_obj_stock(cpu, objcg, size, true, page_stock);
    }

    /// Bytes an accounted object of `cache` is charged (obj_full_size: the object and
    /// its objcg pointer).
    pub fn obj_full_size(&self, cache: usize) -> u64 {
        self.slab.caches[cache].object_size as u64 + OBJCG_POINTER_BYTES
    }

    /// Charges a kernel page (a user page table) to `tid`'s group (__memcg_kmem_charge_page);
    /// Ok(the group charged, NO_MEMCG for none).
    pub fn memcg_kmem_charge_page(&mut self, tid: TaskId, gfp: Gfp) -> Result<u32, AllocResult> {
        let objcg = self.current_obj_cgroup(tid);
        if objcg == NO_MEMCG {
            return Ok(NO_MEMCG);
        }
        match self.obj_cgroup_charge_pages(objcg, gfp, 1, tid) {
            AllocResult::Page(_) => Ok(objcg),
            r => Err(r),
        }
    }

    /// Uncharges a kernel page of `objcg` (__memcg_kmem_uncharge_page).
    pub fn memcg_kmem_uncharge_page(&mut self, objcg: u32, cpu: usize) {
        if objcg == NO_MEMCG {
            return;
        }
        let page_stock = self.kmem_page_stock();
        self.mm
            .memcg
            .obj_cgroup_uncharge_pages(cpu, objcg, 1, page_stock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root plus group 1 limited to `max` pages, with 6.18's seven-group stock.
    fn state(max: u64) -> MemcgState {
        let mut m = MemcgState::new(1);
        m.stock = super::super::memcg_stock::MemcgStock::new(7, 1);
        let g = m.mem_cgroup_alloc(0);
        m.set_max(g, max);
        m
    }

    #[test]
    fn freed_objects_return_whole_pages_to_the_page_stock_not_the_counter() {
        let mut m = state(1000);
        // Eight pages of objects charged, their bytes all in use.
        m.try_charge_memsw_memory(1, 8).unwrap();
        m.memcg_account_kmem(1, 8);
        // 256 buffer_heads of 112 bytes freed on CPU 0: 28,672 bytes.
        for _ in 0..256 {
            m.refill_obj_stock(0, 1, 112, true, true);
        }
        // Exactly seven pages of bytes: six left the kmem counters for the page stock
        // (each when the byte stock went over a page), the seventh stays in the byte
        // stock; usage kept them all.
        assert_eq!(m.ext(1).kmem.usage, 2);
        assert_eq!(m.groups[1].memory.usage, 8);
        assert_eq!(m.stock.stocked(2)[1], 6);
        assert_eq!(m.obj_stock(0).nr_bytes, PAGE_SIZE);
        // A user page charged on CPU 0 now takes one of them.
        assert!(m.consume_stock(0, 1, 1));
        assert_eq!(m.groups[1].memory.usage, 8);
    }

    #[test]
    fn without_the_page_stock_uncharged_pages_leave_the_counter() {
        let mut m = state(1000);
        m.try_charge_memsw_memory(1, 8).unwrap();
        m.memcg_account_kmem(1, 8);
        for _ in 0..256 {
            m.refill_obj_stock(0, 1, 112, true, false);
        }
        assert_eq!(m.groups[1].memory.usage, 2);
        assert_eq!(m.stock.stocked(2)[1], 0);
    }

    #[test]
    fn a_charge_refill_keeps_bytes_over_a_page_until_a_free() {
        let mut m = state(1000);
        m.try_charge_memsw_memory(1, 1).unwrap();
        m.memcg_account_kmem(1, 1);
        m.refill_obj_stock(0, 1, PAGE_SIZE - 112, false, true);
        // The stock switched groups: even a charge's refill may uncharge then; it holds
        // less than a page, so nothing moved.
        assert_eq!(m.obj_stock(0).nr_bytes, PAGE_SIZE - 112);
        m.refill_obj_stock(0, 1, 200, false, true);
        assert_eq!(
            m.obj_stock(0).nr_bytes,
            PAGE_SIZE + 88,
            "no uncharge while charging"
        );
        m.refill_obj_stock(0, 1, 112, true, true);
        assert_eq!(m.obj_stock(0).nr_bytes, 200);
        assert_eq!(m.ext(1).kmem.usage, 0);
    }
}
