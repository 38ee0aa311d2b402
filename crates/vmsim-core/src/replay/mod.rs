//! Replay of recorded data: page-access traces through the page cache and LRU
//! (`access`, formats in `trace_access`) and kmem page events through the page
//! allocator (`kmem`), read from plain, gzip or zstd files (`input`).

pub mod access;
pub mod input;
pub mod kmem;
pub mod trace_access;
