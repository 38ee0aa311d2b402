//! What the kernel's fs/ shows of memory management: the /proc files that are
//! not mm/vmstat.c's.

pub mod drop_caches;
pub mod files;
pub mod meminfo;
