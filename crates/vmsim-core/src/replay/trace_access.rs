//! Page-access trace formats of libCacheSim, read as a stream of page numbers.
//!
//! - `oracleGeneral`: binary records of 24 bytes, little-endian: `u32 clock_time`,
//!   `u64 obj_id`, `u32 obj_size`, `i64 next_access_vtime` (libCacheSim's
//!   oracleGeneralBin.h); each record is one page access of `obj_id`.
//! - `vscsi`: CloudPhysics block traces, version 1 (32-byte records: `u32 sn, len,
//!   nSG; u16 cmd, ver; u64 lbn, ts`) or 2 (40 bytes: `u16 cmd, ver; u32 sn, len,
//!   nSG; u64 lbn, ts, rt`), told apart by the version in the high byte of `ver`
//!   of the first two records as libCacheSim's vscsi.h does; a request of `len`
//!   bytes at sector `lbn` (512 bytes) touches every 4 KiB page it covers.
//! - `txt`: one object id per line (decimal, or hexadecimal with `0x`).
//! - `csv`: the object id in column `obj_id_col` (1-based, as libCacheSim's
//!   `obj-id-col`), an optional header line.
//!
//! Blank lines are skipped; a line that does not parse is counted and the first
//! few are kept with their line numbers; a binary file that ends inside a record
//! ends the stream with a message.

use std::io::BufRead;

/// Lines kept as examples of what did not parse.
pub const MAX_BAD_LINES_SHOWN: usize = 5;
/// The longest text line read [bytes]; a longer one is malformed.
pub const MAX_LINE_BYTES: u64 = 64 << 10;
/// Bytes of one oracleGeneral record.
pub const ORACLE_GENERAL_BYTES: usize = 24;
/// Bytes of a vscsi version-1 record.
pub const VSCSI1_BYTES: usize = 32;
/// Bytes of a vscsi version-2 record.
pub const VSCSI2_BYTES: usize = 40;

/// A trace format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// Comma- (or `delimiter`-) separated text.
    Csv {
        /// Column of the object id, 1-based.
        obj_id_col: usize,
        /// Field separator.
        delimiter: u8,
        /// The first line is a header.
        has_header: bool,
    },
    /// One object id per line.
    Txt,
    /// libCacheSim's binary oracleGeneral.
    OracleGeneral,
    /// CloudPhysics vscsi (version 1 or 2).
    Vscsi,
}

impl Format {
    /// The format of a name as `--format` takes it.
    pub fn parse(name: &str, obj_id_col: usize, delimiter: u8, has_header: bool) -> Option<Self> {
        Some(match name {
            "csv" => Format::Csv {
                obj_id_col: obj_id_col.max(1),
                delimiter,
                has_header,
            },
            "txt" => Format::Txt,
            "oracleGeneral" => Format::OracleGeneral,
            "vscsi" => Format::Vscsi,
            _ => return None,
        })
    }
}

/// What did not parse in a trace.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BadInput {
    /// Lines (or records) that did not parse.
    pub malformed: u64,
    /// The first few: line number and text (cut to 80 characters).
    pub examples: Vec<(u64, String)>,
    /// Why the trace ended early (a truncated binary record), if it did.
    pub truncated: Option<String>,
}

impl BadInput {
    /// Counts a line that did not parse.
    fn note(&mut self, line_no: u64, text: &[u8]) {
        self.malformed += 1;
        if self.examples.len() < MAX_BAD_LINES_SHOWN {
            let s = String::from_utf8_lossy(text);
            let s: String = s.trim_end().chars().take(80).collect();
            self.examples.push((line_no, s));
        }
    }
}

/// Parses an object id as libCacheSim's txt reader does (strtoull base 0: decimal or `0x` hex).
fn parse_id(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// Reads up to `buf.len()` bytes; fewer only at the end of the stream.
fn read_full(r: &mut dyn BufRead, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Little-endian u64 at `at`.
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Little-endian u32 at `at`.
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Streams the page accesses of a trace to `f` (a page number each), counting what
/// does not parse; `f` returns false to stop early. An I/O error (a corrupt
/// compressed stream) ends the stream as a truncation.
pub fn for_each_access(
    r: &mut dyn BufRead,
    fmt: &Format,
    mut f: impl FnMut(u64) -> bool,
) -> BadInput {
    let mut bad = BadInput::default();
    let res = match fmt {
        Format::OracleGeneral => read_oracle_general(r, &mut bad, &mut f),
        Format::Vscsi => read_vscsi(r, &mut bad, &mut f),
        Format::Txt => read_lines(r, &mut bad, false, parse_id, &mut f),
        Format::Csv {
            obj_id_col,
            delimiter,
            has_header,
        } => read_lines(
            r,
            &mut bad,
            *has_header,
            |line| {
                line.split(|&b| b == *delimiter)
                    .nth(obj_id_col - 1)
                    .and_then(parse_id)
            },
            &mut f,
        ),
    };
    if let Err(e) = res {
        bad.truncated = Some(format!("the trace could not be read to its end: {e}"));
    }
    bad
}

/// oracleGeneral records, one access each.
fn read_oracle_general(
    r: &mut dyn BufRead,
    bad: &mut BadInput,
    f: &mut impl FnMut(u64) -> bool,
) -> std::io::Result<()> {
    let mut rec_no = 0u64;
    let mut chunk = vec![0u8; ORACLE_GENERAL_BYTES * 4096];
    loop {
        let n = read_full(r, &mut chunk)?;
        let whole = n / ORACLE_GENERAL_BYTES * ORACLE_GENERAL_BYTES;
        for rec in chunk[..whole].chunks_exact(ORACLE_GENERAL_BYTES) {
            rec_no += 1;
            if !f(le_u64(rec, 4)) {
                return Ok(());
            }
        }
        if n < chunk.len() {
            if n > whole {
                bad.truncated = Some(format!(
                    "truncated record {} at byte {}: {} of {ORACLE_GENERAL_BYTES} bytes",
                    rec_no + 1,
                    rec_no * ORACLE_GENERAL_BYTES as u64,
                    n - whole
                ));
            }
            return Ok(());
        }
    }
}

/// vscsi records: every 4 KiB page a request covers.
fn read_vscsi(
    r: &mut dyn BufRead,
    bad: &mut BadInput,
    f: &mut impl FnMut(u64) -> bool,
) -> std::io::Result<()> {
    let mut head = vec![0u8; VSCSI2_BYTES * 2];
    let n = read_full(r, &mut head)?;
    let version = |b: &[u8], at: usize| (u16::from_le_bytes([b[at], b[at + 1]]) >> 8) as u8;
    let size = if n >= 2 * VSCSI2_BYTES && version(&head, 2) == 2 && version(&head, 42) == 2 {
        VSCSI2_BYTES
    } else if n >= 2 * VSCSI1_BYTES && version(&head, 14) == 1 && version(&head, 46) == 1 {
        VSCSI1_BYTES
    } else {
        bad.truncated = Some(if n < 2 * VSCSI2_BYTES {
            "too short for a vscsi trace (two records are needed to tell its version)".into()
        } else {
            "not a vscsi trace: the first two records carry no vscsi version 1 or 2".into()
        });
        return Ok(());
    };
    let (len_at, lbn_at) = if size == VSCSI2_BYTES {
        (8, 16)
    } else {
        (4, 16)
    };
    let mut buf = head[..n].to_vec();
    let mut chunk = vec![0u8; size * 4096];
    let mut rec_no = 0u64;
    loop {
        let whole = buf.len() / size * size;
        for rec in buf[..whole].chunks_exact(size) {
            rec_no += 1;
            let start = le_u64(rec, lbn_at).saturating_mul(512);
            let len = le_u32(rec, len_at).max(1) as u64;
            for page in start / 4096..=(start.saturating_add(len - 1)) / 4096 {
                if !f(page) {
                    return Ok(());
                }
            }
        }
        let rest = buf[whole..].to_vec();
        let m = read_full(r, &mut chunk)?;
        if m == 0 {
            if !rest.is_empty() {
                bad.truncated = Some(format!(
                    "truncated record {} at byte {}: {} of {size} bytes",
                    rec_no + 1,
                    rec_no * size as u64,
                    rest.len()
                ));
            }
            return Ok(());
        }
        buf = rest;
        buf.extend_from_slice(&chunk[..m]);
    }
}

/// Text traces, one request per line.
fn read_lines(
    r: &mut dyn BufRead,
    bad: &mut BadInput,
    has_header: bool,
    parse: impl Fn(&[u8]) -> Option<u64>,
    f: &mut impl FnMut(u64) -> bool,
) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(256);
    let mut line_no = 0u64;
    loop {
        line.clear();
        let got = std::io::Read::take(&mut *r, MAX_LINE_BYTES).read_until(b'\n', &mut line)?;
        if got == 0 {
            return Ok(());
        }
        line_no += 1;
        if got as u64 == MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            // The rest of an over-long line, read and dropped in pieces.
            while !line.ends_with(b"\n") {
                line.clear();
                if std::io::Read::take(&mut *r, MAX_LINE_BYTES).read_until(b'\n', &mut line)? == 0 {
                    break;
                }
            }
            bad.note(line_no, b"(a line longer than 64 KiB)");
            continue;
        }
        if has_header && line_no == 1 {
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        match parse(text) {
            Some(id) => {
                if !f(id) {
                    return Ok(());
                }
            }
            None => bad.note(line_no, text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(data: &[u8], fmt: &Format) -> (Vec<u64>, BadInput) {
        let mut out = Vec::new();
        let mut r: &[u8] = data;
        let bad = for_each_access(&mut r, fmt, |id| {
            out.push(id);
            true
        });
        (out, bad)
    }

    fn oracle(recs: &[u64]) -> Vec<u8> {
        let mut v = Vec::new();
        for (i, &id) in recs.iter().enumerate() {
            v.extend_from_slice(&(i as u32).to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
            v.extend_from_slice(&4096u32.to_le_bytes());
            v.extend_from_slice(&(-1i64).to_le_bytes());
        }
        v
    }

    #[test]
    fn oracle_general_records_are_24_bytes_with_the_id_at_offset_4() {
        let (v, bad) = ids(&oracle(&[7, 1 << 40, 7]), &Format::OracleGeneral);
        assert_eq!(v, vec![7, 1 << 40, 7]);
        assert!(bad.truncated.is_none());
        let mut data = oracle(&[1, 2, 3]);
        data.truncate(24 * 2 + 10);
        let (v, bad) = ids(&data, &Format::OracleGeneral);
        assert_eq!(v, vec![1, 2]);
        assert_eq!(
            bad.truncated.as_deref(),
            Some("truncated record 3 at byte 48: 10 of 24 bytes")
        );
    }

    #[test]
    fn txt_and_csv_count_malformed_lines_with_their_numbers() {
        let (v, bad) = ids(b"1\n0x10\n\nbanana\n3\r\n", &Format::Txt);
        assert_eq!(v, vec![1, 16, 3]);
        assert_eq!(bad.malformed, 1);
        assert_eq!(bad.examples, vec![(4, "banana".to_string())]);
        let csv = Format::parse("csv", 2, b',', true).unwrap();
        let (v, bad) = ids(b"time,id\n1,5\n2,x\n3\n4,6\n", &csv);
        assert_eq!(v, vec![5, 6]);
        assert_eq!(bad.malformed, 2);
        assert_eq!(bad.examples[0].0, 3);
        assert_eq!(bad.examples[1].0, 4);
    }

    #[test]
    fn vscsi_requests_touch_every_page_they_cover() {
        let mut v2 = Vec::new();
        for (lbn, len) in [(0u64, 4096u32), (8, 8192), (1, 100)] {
            v2.extend_from_slice(&0x20u16.to_le_bytes()); // cmd
            v2.extend_from_slice(&0x0200u16.to_le_bytes()); // ver 2
            v2.extend_from_slice(&0u32.to_le_bytes()); // sn
            v2.extend_from_slice(&len.to_le_bytes());
            v2.extend_from_slice(&0u32.to_le_bytes()); // nSG
            v2.extend_from_slice(&lbn.to_le_bytes());
            v2.extend_from_slice(&0u64.to_le_bytes()); // ts
            v2.extend_from_slice(&0u64.to_le_bytes()); // rt
        }
        let (v, bad) = ids(&v2, &Format::Vscsi);
        assert_eq!(v, vec![0, 1, 2, 0]);
        assert!(bad.truncated.is_none());
        let (v, bad) = ids(&v2[..100], &Format::Vscsi);
        assert_eq!(v, vec![0, 1, 2]);
        assert!(bad.truncated.unwrap().starts_with("truncated record 3"));
        let (_, bad) = ids(&[0u8; 100], &Format::Vscsi);
        assert!(bad.truncated.unwrap().starts_with("not a vscsi trace"));
    }
}
