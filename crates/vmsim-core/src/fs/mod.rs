//! What the kernel's fs/ does with memory: the /proc files that are not
//! mm/vmstat.c's, the buffer cache (fs/buffer.c), ext4's metadata (fs/ext4) and
//! its journal (fs/jbd2), and XFS's metadata buffers (fs/xfs).

pub mod buffer;
pub mod drop_caches;
pub mod ext4;
pub mod ext4_es;
pub mod files;
pub mod jbd2;
pub mod meminfo;
pub mod xfs;
