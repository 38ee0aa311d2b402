//! The journal (fs/jbd2): transactions of metadata buffers, commits, checkpoints.
//!
//! A metadata buffer a filesystem operation modifies joins the running
//! transaction (`jbd2_journal_get_write_access` → `jbd2_journal_add_journal_head`:
//! a `journal_head` object from `jbd2_journal_head`, SLAB_TEMPORARY, the first
//! time the buffer is journaled). `kjournald2` commits the running transaction
//! `commit` seconds after it started, or at once when it holds a quarter of the
//! journal (`jbd2_journal_commit_transaction`): the transaction's buffers are
//! written to the journal — one descriptor block per [`TAGS_PER_DESCRIPTOR`]
//! buffers, the buffers, a commit block — in one sequential write, and the
//! buffers are then dirty in place (refiled to the checkpoint list, their pages
//! dirty for writeback). Each commit also cleans the checkpoint list
//! (`__jbd2_journal_clean_checkpoint_list`): a checkpointed buffer whose page
//! has been written back gives up its journal_head.
//!
//! A buffer in the running transaction is jbddirty, not dirty: its page is
//! dirtied when the commit refiles it (`__jbd2_journal_temp_unlink_buffer` →
//! `mark_buffer_dirty`), and a page whose buffer has a journal_head cannot be
//! reclaimed (the head holds a reference: `buffer_busy`).
//!
//! Simplified: the in-place write is the flusher's writeback of the block
//! device's dirty pages; a page dirty from an earlier commit that joins the
//! running transaction stays dirty and may be written before the commit (the
//! kernel clears the buffer's dirty bit and writes nothing); no revoke records,
//! no fast commits, no journal wrap-around waits (the log only moves on).

use super::buffer::IntMap;
use crate::engine::{Program, Step, StepCtx, StepOut, TaskId};
use crate::kernel::{AllocResult, Kernel};
use crate::mm::memory::BioKind;
use crate::mm::page::{pg, Pfn};
use crate::mm::rmap::Owner;
use crate::mm::slab::JBD2_JOURNAL_HEAD;

/// Journal size [blocks] (mke2fs's default for a filesystem of 128 GiB and more: 1 GiB;
/// ext2fs_default_journal_size).
pub const JOURNAL_BLOCKS: u64 = 262_144;
/// Block tags a descriptor block holds (4 KiB less the 12-byte header and 16-byte tail,
/// 16-byte journal_block_tag3_t with csum v3).
pub const TAGS_PER_DESCRIPTOR: u64 = (4096 - 12 - 16) / 16;
/// The journal's first block on the device (past the first block groups' metadata).
pub const JOURNAL_START_BLOCK: u64 = 1 << 20;

/// A buffer's journal state (struct journal_head, reduced).
#[derive(Debug, Clone, Copy)]
pub struct JournalHead {
    /// Slab id of its journal_head object.
    pub slab: u32,
    /// Transaction it belongs to (b_transaction), or 0 once committed (checkpoint list).
    pub transaction: u64,
}

/// The journal (journal_t).
#[derive(Debug, Clone, Default)]
pub struct Journal {
    /// Journal heads by block.
    pub jh: IntMap<u64, JournalHead>,
    /// Buffers of the running transaction, in the order they joined (t_buffers).
    pub running: Vec<u64>,
    /// When the running transaction started [ns] (t_start_time).
    pub running_start: Option<u64>,
    /// Committed buffers not yet checked clean (the checkpoint list).
    pub checkpoint: Vec<u64>,
    /// Id of the running transaction (j_transaction_sequence).
    pub tid: u64,
    /// Next journal block to write (j_head), relative to the journal's start.
    pub head: u64,
    /// The commit thread's wait queue.
    pub wq: Option<usize>,
    /// Transactions committed.
    pub commits: u64,
    /// Blocks written to the journal (descriptors, buffers, commit blocks).
    pub blocks_logged: u64,
    /// The transaction a caller asked to be committed now (j_commit_request).
    pub commit_request: u64,
    /// The last transaction whose commit has completed (j_commit_sequence).
    pub commit_sequence: u64,
}

impl Kernel {
    /// Adds a buffer to the running transaction (jbd2_journal_get_write_access +
    /// jbd2_journal_dirty_metadata): a journal_head the first time, and the block's page
    /// dirty. Wakes kjournald2 when the transaction holds a quarter of the journal
    /// (j_max_transaction_buffers).
    pub fn jbd2_journal_dirty_metadata(&mut self, tid: TaskId, block: u64) -> AllocResult {
        let running = self.journal.tid + 1;
        match self.journal.jh.get_mut(&block) {
            // Already in the running transaction: nothing to do (the commit dirties its
            // page).
            Some(jh) if jh.transaction == running => return AllocResult::Page(0),
            Some(jh) => {
                jh.transaction = running;
                self.journal.running.push(block);
            }
            None => {
                let cache = JBD2_JOURNAL_HEAD;
                let slab = match self.slab_alloc_object(cache, tid, crate::mm::gfp::GFP_NOFS) {
                    Ok(obj) => obj.id,
                    Err(r) => return r,
                };
                self.journal.jh.insert(
                    block,
                    JournalHead {
                        slab,
                        transaction: running,
                    },
                );
                self.journal.running.push(block);
            }
        }
        if self.journal.running_start.is_none() {
            self.journal.running_start = Some(self.mm.clock());
        }
        // The buffer is jbddirty, not dirty: its page is dirtied when the commit exposes
        // it to the VM (__jbd2_journal_temp_unlink_buffer → mark_buffer_dirty), so the
        // flusher cannot write it in place before the journal holds it.
        if self.journal.running.len() as u64 >= JOURNAL_BLOCKS / 4 {
            if let Some(wq) = self.journal.wq {
                self.mm.cur.wake.push(wq);
            }
        }
        AllocResult::Page(0)
    }

    /// Commits the running transaction (jbd2_journal_commit_transaction): writes its
    /// buffers to the journal in one sequential request, refiles them to the checkpoint
    /// list, then cleans the checkpoint list. Returns when the journal write completes.
    pub fn jbd2_journal_commit_transaction(&mut self) -> u64 {
        let now = self.mm.clock();
        self.jbd2_clean_checkpoint_list();
        let bufs = std::mem::take(&mut self.journal.running);
        self.journal.running_start = None;
        self.journal.tid += 1;
        if bufs.is_empty() {
            return now;
        }
        let n = bufs.len() as u64;
        let blocks = n + n.div_ceil(TAGS_PER_DESCRIPTOR) + 1;
        let bdev = self.bdev_inode();
        let start = self.inodes[bdev as usize].start_sector
            + (JOURNAL_START_BLOCK + self.journal.head % JOURNAL_BLOCKS) * 8;
        self.journal.head += blocks;
        self.journal.blocks_logged += blocks;
        self.journal.commits += 1;
        self.mm
            .count_vm_events(crate::mm::vmstat::Event::PGPGOUT, 4 * blocks);
        let req = crate::block::Request::write(start, blocks as u32, 0, true);
        let done = self.submit_bio(req, BioKind::FileWrite(Vec::new()));
        for &b in &bufs {
            if let Some(jh) = self.journal.jh.get_mut(&b) {
                jh.transaction = 0;
            }
            // __jbd2_journal_refile_buffer(): the committed buffer is dirty for its
            // write in place.
            self.mark_buffer_dirty(b);
        }
        self.journal.checkpoint.extend(bufs);
        done
    }

    /// Asks kjournald2 to commit the running transaction now (jbd2_journal_start_commit
    /// → __jbd2_log_start_commit, which wakes j_wait_commit); returns the transaction to
    /// wait for (jbd2_log_wait_commit): the running one, or with none running the last
    /// one whose commit started.
    pub fn jbd2_journal_start_commit(&mut self) -> u64 {
        if self.journal.running.is_empty() {
            return self.journal.tid;
        }
        let target = self.journal.tid + 1;
        self.journal.commit_request = self.journal.commit_request.max(target);
        match self.journal.wq {
            Some(wq) => self.mm.cur.wake.push(wq),
            None => {
                // No commit thread (a kernel without one): the caller commits.
                let done = self.jbd2_journal_commit_transaction();
                self.sleep_until(done);
                self.jbd2_commit_done();
            }
        }
        target
    }

    /// Frees the journal_heads of checkpointed buffers written back in place
    /// (__jbd2_journal_clean_checkpoint_list → __jbd2_journal_remove_checkpoint).
    pub fn jbd2_clean_checkpoint_list(&mut self) {
        let cache = JBD2_JOURNAL_HEAD;
        let list = std::mem::take(&mut self.journal.checkpoint);
        let mut keep = Vec::new();
        for b in list {
            let Some(jh) = self.journal.jh.get(&b).copied() else {
                continue;
            };
            if jh.transaction != 0 {
                // Joined a newer transaction: it is that transaction's now.
                continue;
            }
            let busy = self
                .find_get_block(b)
                .is_some_and(|p| self.mm.map[p as usize].flags & (pg::DIRTY | pg::WRITEBACK) != 0);
            if busy {
                keep.push(b);
            } else {
                self.journal.jh.remove(&b);
                self.kmem_cache_free(cache, crate::mm::slab::SlabObj::unaccounted(jh.slab), 0);
            }
        }
        self.journal.checkpoint = keep;
    }

    /// Whether a page of the block device's cache holds a journaled buffer: the
    /// journal_head's reference (jbd2_journal_add_journal_head → get_bh) makes the buffer
    /// busy, so try_to_free_buffers (drop_buffers → buffer_busy) cannot release the page.
    pub fn jbd2_buffer_busy(&self, p: Pfn) -> bool {
        if self.journal.jh.is_empty() {
            return false;
        }
        let Some(bdev) = self.buffers.bdev_ino else {
            return false;
        };
        match self.rmap.owner(self.mm.map[p as usize].owner) {
            (Owner::File { ino, .. }, block) if ino == bdev => self.journal.jh.contains_key(&block),
            _ => false,
        }
    }

    /// A commit has completed (j_commit_sequence advances; j_wait_done_commit's waiters,
    /// a sync(2) among them, wake).
    fn jbd2_commit_done(&mut self) {
        self.journal.commit_sequence = self.journal.tid;
        self.wake_up_sync_waiters();
    }
}

/// The journal's commit thread (kjournald2).
#[derive(Debug, Default)]
pub struct Kjournald2 {
    /// Set while it waits for its journal write.
    waiting: bool,
}

impl Program<Kernel> for Kjournald2 {
    /// Commits when the running transaction is `commit` seconds old (its timer) or full,
    /// then sleeps until the next transaction's timer.
    fn step(&mut self, cx: &mut StepCtx<Kernel>) -> StepOut {
        let k = &mut *cx.k;
        let now = cx.now;
        let interval = k.ext4_commit_interval();
        if self.waiting {
            // The journal write is done: the commit is complete (wake_up(&j_wait_done_commit)).
            k.jbd2_commit_done();
        }
        self.waiting = false;
        let due = k.journal.running_start.is_some_and(|t| now >= t + interval)
            || k.journal.running.len() as u64 >= JOURNAL_BLOCKS / 4
            || k.journal.commit_request > k.journal.tid;
        if due {
            let done = k.jbd2_journal_commit_transaction();
            k.mm.cur.acc = k.mm.cur.acc.max(1);
            if done > now {
                self.waiting = true;
                k.sleep_until(done);
            } else {
                k.jbd2_commit_done();
            }
            return StepOut {
                user_ns: 0,
                next: Step::Run,
            };
        }
        let wake_in = match k.journal.running_start {
            Some(t) => (t + interval).saturating_sub(now).max(1),
            None => interval,
        };
        StepOut {
            user_ns: 0,
            next: Step::Block {
                wq: k.journal.wq.unwrap_or(usize::MAX),
                timeout: Some(wake_in),
            },
        }
    }
}
