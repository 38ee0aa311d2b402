//! Page allocator randomization.
//!
//! Models mm/shuffle.c (`page_alloc.shuffle=1`, CONFIG_SHUFFLE_PAGE_ALLOCATOR):
//! `__shuffle_zone()` walks a zone's max-order-aligned pfns at boot and swaps
//! each free max-order block's place on its free list with that of a block
//! picked at random in the zone's span (up to SHUFFLE_RETRY picks, both free
//! at max order and of the same migratetype), and `shuffle_pick_tail()` sends
//! a freed max-order block to the list's head or tail at random. Either way
//! the order in which the allocator hands out max-order blocks no longer
//! follows their pfns.

use super::mmzone::{MAX_PAGE_ORDER, MIGRATE_TYPES};
use super::page::{pg, Pfn};
use super::Mm;
use crate::engine::rng::{streams, Stream};

/// Blocks of this order and above are shuffled (SHUFFLE_ORDER = MAX_PAGE_ORDER).
pub const SHUFFLE_ORDER: usize = MAX_PAGE_ORDER;
/// Random picks tried for a swap partner (SHUFFLE_RETRY).
const SHUFFLE_RETRY: usize = 10;

impl Mm {
    /// Shuffles the free lists of every zone, drawing from the scenario seed's stream
    /// (shuffle_free_memory → __shuffle_zone), and with `keep` shuffles frees from now on.
    pub fn shuffle_free_memory(&mut self, seed: u64, keep: bool) {
        // The walk reorders the lists: every block's frames written first, at boot.
        self.init_deferred_all();
        self.count_writes_as_boot();
        let mut rng = Stream::new(seed, streams::SHUFFLE);
        for zid in 0..self.zones.len() {
            if self.zones[zid].managed_pages > 0 {
                self.__shuffle_zone(zid, &mut rng);
            }
        }
        self.shuffle = keep.then_some(rng);
    }

    /// The free max-order block at `pfn` of zone `zid`, if that is what it is (shuffle_valid_page).
    fn shuffle_valid_page(&self, zid: usize, pfn: Pfn) -> bool {
        let z = &self.zones[zid];
        pfn >= z.zone_start_pfn && pfn < z.zone_end_pfn() && {
            let p = &self.map[pfn as usize];
            p.test(pg::BUDDY) && p.order() == SHUFFLE_ORDER
        }
    }

    /// Swaps free max-order blocks' places on their lists at random (__shuffle_zone).
    fn __shuffle_zone(&mut self, zid: usize, rng: &mut Stream) {
        let order_pages: Pfn = 1 << SHUFFLE_ORDER;
        let (zstart, zend) = (
            self.zones[zid].zone_start_pfn,
            self.zones[zid].zone_end_pfn(),
        );
        let spanned = zend - zstart;
        // Each list as a vector (list_swap exchanges two entries' places).
        let mut lists: Vec<Vec<Pfn>> = (0..MIGRATE_TYPES)
            .map(|mt| {
                self.zones[zid].free_area[SHUFFLE_ORDER].free_list[mt]
                    .iter(&self.map)
                    .collect()
            })
            .collect();
        let slot = |pfn: Pfn| ((pfn - zstart) / order_pages) as usize;
        let mut place = vec![usize::MAX; spanned.div_ceil(order_pages as u64) as usize + 1];
        for list in &lists {
            for (i, &pfn) in list.iter().enumerate() {
                place[slot(pfn)] = i;
            }
        }
        let mut i = zstart.div_ceil(order_pages) * order_pages;
        while i < zend {
            if self.shuffle_valid_page(zid, i) {
                let partner = (0..SHUFFLE_RETRY).find_map(|_| {
                    let j = zstart + (rng.below(spanned) as Pfn / order_pages) * order_pages;
                    (j != i && self.shuffle_valid_page(zid, j)).then_some(j)
                });
                if let Some(j) = partner {
                    let mt = self.map[i as usize].mt as usize;
                    if self.map[j as usize].mt as usize == mt {
                        let (a, b) = (place[slot(i)], place[slot(j)]);
                        lists[mt].swap(a, b);
                        place[slot(i)] = b;
                        place[slot(j)] = a;
                    }
                }
            }
            i += order_pages;
        }
        for (mt, list) in lists.into_iter().enumerate() {
            let head = &mut self.zones[zid].free_area[SHUFFLE_ORDER].free_list[mt];
            *head = super::page::ListHead::new();
            for pfn in list {
                head.push_back(&mut self.map, pfn);
            }
        }
    }

    /// Whether a freed max-order block goes to the tail of its list: a coin toss
    /// (shuffle_pick_tail).
    pub fn shuffle_pick_tail(&mut self) -> bool {
        self.shuffle.as_mut().is_some_and(|r| r.below(2) == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::mmzone::MigrateType;

    use crate::mm::mm_init::boot_8gib as boot;

    /// The largest zone (Normal).
    fn normal(mm: &Mm) -> usize {
        (0..mm.zones.len())
            .max_by_key(|&z| mm.zones[z].managed_pages)
            .unwrap()
    }

    /// The Normal zone's first `n` max-order blocks handed out, by pfn.
    fn first_blocks(mm: &mut Mm, n: usize) -> Vec<Pfn> {
        let zid = normal(mm);
        (0..n)
            .map(|_| {
                mm.__rmqueue_smallest(zid, SHUFFLE_ORDER, MigrateType::Movable)
                    .unwrap()
            })
            .collect()
    }

    /// The fraction of steps between consecutive blocks that go to a neighbour.
    fn adjacent_fraction(blocks: &[Pfn]) -> f64 {
        let steps = blocks
            .windows(2)
            .filter(|w| w[0].abs_diff(w[1]) == 1 << SHUFFLE_ORDER);
        steps.count() as f64 / (blocks.len() - 1) as f64
    }

    #[test]
    fn boot_order_hands_out_blocks_upward_or_downward_by_pfn() {
        let mut tail = boot("boot_free_to_tail = true");
        let up = first_blocks(&mut tail, 40);
        assert!(up.windows(2).all(|w| w[1] > w[0]), "{up:?}");
        assert_eq!(adjacent_fraction(&up), 1.0);
        let mut head = boot("boot_free_to_tail = false");
        let down = first_blocks(&mut head, 40);
        assert!(down.windows(2).all(|w| w[1] < w[0]), "{down:?}");
        assert_eq!(adjacent_fraction(&down), 1.0);
    }

    #[test]
    fn shuffled_lists_hand_out_blocks_all_over_the_zone_and_keep_every_block() {
        let mut mm = boot("");
        let zid = normal(&mm);
        let before = mm.zones[zid].free_area[SHUFFLE_ORDER].nr_free;
        mm.shuffle_free_memory(7, false);
        assert_eq!(mm.zones[zid].free_area[SHUFFLE_ORDER].nr_free, before);
        assert!(mm.shuffle.is_none());
        let blocks = first_blocks(&mut mm, 40);
        assert!(adjacent_fraction(&blocks) < 0.2, "{blocks:?}");
        // The same seed mixes the same way; another seed differently.
        let again = first_blocks(&mut boot_shuffled(7), 40);
        assert_eq!(blocks, again);
        assert_ne!(blocks, first_blocks(&mut boot_shuffled(8), 40));
    }

    fn boot_shuffled(seed: u64) -> Mm {
        let mut mm = boot("");
        mm.shuffle_free_memory(seed, false);
        mm
    }

    #[test]
    fn page_alloc_shuffle_sends_freed_max_order_blocks_to_either_end() {
        let mut mm = boot("");
        mm.shuffle_free_memory(3, true);
        let tails = (0..200).filter(|_| mm.shuffle_pick_tail()).count();
        assert!((60..140).contains(&tails), "{tails} of 200 to the tail");
    }
}
