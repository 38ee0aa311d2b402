//! Trace files as byte streams: plain, gzip or zstd, told apart by their magic
//! numbers and decompressed while they are read, in constant memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

/// Bytes read from the file at a time.
const BUF_BYTES: usize = 1 << 20;

/// The compression of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Uncompressed.
    None,
    /// gzip (RFC 1952), possibly several members.
    Gzip,
    /// Zstandard, possibly several frames.
    Zstd,
}

/// Which compression the first bytes of a file announce.
pub fn sniff(head: &[u8]) -> Compression {
    if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// A zstd stream of one or more frames, decoded as one byte stream.
struct ZstdFrames<R: Read> {
    /// The decoder of the current frame; None once the input is exhausted.
    dec: Option<ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>>,
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(dec) = self.dec.as_mut() else {
                return Ok(0);
            };
            let n = dec.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // End of a frame: another one may follow.
            let mut inner = self.dec.take().expect("checked above").into_inner();
            if inner.fill_buf()?.is_empty() {
                return Ok(0);
            }
            let next = ruzstd::decoding::StreamingDecoder::new(inner)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            self.dec = Some(next);
        }
    }
}

/// Opens a trace file for reading, decompressing gzip and zstd on the fly; a
/// message naming the problem when it cannot be opened.
pub fn open(path: &str) -> Result<(Box<dyn BufRead>, Compression), String> {
    let f = File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(format!("cannot read {path}: it is a directory"));
    }
    let mut r = BufReader::with_capacity(BUF_BYTES, f);
    let head = r
        .fill_buf()
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    let c = sniff(head);
    let out: Box<dyn BufRead> = match c {
        Compression::None => Box::new(r),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF_BYTES,
            flate2::bufread::MultiGzDecoder::new(r),
        )),
        Compression::Zstd => {
            let dec = ruzstd::decoding::StreamingDecoder::new(r)
                .map_err(|e| format!("{path}: not a readable zstd stream: {e}"))?;
            Box::new(BufReader::with_capacity(
                BUF_BYTES,
                ZstdFrames { dec: Some(dec) },
            ))
        }
    };
    Ok((out, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_name_the_compression() {
        assert_eq!(sniff(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
        assert_eq!(sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0]), Compression::Zstd);
        assert_eq!(sniff(b"1,2,3\n"), Compression::None);
        assert_eq!(sniff(b""), Compression::None);
    }

    #[test]
    fn gzip_is_read_through() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("vmsim-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b"hello\nworld\n").unwrap();
        std::fs::write(&p, e.finish().unwrap()).unwrap();
        let (mut r, c) = open(p.to_str().unwrap()).unwrap();
        assert_eq!(c, Compression::Gzip);
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello\nworld\n");
        assert!(open(dir.join("missing").to_str().unwrap()).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
