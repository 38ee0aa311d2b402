//! What the kernel's fs/ does with memory: the /proc files that are not
//! mm/vmstat.c's, the buffer cache (fs/buffer.c), ext4's metadata (fs/ext4) and
//! its journal (fs/jbd2), XFS's metadata buffers (fs/xfs), and sync(2) (fs/sync.c).

pub mod buffer;
pub mod drop_caches;
pub mod ext4;
pub mod ext4_es;
pub mod files;
pub mod jbd2;
pub mod meminfo;
pub mod sync;
pub mod xfs;

use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::Gfp;

/// The directory and the name in it of a path.
pub fn split_path(name: &str) -> (&str, &str) {
    match name.rfind('/') {
        Some(i) => (&name[..i], &name[i + 1..]),
        None => ("", name),
    }
}

impl Kernel {
    /// Runs `f` with a file's name lent out of its inode and put back after (a create's
    /// steps read the name while they change the kernel).
    pub fn with_file_name<R>(&mut self, ino: u32, f: impl FnOnce(&mut Kernel, &str) -> R) -> R {
        let name = std::mem::take(&mut self.inodes[ino as usize].name);
        let r = f(self, &name);
        self.inodes[ino as usize].name = name;
        r
    }

    /// One object of a reclaimable cache on its shrinker's LRU (d_alloc, alloc_inode_sb,
    /// xfs_inode_alloc); returns its slab.
    pub fn cached_object(&mut self, c: usize, tid: TaskId, gfp: Gfp) -> Result<u32, AllocResult> {
        let obj = self.slab_alloc_object(c, tid, gfp)?;
        self.slab.lru_add(c, obj);
        Ok(obj.id)
    }
}
