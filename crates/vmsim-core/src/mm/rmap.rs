//! Page tables and page-cache indices in one slot space: the reverse map.
//!
//! Models what `page->mapping` + `page->index` and the page tables give the
//! kernel: from a page, its owner (a task's address space or a file) and its
//! position there; from an owner and a position, the page or swap entry. The
//! space is cut into chunks of 512 slots (one PTE table's worth, 2 MiB);
//! a task or file takes chunks as it grows. A page's `owner` field holds its
//! slot, so the reverse lookup costs one index. Each slot holds a frame
//! number, a swap entry ([`SWP_BIT`] | slot of the swap device) or nothing, in
//! 64 bits: a 16 TiB machine's frame numbers take all 32 bits of a [`Pfn`].

use super::page::Pfn;

/// Slots per chunk (PTRS_PER_PTE).
pub const CHUNK_SLOTS: u32 = 512;
/// log2 of [`CHUNK_SLOTS`].
pub const CHUNK_SHIFT: u32 = 9;
/// No chunk in a [`SlotTable`], and no slot (a page's `owner` when it has none).
pub const SLOT_NONE: u32 = u32::MAX;
/// An empty slot's stored value (pte_none).
const ENTRY_NONE: u64 = u64::MAX;
/// Marks a swap entry (!pte_present, is_swap_pte), above every frame number.
pub const SWP_BIT: u64 = 1 << 32;
/// A PTE mapping the shared zero page (my_zero_pfn); never a swap entry, as all swap
/// together holds at most MAX_SWAP / PAGE_SIZE slots.
const ENTRY_ZERO: u64 = u64::MAX - 1;
const _: () = assert!(
    crate::config::MAX_SWAP / super::page::PAGE_SIZE < u32::MAX as u64,
    "a swap slot must fit the u32 of Entry::Swap"
);
/// Most chunks: every slot number stays below [`SLOT_NONE`].
const MAX_CHUNKS: u32 = u32::MAX >> CHUNK_SHIFT;

/// Who a chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Unused chunk.
    Free,
    /// A task's anonymous memory (its mm_struct); `base` is the chunk's first page index.
    Task {
        /// Task id.
        tid: u32,
        /// Index of the chunk in the task's address space.
        index: u32,
    },
    /// A file's page cache (its address_space).
    File {
        /// Inode number.
        ino: u32,
        /// Index of the chunk in the file.
        index: u32,
    },
}

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Nothing mapped (pte_none).
    None,
    /// A resident page.
    Page(Pfn),
    /// Swapped out to this swap slot.
    Swap(u32),
    /// The shared zero page, mapped read-only by a read fault (do_anonymous_page).
    Zero,
}

impl Entry {
    /// Decodes a stored slot value.
    #[inline(always)]
    pub fn decode(v: u64) -> Entry {
        if v == ENTRY_NONE {
            Entry::None
        } else if v == ENTRY_ZERO {
            Entry::Zero
        } else if v & SWP_BIT != 0 {
            Entry::Swap(v as u32)
        } else {
            Entry::Page(v as Pfn)
        }
    }

    /// Encodes for storage.
    #[inline(always)]
    pub fn encode(self) -> u64 {
        match self {
            Entry::None => ENTRY_NONE,
            Entry::Zero => ENTRY_ZERO,
            Entry::Page(p) => p,
            Entry::Swap(s) => s as u64 | SWP_BIT,
        }
    }
}

/// The slot space.
#[derive(Debug, Clone, Default)]
pub struct Rmap {
    entries: Vec<u64>,
    owners: Vec<Owner>,
    free_chunks: Vec<u32>,
}

impl Rmap {
    /// Host memory its slot space holds (page tables and page-cache indices) [bytes].
    pub fn host_bytes(&self) -> u64 {
        (self.entries.capacity() * std::mem::size_of::<u64>()
            + self.owners.capacity() * std::mem::size_of::<Owner>()
            + self.free_chunks.capacity() * std::mem::size_of::<u32>()) as u64
    }

    /// Takes a chunk for an owner; its slots start empty.
    pub fn alloc_chunk(&mut self, owner: Owner) -> u32 {
        match self.free_chunks.pop() {
            Some(c) => {
                self.owners[c as usize] = owner;
                c
            }
            None => {
                let c = self.owners.len() as u32;
                assert!(c < MAX_CHUNKS, "rmap slot space exhausted");
                self.owners.push(owner);
                self.entries
                    .extend(std::iter::repeat_n(ENTRY_NONE, CHUNK_SLOTS as usize));
                c
            }
        }
    }

    /// Returns a chunk whose slots are all empty.
    pub fn free_chunk(&mut self, c: u32) {
        debug_assert!(self.chunk_slots(c).all(|s| self.get(s) == Entry::None));
        self.owners[c as usize] = Owner::Free;
        self.free_chunks.push(c);
    }

    /// The slots of chunk `c`.
    pub fn chunk_slots(&self, c: u32) -> impl Iterator<Item = u32> {
        (c << CHUNK_SHIFT)..((c + 1) << CHUNK_SHIFT)
    }

    /// What a slot holds.
    #[inline(always)]
    pub fn get(&self, slot: u32) -> Entry {
        Entry::decode(self.entries[slot as usize])
    }

    /// Sets a slot.
    #[inline(always)]
    pub fn set(&mut self, slot: u32, e: Entry) {
        self.entries[slot as usize] = e.encode();
    }

    /// The owner of a slot and the slot's page index within the owner (page_mapping, folio_index).
    #[inline(always)]
    pub fn owner(&self, slot: u32) -> (Owner, u64) {
        let o = self.owners[(slot >> CHUNK_SHIFT) as usize];
        let off = (slot & (CHUNK_SLOTS - 1)) as u64;
        let base = match o {
            Owner::Task { index, .. } | Owner::File { index, .. } => (index as u64) << CHUNK_SHIFT,
            Owner::Free => 0,
        };
        (o, base + off)
    }

    /// Chunks in use.
    pub fn chunks_in_use(&self) -> usize {
        self.owners.len() - self.free_chunks.len()
    }
}

/// A growable index → slot table for one owner (the owner's page-table tree or xarray).
#[derive(Debug, Clone, Default)]
pub struct SlotTable {
    /// Chunk of each 512-page stretch, or SLOT_NONE.
    pub chunks: Vec<u32>,
}

impl SlotTable {
    /// The slot of page `index`, if its chunk exists.
    #[inline(always)]
    pub fn slot(&self, index: u64) -> Option<u32> {
        let c = *self.chunks.get((index >> CHUNK_SHIFT) as usize)?;
        (c != SLOT_NONE).then_some((c << CHUNK_SHIFT) | (index as u32 & (CHUNK_SLOTS - 1)))
    }

    /// The slot of page `index`, taking a chunk for `owner` if needed.
    pub fn slot_or_alloc(
        &mut self,
        rmap: &mut Rmap,
        index: u64,
        owner: impl Fn(u32) -> Owner,
    ) -> u32 {
        let ci = (index >> CHUNK_SHIFT) as usize;
        if self.chunks.len() <= ci {
            self.chunks.resize(ci + 1, SLOT_NONE);
        }
        if self.chunks[ci] == SLOT_NONE {
            self.chunks[ci] = rmap.alloc_chunk(owner(ci as u32));
        }
        (self.chunks[ci] << CHUNK_SHIFT) | (index as u32 & (CHUNK_SLOTS - 1))
    }

    /// Gives every chunk back (the owner is gone and its slots are empty).
    pub fn release(&mut self, rmap: &mut Rmap) {
        for &c in &self.chunks {
            if c != SLOT_NONE {
                rmap.free_chunk(c);
            }
        }
        self.chunks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every frame of the largest machine, every swap slot of the largest device, the
    /// zero page and nothing decode as what was stored.
    #[test]
    fn entries_round_trip_at_their_extremes() {
        let last_swap = (crate::config::MAX_SWAP / super::super::page::PAGE_SIZE - 1) as u32;
        let last_frame = (crate::config::MAX_MEMORY / super::super::page::PAGE_SIZE - 1) as Pfn;
        for e in [
            Entry::None,
            Entry::Zero,
            Entry::Page(0),
            Entry::Page(last_frame - 1),
            Entry::Page(last_frame),
            Entry::Swap(0),
            Entry::Swap(last_swap),
        ] {
            assert_eq!(Entry::decode(e.encode()), e, "{e:?}");
        }
        assert_ne!(Entry::Page(0).encode(), Entry::Swap(0).encode());
    }

    #[test]
    fn slots_round_trip_and_chunks_are_reused() {
        let mut r = Rmap::default();
        let mut t = SlotTable::default();
        let s = t.slot_or_alloc(&mut r, 1000, |index| Owner::Task { tid: 7, index });
        assert_eq!(r.owner(s), (Owner::Task { tid: 7, index: 1 }, 1000));
        r.set(s, Entry::Page(42));
        assert_eq!(r.get(s), Entry::Page(42));
        r.set(s, Entry::Swap(3));
        assert_eq!(r.get(s), Entry::Swap(3));
        assert_eq!(t.slot(1000), Some(s));
        assert_eq!(t.slot(5), None);
        r.set(s, Entry::None);
        t.release(&mut r);
        assert_eq!(r.chunks_in_use(), 0);
        let mut u = SlotTable::default();
        let s2 = u.slot_or_alloc(&mut r, 0, |index| Owner::File { ino: 1, index });
        assert_eq!(
            s2 >> CHUNK_SHIFT,
            s >> CHUNK_SHIFT,
            "the freed chunk is reused"
        );
    }
}
