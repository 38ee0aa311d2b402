//! Free memory whose frames are written only when first used.
//!
//! The kernel does not initialise every `struct page` before it runs: with
//! CONFIG_DEFERRED_STRUCT_PAGE_INIT, memmap_init() covers part of each node and
//! deferred_init_memmap() (or deferred_grow_zone(), when an allocation needs more
//! before that thread is done) initialises the rest and frees it to the buddy
//! lists in MAX_PAGE_ORDER blocks. vmsim takes the idea further, for its own speed
//! and memory: a MAX_PAGE_ORDER block that boot frees whole is counted at once in
//! every free-page figure and holds its place in its free list, but its 1,024
//! frames stay untouched (the zeroed allocation the host has not even mapped)
//! until something uses the block: the allocator taking it off its list, or a
//! compaction scanner reaching it. Then the frames get exactly what boot would
//! have written, so a run is the same whether a block was written at boot or later.
//!
//! Reserved memory is written the same way: a MAX_PAGE_ORDER block that memblock
//! reserves whole (above all the simulated kernel's own memmap, 1/64 of every node)
//! stays untouched until a scanner reaches it, and reads as reserved until then.
//!
//! The free list of the boot migratetype at MAX_PAGE_ORDER is, in order: the
//! blocks linked through the frame table up to `after` (the front), the untouched
//! blocks in `blocks` (in their boot order), and the rest of the linked list (the
//! back). A block written from the front of `blocks` joins the front; one written
//! from its back joins the back; both are linked right after `after`.

use super::mmzone::{MigrateType, MAX_PAGE_ORDER};
use super::page::{pfn32, pg, ListHead, Page, Pfn, NIL, NO_OWNER};
use super::Mm;
use std::collections::VecDeque;

/// Pages of a MAX_PAGE_ORDER block.
const BLOCK: u64 = 1 << MAX_PAGE_ORDER;

/// A frame of a free range before it joins a buddy block (what boot writes in every
/// frame it frees).
pub const FREE_FRAME: Page = Page {
    flags: 0,
    ok: 0,
    mt: 0,
    next: NIL as u32,
    prev: NIL as u32,
    owner: NO_OWNER,
};

/// A frame never written: all bytes zero.
const ZERO_FRAME: Page = Page {
    flags: 0,
    ok: 0,
    mt: 0,
    next: 0,
    prev: 0,
    owner: 0,
};

/// The untouched blocks of every zone: free ones, and reserved ones.
#[derive(Debug, Clone, Default)]
pub struct Deferred {
    /// One bit per MAX_PAGE_ORDER block of the machine: free since boot, frames untouched.
    bits: Vec<u64>,
    /// Per zone: the untouched blocks in free-list order, as block numbers (pfn / BLOCK,
    /// 32 bits: 4 bytes a block at any machine size).
    blocks: Vec<VecDeque<u32>>,
    /// Per zone: the linked block the untouched ones follow in the list (NIL: the list's head).
    after: Vec<Pfn>,
    /// The migratetype of their pageblocks and list (the boot migratetype).
    mt: u8,
    /// Blocks written since boot (what the run has added to the host's frame table).
    written: u64,
    /// One bit per MAX_PAGE_ORDER block of the machine: reserved whole at boot, frames
    /// untouched (they read as `Page::reserved()`).
    reserved: Vec<u64>,
}

impl Deferred {
    /// No block deferred yet, for `nr_frames` frames in `nr_zones` zones of boot type `mt`.
    pub fn new(nr_frames: u64, nr_zones: usize, mt: MigrateType) -> Self {
        Deferred {
            bits: vec![0; (nr_frames / BLOCK).div_ceil(64) as usize],
            blocks: vec![VecDeque::new(); nr_zones],
            after: vec![NIL; nr_zones],
            mt: mt as u8,
            written: 0,
            reserved: vec![0; (nr_frames / BLOCK).div_ceil(64) as usize],
        }
    }

    /// Whether the frame `pfn` lies in an untouched block.
    #[inline(always)]
    pub fn is_deferred(&self, pfn: Pfn) -> bool {
        test_block(&self.bits, pfn)
    }

    /// Whether the frame `pfn` lies in an untouched reserved block.
    #[inline(always)]
    pub fn is_reserved_untouched(&self, pfn: Pfn) -> bool {
        test_block(&self.reserved, pfn)
    }

    /// Blocks untouched since boot, free or reserved.
    pub fn untouched_blocks(&self) -> u64 {
        let free: usize = self.blocks.iter().map(|q| q.len()).sum();
        let reserved: u32 = self.reserved.iter().map(|w| w.count_ones()).sum();
        free as u64 + reserved as u64
    }

    /// Whether zone `zid`'s free list of `order` and `mt` holds untouched blocks.
    #[inline(always)]
    pub fn holds(&self, zid: usize, order: usize, mt: MigrateType) -> bool {
        order == MAX_PAGE_ORDER && mt as u8 == self.mt && !self.blocks[zid].is_empty()
    }

    /// Untouched blocks of a zone, in list order.
    pub fn blocks(&self, zid: usize) -> impl Iterator<Item = Pfn> + '_ {
        self.blocks[zid].iter().map(|&b| block_pfn(b))
    }

    /// Marks the block at `pfn` untouched.
    fn set(&mut self, pfn: Pfn, on: bool) {
        set_block(&mut self.bits, pfn, on);
    }
}

/// The number of the MAX_PAGE_ORDER block holding `pfn` (below 2^22 on 16 TiB).
#[inline(always)]
fn block_of(pfn: Pfn) -> u32 {
    (pfn / BLOCK) as u32
}

/// The first frame of block `b`.
#[inline(always)]
fn block_pfn(b: u32) -> Pfn {
    b as Pfn * BLOCK
}

/// Whether the block holding `pfn` has its bit set in a one-bit-per-block map.
#[inline(always)]
fn test_block(bits: &[u64], pfn: Pfn) -> bool {
    let b = (pfn / BLOCK) as usize;
    bits.get(b / 64).is_some_and(|w| w & (1 << (b % 64)) != 0)
}

/// Sets or clears the bit of the block holding `pfn` in a one-bit-per-block map.
fn set_block(bits: &mut [u64], pfn: Pfn, on: bool) {
    let b = (pfn / BLOCK) as usize;
    if on {
        bits[b / 64] |= 1 << (b % 64);
    } else {
        bits[b / 64] &= !(1 << (b % 64));
    }
}

impl Mm {
    /// memblock reserves frames [start, end) (PageReserved, never freed to the buddy
    /// allocator): whole MAX_PAGE_ORDER blocks are only marked, to be written when first
    /// read; the frames of partial blocks are written now.
    pub(super) fn reserve_range(&mut self, start: u64, end: u64) {
        let mut p = start.min(end);
        while p < end {
            if self.deferred.is_reserved_untouched(p as Pfn) {
                p += 1;
                continue;
            }
            let whole = p.is_multiple_of(BLOCK) && p + BLOCK <= end;
            if whole
                && self.map[p as usize..(p + BLOCK) as usize]
                    .iter()
                    .all(|f| *f == ZERO_FRAME)
            {
                set_block(&mut self.deferred.reserved, p as Pfn, true);
                p += BLOCK;
                continue;
            }
            self.map[p as usize] = Page::reserved();
            p += 1;
        }
    }

    /// Writes the frames of the untouched reserved block at `pfn` (a scanner reads them).
    fn init_reserved_block(&mut self, pfn: Pfn) {
        set_block(&mut self.deferred.reserved, pfn, false);
        self.deferred.written += 1;
        let start = (pfn / BLOCK * BLOCK) as usize;
        self.map[start..start + BLOCK as usize].fill(Page::reserved());
    }

    /// Boot frees the MAX_PAGE_ORDER block at `pfn` of zone `zid` to the end of its
    /// list (`to_tail`, else its head) without writing its frames: everything
    /// __free_one_page() and __add_to_free_list() count, counted now.
    pub(super) fn defer_free_block(&mut self, zid: usize, pfn: Pfn, to_tail: bool) {
        let mt = MigrateType::from_u8(self.deferred.mt);
        debug_assert_eq!(self.get_pageblock_migratetype(pfn), mt);
        let d = &mut self.deferred;
        debug_assert!(d.blocks[zid].is_empty() || d.after[zid] == NIL);
        let b = block_of(pfn);
        if to_tail {
            d.blocks[zid].push_back(b);
        } else {
            d.blocks[zid].push_front(b);
        }
        d.set(pfn, true);
        self.account_freepages(zid, BLOCK as i64, mt);
        self.count_free_block(zid, MAX_PAGE_ORDER, mt);
    }

    /// The first block of zone `zid`'s free list of `order` and `mt`, its frames written
    /// if it was untouched (list_first_entry on the free list); NIL if the list is empty.
    #[inline(always)]
    pub fn free_list_first(&mut self, zid: usize, order: usize, mt: MigrateType) -> Pfn {
        if self.deferred.holds(zid, order, mt) && self.deferred.after[zid] == NIL {
            self.init_deferred_front(zid, 1);
        }
        self.zones[zid].free_area[order].free_list[mt as usize].head
    }

    /// Whether zone `zid`'s free list of `order` and `mt` is empty (list_empty).
    #[inline(always)]
    pub fn free_list_empty(&self, zid: usize, order: usize, mt: MigrateType) -> bool {
        self.zones[zid].free_area[order].free_list[mt as usize].is_empty()
            && !self.deferred.holds(zid, order, mt)
    }

    /// Notes that a block joins the head of zone `zid`'s list of `order` and `mt`, before
    /// the untouched blocks if it becomes the front's only block.
    #[inline(always)]
    pub(super) fn deferred_note_push_front(
        &mut self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        pfn: Pfn,
    ) {
        if self.deferred.holds(zid, order, mt) && self.deferred.after[zid] == NIL {
            self.deferred.after[zid] = pfn;
        }
    }

    /// Notes that a linked block leaves zone `zid`'s list of `order` and `mt` (before it
    /// is unlinked): the untouched blocks then follow the one before it.
    #[inline(always)]
    pub(super) fn deferred_note_remove(
        &mut self,
        zid: usize,
        order: usize,
        mt: MigrateType,
        pfn: Pfn,
    ) {
        if self.deferred.holds(zid, order, mt) && self.deferred.after[zid] == pfn {
            self.deferred.after[zid] = self.map[pfn as usize].prev();
        }
    }

    /// Writes the frames of the first `n` untouched blocks of zone `zid` and links them
    /// in order at the end of the list's front (deferred_grow_zone, one block at a time).
    fn init_deferred_front(&mut self, zid: usize, n: usize) {
        for _ in 0..n {
            let Some(pfn) = self.deferred.blocks[zid].pop_front().map(block_pfn) else {
                return;
            };
            self.init_deferred_block(zid, pfn);
            self.deferred.after[zid] = pfn;
        }
        self.deferred_forget_empty(zid);
    }

    /// Writes the frames of the last `n` untouched blocks of zone `zid` and links them in
    /// order at the start of the list's back.
    fn init_deferred_back(&mut self, zid: usize, n: usize) {
        for _ in 0..n {
            let Some(pfn) = self.deferred.blocks[zid].pop_back().map(block_pfn) else {
                return;
            };
            self.init_deferred_block(zid, pfn);
        }
        self.deferred_forget_empty(zid);
    }

    /// With no untouched block left, the list is its linked part alone.
    fn deferred_forget_empty(&mut self, zid: usize) {
        if self.deferred.blocks[zid].is_empty() {
            self.deferred.after[zid] = NIL;
        }
    }

    /// Writes an untouched block's frames as boot would have (free frames, the head a
    /// buddy of MAX_PAGE_ORDER) and links it right after `after` (__init_single_page and
    /// __add_to_free_list; the counts already hold it).
    fn init_deferred_block(&mut self, zid: usize, pfn: Pfn) {
        self.deferred.set(pfn, false);
        self.deferred.written += 1;
        let start = pfn as usize;
        self.map[start..start + BLOCK as usize].fill(FREE_FRAME);
        let mt = self.deferred.mt;
        {
            let p = &mut self.map[start];
            p.flags = pg::BUDDY;
            p.ok = MAX_PAGE_ORDER as u8;
            p.mt = mt;
            p.owner = NO_OWNER;
        }
        let after = self.deferred.after[zid];
        let list = &mut self.zones[zid].free_area[MAX_PAGE_ORDER].free_list[mt as usize];
        insert_after(list, &mut self.map, after, pfn);
    }

    /// Frames written since boot: the untouched blocks, free or reserved, used or read so
    /// far (their host memory is what the frame table has grown by, `capacity::Budget`).
    pub fn frames_written_since_boot(&self) -> u64 {
        self.deferred.written * BLOCK
    }

    /// Counts every block written so far as boot's (a boot step that writes blocks, the
    /// free lists' shuffle: `capacity::need` counts those at the start).
    pub(super) fn count_writes_as_boot(&mut self) {
        self.deferred.written = 0;
    }

    /// Writes the frames of every untouched block overlapping [start, end), keeping the
    /// list's order (a scanner is about to read them).
    pub fn init_deferred_range(&mut self, start: Pfn, end: Pfn) {
        let first = start / BLOCK;
        let last = end.div_ceil(BLOCK);
        for b in first..last {
            let pfn = (b * BLOCK) as Pfn;
            if self.deferred.is_deferred(pfn) {
                self.init_deferred_at(pfn);
            } else if self.deferred.is_reserved_untouched(pfn) {
                self.init_reserved_block(pfn);
            }
        }
    }

    /// Writes the frames of the untouched block at `pfn` and of every untouched block
    /// between it and the nearer end of its zone's untouched run, so the list keeps its
    /// order.
    fn init_deferred_at(&mut self, pfn: Pfn) {
        let zid = self.page_zone(pfn);
        let q = &self.deferred.blocks[zid];
        let b = block_of(pfn);
        let ascending = q.len() < 2 || q[0] < q[1];
        let i = if ascending {
            q.binary_search(&b)
        } else {
            q.binary_search_by(|x| b.cmp(x))
        }
        .expect("a deferred block is in its zone's run");
        let len = q.len();
        if i < len / 2 {
            self.init_deferred_front(zid, i + 1);
        } else {
            self.init_deferred_back(zid, len - i);
        }
    }

    /// Writes the frames of every untouched free block (before a walk that reorders the
    /// lists).
    pub fn init_deferred_all(&mut self) {
        for zid in 0..self.zones.len() {
            let n = self.deferred.blocks[zid].len();
            self.init_deferred_front(zid, n);
        }
    }

    /// Writes the frames of every untouched block, free or reserved (what an eager boot
    /// would have written).
    pub fn init_untouched_all(&mut self) {
        self.init_deferred_all();
        for b in 0..self.map.len() as u64 / BLOCK {
            let pfn = (b * BLOCK) as Pfn;
            if self.deferred.is_reserved_untouched(pfn) {
                self.init_reserved_block(pfn);
            }
        }
    }

    /// Every block of zone `zid`'s free list of `order` and `mt` in list order, the
    /// untouched ones in their place (list_for_each_entry, for checks and tests).
    pub fn free_list_blocks(&self, zid: usize, order: usize, mt: MigrateType) -> Vec<Pfn> {
        let list = &self.zones[zid].free_area[order].free_list[mt as usize];
        let holds = self.deferred.holds(zid, order, mt);
        let after = self.deferred.after[zid];
        let mut out = Vec::new();
        if holds && after == NIL {
            out.extend(self.deferred.blocks(zid));
        }
        for p in list.iter(&self.map) {
            out.push(p);
            if holds && p == after {
                out.extend(self.deferred.blocks(zid));
            }
        }
        out
    }

    /// The frame `pfn` as it is or, in an untouched block, as it will be written.
    #[inline]
    pub fn frame(&self, pfn: Pfn) -> Page {
        if !self.deferred.is_deferred(pfn) {
            if self.deferred.is_reserved_untouched(pfn) {
                return Page::reserved();
            }
            return self.map[pfn as usize];
        }
        if pfn.is_multiple_of(BLOCK) {
            Page {
                flags: pg::BUDDY,
                ok: MAX_PAGE_ORDER as u8,
                mt: self.deferred.mt,
                ..FREE_FRAME
            }
        } else {
            FREE_FRAME
        }
    }

    /// Checks the untouched blocks: each in its zone, its frames never written.
    pub fn check_deferred(&self) -> Result<(), String> {
        for zid in 0..self.deferred.blocks.len() {
            for pfn in self.deferred.blocks(zid) {
                if !self.deferred.is_deferred(pfn) || self.page_zone(pfn) != zid {
                    return Err(format!("deferred block {pfn} of zone {zid} is not marked"));
                }
                if self.map[pfn as usize..pfn as usize + BLOCK as usize]
                    .iter()
                    .any(|p| *p != ZERO_FRAME)
                {
                    return Err(format!("deferred block {pfn} has written frames"));
                }
            }
        }
        for b in 0..self.map.len() as u64 / BLOCK {
            let pfn = (b * BLOCK) as Pfn;
            if self.deferred.is_reserved_untouched(pfn)
                && (self.deferred.is_deferred(pfn)
                    || self.map[pfn as usize..pfn as usize + BLOCK as usize]
                        .iter()
                        .any(|p| *p != ZERO_FRAME))
            {
                return Err(format!("untouched reserved block {pfn} has written frames"));
            }
        }
        Ok(())
    }
}

/// Links `pfn` right after `after` (NIL: at the head) (list_add).
fn insert_after(list: &mut ListHead, map: &mut [Page], after: Pfn, pfn: Pfn) {
    if after == NIL {
        list.push_front(map, pfn);
        return;
    }
    let next = map[after as usize].next();
    if next == NIL {
        list.push_back(map, pfn);
        return;
    }
    map[pfn as usize].prev = pfn32(after);
    map[pfn as usize].next = pfn32(next);
    map[after as usize].next = pfn32(pfn);
    map[next as usize].prev = pfn32(pfn);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::gfp::GFP_HIGHUSER_MOVABLE;
    use crate::mm::mm_init::boot_8gib as boot;

    /// The Normal zone.
    fn normal(mm: &Mm) -> usize {
        mm.zones.iter().rposition(|z| z.populated()).unwrap()
    }

    /// The memmap boot reserves at the top of the node is whole blocks: marked, read as
    /// reserved, written when a scanner reaches them.
    #[test]
    fn reserved_blocks_read_as_reserved_until_a_scanner_writes_them() {
        let mut mm = boot("");
        let last = mm.map.len() as Pfn - 1;
        assert!(mm.deferred.is_reserved_untouched(last));
        assert_eq!(mm.map[last as usize], ZERO_FRAME);
        assert_eq!(mm.frame(last), Page::reserved());
        let before = mm.frames_written_since_boot();
        mm.init_deferred_range(last - 10, last + 1);
        assert!(!mm.deferred.is_reserved_untouched(last));
        assert_eq!(mm.map[last as usize], Page::reserved());
        assert_eq!(mm.map[(last + 1 - BLOCK as Pfn) as usize], Page::reserved());
        assert_eq!(mm.frames_written_since_boot(), before + BLOCK);
        mm.check_invariants().unwrap();
    }

    #[test]
    fn boot_counts_free_blocks_without_writing_their_frames() {
        let mm = boot("");
        let z = normal(&mm);
        let blocks: Vec<Pfn> = mm.deferred.blocks(z).collect();
        // 4 GiB of Normal less the memmap at the node's top: about a thousand blocks,
        // in ascending order (boot frees to the lists' tails).
        assert!(blocks.len() > 900, "{}", blocks.len());
        assert!(blocks.windows(2).all(|w| w[0] < w[1]));
        let area = &mm.zones[z].free_area[MAX_PAGE_ORDER];
        assert_eq!(area.nr_free as usize, blocks.len());
        assert!(area.free_list[MigrateType::Movable as usize].is_empty());
        assert!(!mm.free_list_empty(z, MAX_PAGE_ORDER, MigrateType::Movable));
        // The frames are untouched, and read as boot would have written them.
        let b = blocks[7];
        assert!(mm.map[b as usize..b as usize + 1024]
            .iter()
            .all(|p| p.flags == 0 && p.next == 0));
        assert!(mm.frame(b).test(pg::BUDDY) && mm.frame(b).order() == MAX_PAGE_ORDER);
        assert_eq!(mm.frame(b + 1), FREE_FRAME);
        mm.check_invariants().unwrap();
    }

    #[test]
    fn a_block_is_written_when_taken_and_the_list_keeps_its_order() {
        let mut mm = boot("");
        let z = normal(&mm);
        let boot_order = mm.free_list_blocks(z, MAX_PAGE_ORDER, MigrateType::Movable);
        // A scanner reaches a block three quarters along the run: it and the ones after
        // it are written (the nearer end), in their places.
        let far = boot_order[boot_order.len() * 3 / 4];
        mm.init_deferred_range(far + 5, far + 6);
        assert!(!mm.deferred.is_deferred(far));
        assert_eq!(mm.map[far as usize].order(), MAX_PAGE_ORDER);
        assert_eq!(
            mm.free_list_blocks(z, MAX_PAGE_ORDER, MigrateType::Movable),
            boot_order
        );
        // Whole blocks come off the list in boot order, each written as it goes.
        for want in &boot_order[..3] {
            let (p, _) = mm.alloc_pages_fast(GFP_HIGHUSER_MOVABLE, MAX_PAGE_ORDER, 0, 0);
            assert_eq!(p, Some(*want));
            assert!(!mm.deferred.is_deferred(*want));
        }
        mm.check_invariants().unwrap();
        // A block freed to the list's head goes before the untouched run.
        mm.free_pages(boot_order[0], MAX_PAGE_ORDER, 0);
        let now = mm.free_list_blocks(z, MAX_PAGE_ORDER, MigrateType::Movable);
        assert_eq!(now.len(), boot_order.len() - 2);
        mm.check_invariants().unwrap();
    }
}
