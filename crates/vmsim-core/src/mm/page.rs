//! The frame table (`mem_map`): one 16-byte [`Page`] per 4 KiB frame.
//!
//! Models `struct page` (include/linux/mm_types.h) and the page flags of
//! include/linux/page-flags.h, reduced to what the simulated mechanisms read.
//! A frame sits on at most one list at a time — a buddy free list, a per-CPU
//! list, or (later) an LRU — so one pair of links serves all of them, as
//! `page->lru` / `page->buddy_list` / `page->pcp_list` share storage in the kernel.

/// A page frame number: index into the frame table. 64 bits wide so that a zone's
/// end (2^32 on a 16 TiB machine) and every step past it compute without wrapping;
/// stored in 32 bits inside a [`Page`] (see [`pfn32`]).
pub type Pfn = u64;

/// "No page": the end of a list. As a frame number it is the last frame of a 16 TiB
/// machine, always reserved memmap (`mm_init::memblock_reserved`), never linked.
pub const NIL: Pfn = u32::MAX as Pfn;

/// "No owner": a page's `owner` or an rmap slot that names nothing.
pub const NO_OWNER: u32 = u32::MAX;

/// A frame number as a [`Page`] stores it (its list links): every frame of the largest
/// machine, and [`NIL`], fit in 32 bits.
#[inline(always)]
pub fn pfn32(pfn: Pfn) -> u32 {
    debug_assert!(pfn <= NIL, "frame number {pfn} does not fit a page link");
    pfn as u32
}

/// Page size [bytes].
pub const PAGE_SIZE: u64 = 4096;
/// log2 of [`PAGE_SIZE`].
pub const PAGE_SHIFT: u32 = 12;

/// Page flag bits (include/linux/page-flags.h names).
pub mod pg {
    /// Free and on a buddy free list as the head of a block of `order` (PageBuddy).
    pub const BUDDY: u16 = 1 << 0;
    /// Free and on a per-CPU list.
    pub const PCP: u16 = 1 << 1;
    /// Allocated as the head of a block of `order` pages.
    pub const HEAD: u16 = 1 << 2;
    /// A page-table entry mapping it was accessed since reclaim last looked (the PTE young bit).
    pub const YOUNG: u16 = 1 << 3;
    /// In the swap cache (PageSwapCache).
    pub const SWAPCACHE: u16 = 1 << 4;
    /// Reserved at boot, never freed to the buddy allocator (PageReserved).
    pub const RESERVED: u16 = 1 << 5;
    /// Reclaim wants it freed as soon as writeback ends (PageReclaim).
    pub const RECLAIM: u16 = 1 << 6;
    /// Refaulted soon after eviction: part of the workingset (PageWorkingset).
    pub const WORKINGSET: u16 = 1 << 7;
    /// On the unevictable list (PageUnevictable).
    pub const UNEVICTABLE: u16 = 1 << 8;
    /// On an LRU list (PageLRU).
    pub const LRU: u16 = 1 << 9;
    /// On the active LRU list (PageActive).
    pub const ACTIVE: u16 = 1 << 10;
    /// Recently referenced (PageReferenced).
    pub const REFERENCED: u16 = 1 << 11;
    /// Dirty (PageDirty).
    pub const DIRTY: u16 = 1 << 12;
    /// Under writeback (PageWriteback).
    pub const WRITEBACK: u16 = 1 << 13;
    /// A page-cache page mapped into a task (page_mapped for file pages).
    pub const MAPPED: u16 = 1 << 14;
}

/// What an allocated block is used for (the kernel's page types and mapping kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    /// Free, or a kernel allocation of no tracked kind.
    Other = 0,
    /// Anonymous memory of a task (PageAnon); `owner` is its rmap slot.
    Anon = 1,
    /// Page cache of a file; `owner` is its rmap slot.
    File = 2,
    /// A slab page (PageSlab); `owner` is the cache.
    Slab = 3,
    /// A page-table page (PageTable); `owner` is the task.
    PgTable = 4,
    /// A kernel-stack page; `owner` is the task.
    KStack = 5,
    /// An explicit allocation held by a task; `owner` is the task.
    Held = 6,
    /// A huge page of the hugetlb pool (free or in use).
    Hugetlb = 7,
}

impl PageKind {
    const ALL: [PageKind; 8] = [
        PageKind::Other,
        PageKind::Anon,
        PageKind::File,
        PageKind::Slab,
        PageKind::PgTable,
        PageKind::KStack,
        PageKind::Held,
        PageKind::Hugetlb,
    ];
}

/// One frame's state: 16 bytes.
///
/// `ok` holds the block order (low 4 bits: the buddy order of a free block,
/// or of an allocated block, on its head) and the [`PageKind`] (high 4 bits).
/// `mt` is the migratetype the block was
/// taken from or freed to — the kernel keeps it in `page->index` for pcp
/// pages and reads the pageblock bits otherwise. `owner` is the task, slab
/// cache or inode the frame belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Page {
    /// Flag bits from [`pg`].
    pub flags: u16,
    /// Block order (low 4 bits) and kind (high 4 bits); use the accessors.
    pub ok: u8,
    /// Migratetype recorded at allocation / on a pcp list.
    pub mt: u8,
    /// Next frame on the list this frame is on ([`pfn32`]; read with [`Page::next`]).
    pub next: u32,
    /// Previous frame on that list ([`pfn32`]; read with [`Page::prev`]).
    pub prev: u32,
    /// Owner id (task, cache, inode, rmap slot) or [`NO_OWNER`].
    pub owner: u32,
}

const _: () = assert!(std::mem::size_of::<Page>() == 16);

impl Page {
    /// A frame not yet given to the allocator.
    pub const fn reserved() -> Self {
        Page {
            flags: pg::RESERVED,
            ok: 0,
            mt: 0,
            next: NIL as u32,
            prev: NIL as u32,
            owner: NO_OWNER,
        }
    }

    /// Next frame on the list, or [`NIL`].
    #[inline(always)]
    pub fn next(&self) -> Pfn {
        self.next as Pfn
    }

    /// Previous frame on the list, or [`NIL`].
    #[inline(always)]
    pub fn prev(&self) -> Pfn {
        self.prev as Pfn
    }

    /// Block order.
    #[inline(always)]
    pub fn order(&self) -> usize {
        (self.ok & 0x0F) as usize
    }

    /// What the block is used for.
    #[inline(always)]
    pub fn kind(&self) -> PageKind {
        PageKind::ALL[(self.ok >> 4) as usize]
    }

    /// Sets the kind, keeping the order.
    #[inline(always)]
    pub fn set_kind(&mut self, k: PageKind) {
        self.ok = (self.ok & 0x0F) | ((k as u8) << 4);
    }

    /// Whether flag bits `f` are all set.
    #[inline(always)]
    pub fn test(&self, f: u16) -> bool {
        self.flags & f == f
    }
}

/// Head and tail of an intrusive doubly-linked list threaded through the frame table
/// (a `struct list_head` whose nodes are frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListHead {
    /// First frame or NIL.
    pub head: Pfn,
    /// Last frame or NIL.
    pub tail: Pfn,
}

impl Default for ListHead {
    fn default() -> Self {
        Self::new()
    }
}

impl ListHead {
    /// An empty list.
    pub const fn new() -> Self {
        ListHead {
            head: NIL,
            tail: NIL,
        }
    }

    /// Whether the list is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// Adds `pfn` at the head (list_add).
    #[inline(always)]
    pub fn push_front(&mut self, map: &mut [Page], pfn: Pfn) {
        let old = self.head;
        {
            let p = &mut map[pfn as usize];
            p.prev = pfn32(NIL);
            p.next = pfn32(old);
        }
        if old == NIL {
            self.tail = pfn;
        } else {
            map[old as usize].prev = pfn32(pfn);
        }
        self.head = pfn;
    }

    /// Adds `pfn` at the tail (list_add_tail).
    #[inline(always)]
    pub fn push_back(&mut self, map: &mut [Page], pfn: Pfn) {
        let old = self.tail;
        {
            let p = &mut map[pfn as usize];
            p.next = pfn32(NIL);
            p.prev = pfn32(old);
        }
        if old == NIL {
            self.head = pfn;
        } else {
            map[old as usize].next = pfn32(pfn);
        }
        self.tail = pfn;
    }

    /// Unlinks `pfn`, which must be on this list (list_del).
    #[inline(always)]
    pub fn remove(&mut self, map: &mut [Page], pfn: Pfn) {
        let (prev, next) = {
            let p = &map[pfn as usize];
            (p.prev(), p.next())
        };
        if prev == NIL {
            debug_assert_eq!(self.head, pfn);
            self.head = next;
        } else {
            map[prev as usize].next = pfn32(next);
        }
        if next == NIL {
            debug_assert_eq!(self.tail, pfn);
            self.tail = prev;
        } else {
            map[next as usize].prev = pfn32(prev);
        }
        let p = &mut map[pfn as usize];
        p.next = pfn32(NIL);
        p.prev = pfn32(NIL);
    }

    /// Moves `pfn` and every entry before it to the tail, so that a search from the head
    /// starts after it next time (compaction's move_freelist_tail: list_cut_position +
    /// list_splice_tail).
    pub fn move_to_tail_through(&mut self, map: &mut [Page], pfn: Pfn) {
        if pfn == self.tail {
            return;
        }
        let new_head = map[pfn as usize].next();
        let (old_head, old_tail) = (self.head, self.tail);
        map[old_tail as usize].next = pfn32(old_head);
        map[old_head as usize].prev = pfn32(old_tail);
        map[pfn as usize].next = pfn32(NIL);
        map[new_head as usize].prev = pfn32(NIL);
        self.head = new_head;
        self.tail = pfn;
    }

    /// Removes and returns the head, if any.
    #[inline(always)]
    pub fn pop_front(&mut self, map: &mut [Page]) -> Option<Pfn> {
        let h = self.head;
        if h == NIL {
            return None;
        }
        self.remove(map, h);
        Some(h)
    }

    /// Iterates the list from head to tail (the list must not change meanwhile).
    pub fn iter<'a>(&self, map: &'a [Page]) -> ListIter<'a> {
        ListIter {
            map,
            cur: self.head,
        }
    }
}

/// Iterator over a [`ListHead`].
pub struct ListIter<'a> {
    map: &'a [Page],
    cur: Pfn,
}

impl Iterator for ListIter<'_> {
    type Item = Pfn;
    fn next(&mut self) -> Option<Pfn> {
        if self.cur == NIL {
            return None;
        }
        let c = self.cur;
        self.cur = self.map[c as usize].next();
        Some(c)
    }
}

/// A multiplicative (Fibonacci) hasher for page-frame and block numbers: the keys are
/// dense integers, so SipHash's protection against chosen keys buys nothing and would
/// cost reclaim a third of its speed. Deterministic: no random state.
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by page-frame or block number.
pub type IntMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IntHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_ops_keep_links_consistent() {
        let mut map = vec![Page::reserved(); 8];
        let mut l = ListHead::new();
        l.push_back(&mut map, 1);
        l.push_back(&mut map, 2);
        l.push_front(&mut map, 3);
        assert_eq!(l.iter(&map).collect::<Vec<_>>(), vec![3, 1, 2]);
        l.remove(&mut map, 1);
        assert_eq!(l.iter(&map).collect::<Vec<_>>(), vec![3, 2]);
        assert_eq!(l.pop_front(&mut map), Some(3));
        assert_eq!(l.pop_front(&mut map), Some(2));
        assert!(l.is_empty());
        assert_eq!(l.tail, NIL);
    }

    #[test]
    fn move_to_tail_through_rotates_the_searched_entries_behind_the_rest() {
        let mut map = vec![Page::reserved(); 8];
        let mut l = ListHead::new();
        for pfn in 1..=5 {
            l.push_back(&mut map, pfn);
        }
        l.move_to_tail_through(&mut map, 2);
        assert_eq!(l.iter(&map).collect::<Vec<_>>(), vec![3, 4, 5, 1, 2]);
        // The tail itself stays where it is.
        l.move_to_tail_through(&mut map, 2);
        assert_eq!(l.iter(&map).collect::<Vec<_>>(), vec![3, 4, 5, 1, 2]);
        l.move_to_tail_through(&mut map, 3);
        assert_eq!(l.iter(&map).collect::<Vec<_>>(), vec![4, 5, 1, 2, 3]);
        // Links stay consistent both ways.
        l.remove(&mut map, 2);
        assert_eq!(l.pop_front(&mut map), Some(4));
        assert_eq!(l.iter(&map).collect::<Vec<_>>(), vec![5, 1, 3]);
        assert_eq!(map[l.tail as usize].prev(), 1);
    }
}
