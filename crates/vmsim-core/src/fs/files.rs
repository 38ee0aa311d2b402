//! Files that are on the disk before the run starts (`[[file]]` tables).
//!
//! A real machine boots with files already on its filesystems, written by
//! some earlier boot, and none of their pages in the page cache. Such a file
//! is an inode with its size (i_size) and an empty address_space: its first
//! read misses and reads from the disk through readahead, as after
//! `echo 3 > /proc/sys/vm/drop_caches`.

use crate::config::FileSpec;
use crate::kernel::Kernel;
use crate::mm::page::PAGE_SIZE;

impl Kernel {
    /// Creates the files of `[[file]]` tables on the disk, uncached (the inodes an
    /// earlier boot left on the filesystem; iget of an inode with no page cached).
    pub fn create_disk_files(&mut self, files: &[FileSpec]) {
        for f in files {
            let ino = self.lookup_or_create(&f.name);
            self.inodes[ino as usize].size_pages = f.size.0.div_ceil(PAGE_SIZE);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Scenario;

    #[test]
    fn a_file_on_the_disk_is_read_from_it_on_first_read_and_from_memory_after() {
        let text = "duration = \"30s\"\n[machine]\nmemory = \"1GiB\"\ncpus = 2\n\
                    [[file]]\nname = \"data\"\nsize = \"10MiB\"\n\
                    [[task]]\nname = \"r\"\nprogram = [{ op = \"snapshot\", name = \"boot\" },\
                    { op = \"read\", file = \"data\" }, { op = \"snapshot\", name = \"first\" },\
                    { op = \"read\", file = \"data\" }, { op = \"snapshot\", name = \"second\" }]\n";
        let sc = Scenario::from_toml(text).unwrap();
        let r = crate::sim::run(&sc, &mut |_, _| {});
        let s = &r.snapshots;
        let d = |i: usize, name: &str| s[i].vmstat[name] - s[i - 1].vmstat[name];
        // Nothing of it cached at boot.
        assert_eq!(s[0].vmstat["nr_file_pages"], 0);
        // The first read brings 10 MiB in from the disk [KiB], the second none.
        assert_eq!(d(1, "pgpgin"), 10 << 10);
        assert_eq!(s[1].vmstat["nr_file_pages"], 2560);
        assert_eq!(d(2, "pgpgin"), 0);
        assert!(r.summary.elapsed_seconds > 0.0);
    }

    #[test]
    fn bad_files_are_refused_in_one_line() {
        let err = |files: &str| {
            Scenario::from_toml(&format!("[machine]\nmemory = \"1GiB\"\n{files}"))
                .unwrap_err()
                .to_string()
        };
        let dup = err("[[file]]\nname = \"a\"\nsize = 1\n[[file]]\nname = \"a\"\nsize = 2\n");
        assert!(
            dup.contains("[[file]] #2 \"a\": a file of this name is already declared"),
            "{dup}"
        );
        let big = err("[[file]]\nname = \"a\"\nsize = \"65GiB\"\n");
        assert!(
            big.contains("size: 65GiB is above the maximum 64GiB"),
            "{big}"
        );
        let key = err("[[file]]\nname = \"a\"\nsize = 1\npattern = \"x\"\n");
        assert!(key.contains("pattern"), "{key}");
        let empty = err("[[file]]\nname = \"\"\nsize = 1\n");
        assert!(
            empty.contains("name must be a non-empty file name"),
            "{empty}"
        );
        for e in [dup, big, key, empty] {
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
