//! Sizes and durations written the way people write them: `"8GiB"`, `"100ms"`.

use serde::{Deserialize, Deserializer};
use std::fmt;

/// A size in bytes, read from `"8GiB"`, `"512MiB"`, `"64KiB"`, `"4096"` or a bare integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Bytes(pub u64);

/// A duration in simulated nanoseconds, read from `"10s"`, `"100ms"`, `"50us"`, `"20ns"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Nanos(pub u64);

/// At most 60 characters of a user's text, then `…` (a 1 MB value is not echoed whole).
fn clip(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Parses a size such as `"8GiB"`; decimal (`"1.5GiB"`) is allowed, SI units (`"1GB"`) are powers of ten.
pub fn parse_size(s: &str) -> Result<u64, String> {
    read_size(s).map_err(|e| clipped(e, s))
}

/// A message about `s` with `s` (and its unit part) clipped to 60 characters.
fn clipped(msg: String, s: &str) -> String {
    if s.chars().count() <= 60 {
        return msg;
    }
    let t = s.trim();
    let unit = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '_');
    msg.replace(s, &clip(s))
        .replace(unit.trim(), &clip(unit.trim()))
}

/// [`parse_size`] with the whole text in its messages.
fn read_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!("'{s}' is not a size (expected e.g. \"8GiB\")"));
    }
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        u => {
            return Err(format!(
                "unknown size unit '{u}' in '{s}' (use B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (expected e.g. \"8GiB\")"))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes >= 2f64.powi(63) {
        return Err(format!("size '{s}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a duration such as `"100ms"` into nanoseconds; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    read_duration(s).map_err(|e| clipped(e, s))
}

/// [`parse_duration`] with the whole text in its messages.
fn read_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!("'{s}' is not a duration (expected e.g. \"100ms\")"));
    }
    let mult: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "min" | "m" => 60e9,
        "h" => 3600e9,
        u => {
            return Err(format!(
                "unknown time unit '{u}' in '{s}' (use ns, us, ms, s, min, h)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (expected e.g. \"100ms\")"))?;
    let ns = v * mult;
    if !ns.is_finite() || ns >= 2f64.powi(63) {
        return Err(format!("duration '{s}' is too large"));
    }
    Ok(ns.round() as u64)
}

/// Reads a size: a whole number of bytes or a string with a unit.
struct SizeVisitor;

impl serde::de::Visitor<'_> for SizeVisitor {
    type Value = Bytes;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a size such as \"8GiB\" or a number of bytes")
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bytes, E> {
        Ok(Bytes(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bytes, E> {
        u64::try_from(v)
            .map(Bytes)
            .map_err(|_| E::custom(format!("size {v} is negative")))
    }
    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Bytes, E> {
        Err(E::custom(format!(
            "size {f} must be an integer number of bytes or a string like \"8GiB\""
        )))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Bytes, E> {
        parse_size(s).map(Bytes).map_err(E::custom)
    }
}

/// Reads a duration: a string with a unit.
struct DurationVisitor;

impl serde::de::Visitor<'_> for DurationVisitor {
    type Value = Nanos;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration such as \"100ms\" or \"2s\"")
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Nanos, E> {
        Err(E::custom(
            "a duration needs a unit, e.g. \"100ms\" or \"2s\"",
        ))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Nanos, E> {
        Err(E::custom(
            "a duration needs a unit, e.g. \"100ms\" or \"2s\"",
        ))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Nanos, E> {
        Err(E::custom(
            "a duration needs a unit, e.g. \"100ms\" or \"2s\"",
        ))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Nanos, E> {
        parse_duration(s).map(Nanos).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl serde::Serialize for Nanos {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if v >= 1 << shift && v.is_multiple_of(1 << shift) {
                return write!(f, "{}{}", v >> shift, unit);
            }
        }
        write!(f, "{v}B")
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        for (div, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
            if v >= div && v.is_multiple_of(div) {
                return write!(f, "{}{}", v / div, unit);
            }
        }
        write!(f, "{v}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert!(parse_size("8 parsecs")
            .unwrap_err()
            .contains("unknown size unit"));
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("1e99").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100ms").unwrap(), 100_000_000);
        assert_eq!(parse_duration("2").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration("1.5us").unwrap(), 1_500);
        assert!(parse_duration("3 fortnights").is_err());
    }

    #[test]
    fn long_text_is_clipped_in_messages() {
        let long = format!("1{}", "x".repeat(1_000_000));
        let e = parse_size(&long).unwrap_err();
        assert!(e.len() < 300, "{}", e.len());
        assert!(e.contains('…'), "{e}");
        let e = parse_duration(&long).unwrap_err();
        assert!(e.len() < 300 && e.contains('…'), "{e}");
    }

    #[test]
    fn display_round_trips() {
        for s in ["8GiB", "512MiB", "4KiB", "123B"] {
            assert_eq!(Bytes(parse_size(s).unwrap()).to_string(), s);
        }
        for s in ["10s", "100ms", "5us", "7ns"] {
            assert_eq!(Nanos(parse_duration(s).unwrap()).to_string(), s);
        }
    }
}
