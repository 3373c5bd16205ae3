//! Segmentation (fold-v1): a byte stream becomes an ordered list of field and residual parts
//! whose concatenation is the input, byte for byte, whatever the input.
//!
//! Per line (up to and including `\n`), a line that is one valid JSON value and no longer than
//! `max_json_line_bytes` gives a field part for every string value (never a key) whose raw token is
//! at least `field_threshold` bytes. All other bytes form one residual stream per file, cut by
//! FastCDC v2020, flushed before every field and at the end. Memory is bounded by the longest line
//! (capped by `max_json_line_bytes`) plus a constant, whatever the size of the input.
//!
//! Pure functions over bytes: this module knows nothing of the store or of sessions.

pub mod cdc;
pub mod scan;

use std::io::{self, BufRead};

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::error::{Error, Result};
use cdc::GapChunker;
use scan::{Field, Scanner};

/// The segmentation settings, recorded in every manifest exactly as the contract names them,
/// plus `dictionary` (ours) when new objects were written with a zstd dictionary.
///
/// A reader refuses any key it does not know, since an unknown setting may change how the objects
/// must be read; the reference implementation's `record_threshold` (a fold-v2 writer setting
/// that does not change fold-v1 reads) is the one tolerated and dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SettingsOnDisk")]
pub struct Settings {
    pub field_threshold: u64,
    pub max_json_line_bytes: u64,
    pub cdc_min_bytes: u64,
    pub cdc_average_bytes: u64,
    pub cdc_max_bytes: u64,
    pub compression: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dictionary: Option<Digest>,
}

/// What a manifest's `settings` may hold.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsOnDisk {
    field_threshold: u64,
    max_json_line_bytes: u64,
    cdc_min_bytes: u64,
    cdc_average_bytes: u64,
    cdc_max_bytes: u64,
    compression: String,
    #[serde(default)]
    dictionary: Option<Digest>,
    #[serde(default, rename = "record_threshold")]
    _record_threshold: Option<serde::de::IgnoredAny>,
}

impl From<SettingsOnDisk> for Settings {
    fn from(d: SettingsOnDisk) -> Self {
        Self {
            field_threshold: d.field_threshold,
            max_json_line_bytes: d.max_json_line_bytes,
            cdc_min_bytes: d.cdc_min_bytes,
            cdc_average_bytes: d.cdc_average_bytes,
            cdc_max_bytes: d.cdc_max_bytes,
            compression: d.compression,
            dictionary: d.dictionary,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            field_threshold: 4096,
            max_json_line_bytes: 32 * 1024 * 1024,
            cdc_min_bytes: 4096,
            cdc_average_bytes: 16384,
            cdc_max_bytes: 65536,
            compression: "zstd".into(),
            dictionary: None,
        }
    }
}

impl Settings {
    /// What a reader needs: a compression it can decode.
    pub fn check_readable(&self) -> Result<()> {
        if self.compression != "zstd" {
            return Err(Error::usage(format!(
                "unsupported compression {:?} (ctxfold reads \"zstd\")",
                self.compression
            )));
        }
        Ok(())
    }

    /// Whether `other` cuts bytes into the same parts (the dictionary objects are written with
    /// does not matter).
    pub fn same_segmentation(&self, other: &Settings) -> bool {
        Settings {
            dictionary: None,
            ..self.clone()
        } == Settings {
            dictionary: None,
            ..other.clone()
        }
    }

    /// What a writer needs: sizes FastCDC v2020 accepts (even, within its bounds, min ≤ avg ≤ max).
    pub fn check_writable(&self) -> Result<()> {
        use fastcdc::v2020::{
            AVERAGE_MAX, AVERAGE_MIN, MAXIMUM_MAX, MAXIMUM_MIN, MINIMUM_MAX, MINIMUM_MIN,
        };
        self.check_readable()?;
        let sizes = [
            (
                "cdc_min_bytes",
                self.cdc_min_bytes,
                MINIMUM_MIN,
                MINIMUM_MAX,
            ),
            (
                "cdc_average_bytes",
                self.cdc_average_bytes,
                AVERAGE_MIN,
                AVERAGE_MAX,
            ),
            (
                "cdc_max_bytes",
                self.cdc_max_bytes,
                MAXIMUM_MIN,
                MAXIMUM_MAX,
            ),
        ];
        for (name, value, low, high) in sizes {
            if value % 2 != 0 || value < low as u64 || value > high as u64 {
                return Err(Error::usage(format!(
                    "{name} = {value}: FastCDC v2020 needs an even size in {low}..={high}"
                )));
            }
        }
        if !(self.cdc_min_bytes <= self.cdc_average_bytes
            && self.cdc_average_bytes <= self.cdc_max_bytes)
        {
            return Err(Error::usage(
                "the CDC sizes must satisfy min <= average <= max",
            ));
        }
        if self.field_threshold == 0 || self.max_json_line_bytes == 0 {
            return Err(Error::usage(
                "field_threshold and max_json_line_bytes must be positive",
            ));
        }
        Ok(())
    }
}

/// One part as the segmenter cuts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind<'a> {
    Residual,
    /// `json_path` is `None` for a line that is one bare string.
    Field {
        json_path: Option<&'a str>,
    },
}

/// Where parts go, in order.
pub trait PartSink {
    fn part(&mut self, kind: PartKind<'_>, bytes: &[u8]) -> Result<()>;
}

/// The size and sha256 of a stream of parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub bytes: u64,
    pub sha256: Digest,
}

/// Segment everything `input` yields into `sink`; returns how many bytes that was. Read errors
/// name `what`.
pub fn segment(
    settings: &Settings,
    input: &mut dyn BufRead,
    what: &str,
    sink: &mut dyn PartSink,
) -> Result<u64> {
    settings.check_writable()?;
    let mut segmenter = Segmenter::new(settings, sink);
    let mut bytes = 0;
    let read_error = |e: io::Error| Error::system(format!("read {what}"), e);
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e)),
        };
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        segmenter.feed(buf)?;
        input.consume(n);
        bytes += n as u64;
    }
    segmenter.finish()?;
    Ok(bytes)
}

/// The per-line state machine behind [`segment`].
struct Segmenter<'s> {
    threshold: u64,
    max_line: usize,
    sink: &'s mut dyn PartSink,
    chunker: GapChunker,
    scanner: Scanner,
    fields: Vec<Field>,
    /// The line being gathered (never more than `max_line` bytes).
    line: Vec<u8>,
    /// The current line outgrew `max_line`: its bytes go straight to the residual stream.
    overlong: bool,
}

impl<'s> Segmenter<'s> {
    fn new(settings: &Settings, sink: &'s mut dyn PartSink) -> Self {
        Self {
            threshold: settings.field_threshold,
            max_line: usize::try_from(settings.max_json_line_bytes).unwrap_or(usize::MAX),
            sink,
            chunker: GapChunker::new(
                settings.cdc_min_bytes as usize,
                settings.cdc_average_bytes as usize,
                settings.cdc_max_bytes as usize,
            ),
            scanner: Scanner::default(),
            fields: Vec::new(),
            line: Vec::new(),
            overlong: false,
        }
    }

    fn feed(&mut self, mut buf: &[u8]) -> Result<()> {
        while !buf.is_empty() {
            let (piece, ends_line) = match memchr::memchr(b'\n', buf) {
                Some(at) => (&buf[..=at], true),
                None => (buf, false),
            };
            buf = &buf[piece.len()..];
            if self.overlong {
                self.residual(piece)?;
            } else if self.line.len() + piece.len() > self.max_line {
                // Too long to parse: everything gathered so far and the rest of the line is residual.
                self.overlong = true;
                let gathered = std::mem::take(&mut self.line);
                self.residual(&gathered)?;
                self.residual(piece)?;
                self.line = gathered;
                self.line.clear();
            } else {
                self.line.extend_from_slice(piece);
            }
            if ends_line {
                self.end_line()?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.end_line()?;
        let sink = &mut *self.sink;
        self.chunker
            .flush(&mut |c: &[u8]| sink.part(PartKind::Residual, c))
    }

    fn end_line(&mut self) -> Result<()> {
        if self.overlong {
            self.overlong = false;
            return Ok(());
        }
        if self.line.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        self.fields.clear();
        let mut fields = std::mem::take(&mut self.fields);
        let result = self.emit_line(&line, &mut fields);
        self.fields = fields;
        self.line = line;
        self.line.clear();
        result
    }

    fn emit_line(&mut self, line: &[u8], fields: &mut Vec<Field>) -> Result<()> {
        if !self.scanner.scan(line, self.threshold, fields) {
            fields.clear();
        }
        let mut at = 0;
        for field in fields.iter() {
            self.residual(&line[at..field.start])?;
            let sink = &mut *self.sink;
            self.chunker
                .flush(&mut |c: &[u8]| sink.part(PartKind::Residual, c))?;
            let kind = PartKind::Field {
                json_path: field.json_path.as_deref(),
            };
            self.sink.part(kind, &line[field.start..field.end])?;
            at = field.end;
        }
        self.residual(&line[at..])
    }

    fn residual(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let sink = &mut *self.sink;
        self.chunker
            .push(bytes, &mut |c: &[u8]| sink.part(PartKind::Residual, c))
    }
}

/// A sink that keeps every part in memory: for tests and small inputs.
#[derive(Debug, Default)]
pub struct CollectParts(pub Vec<(Option<Option<String>>, Vec<u8>)>);

impl PartSink for CollectParts {
    fn part(&mut self, kind: PartKind<'_>, bytes: &[u8]) -> Result<()> {
        let field = match kind {
            PartKind::Residual => None,
            PartKind::Field { json_path } => Some(json_path.map(str::to_string)),
        };
        self.0.push((field, bytes.to_vec()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(settings: &Settings, input: &[u8]) -> CollectParts {
        let mut parts = CollectParts::default();
        let bytes = segment(settings, &mut &input[..], "input", &mut parts).unwrap();
        assert_eq!(bytes, input.len() as u64);
        let joined: Vec<u8> = parts.0.iter().flat_map(|p| p.1.clone()).collect();
        assert_eq!(joined, input, "parts must concatenate to the input");
        assert!(parts.0.iter().all(|p| !p.1.is_empty()), "no empty parts");
        parts
    }

    fn small() -> Settings {
        Settings {
            field_threshold: 10,
            ..Settings::default()
        }
    }

    #[test]
    fn large_strings_become_fields_and_the_rest_residual() {
        let input = b"{\"a\":\"0123456789\",\"b\":\"short\"}\n[\"0123456789abc\"]\n";
        let parts = split(&small(), input);
        let kinds: Vec<_> = parts
            .0
            .iter()
            .map(|p| (p.0.clone(), String::from_utf8_lossy(&p.1).into_owned()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (None, "{\"a\":".into()),
                (Some(Some("/a".into())), "\"0123456789\"".into()),
                (None, ",\"b\":\"short\"}\n[".into()),
                (Some(Some("/0".into())), "\"0123456789abc\"".into()),
                (None, "]\n".into()),
            ]
        );
    }

    #[test]
    fn invalid_and_odd_lines_are_all_residual() {
        for input in [
            &b""[..],
            b"no newline",
            b"{\"a\":\"01234567890\"}{\"b\":\"01234567890\"}\n",
            b"{\"a\":\"01234567890\"\n",
            b"\xff\xfe\n\n\n",
        ] {
            let parts = split(&small(), input);
            assert!(
                parts.0.iter().all(|p| p.0.is_none()),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn crlf_and_a_last_line_without_newline_still_parse() {
        let input = b"{\"a\":\"0123456789\"}\r\n{\"b\":\"0123456789\"}";
        let parts = split(&small(), input);
        assert_eq!(parts.0.iter().filter(|p| p.0.is_some()).count(), 2);
    }

    #[test]
    fn a_bare_string_line_is_a_field_without_a_path() {
        let parts = split(&small(), b"\"0123456789\"\n");
        assert_eq!(parts.0[0], (Some(None), b"\"0123456789\"".to_vec()));
    }

    #[test]
    fn the_line_limit_counts_the_newline_and_exactly_the_limit_is_parsed() {
        let line = b"{\"a\":\"0123456789\"}\n";
        let len = line.len() as u64;
        let at_limit = Settings {
            max_json_line_bytes: len,
            ..small()
        };
        assert_eq!(
            split(&at_limit, line)
                .0
                .iter()
                .filter(|p| p.0.is_some())
                .count(),
            1
        );
        let below = Settings {
            max_json_line_bytes: len - 1,
            ..small()
        };
        assert!(split(&below, line).0.iter().all(|p| p.0.is_none()));
        // The next line is parsed again after an overlong one.
        let two = [&line[..], &line[..8], b"\n", &line[..]].concat();
        let parts = split(&at_limit, &two);
        assert_eq!(parts.0.iter().filter(|p| p.0.is_some()).count(), 2);
    }

    #[test]
    fn residual_bytes_are_one_stream_across_lines() {
        // Many small lines, no fields: cut by CDC, not at line ends.
        let input: Vec<u8> = (0..20_000)
            .flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes())
            .collect();
        let parts = split(&Settings::default(), &input);
        assert!(parts.0.len() < 20, "{} parts", parts.0.len());
    }

    #[test]
    fn settings_outside_fastcdc_bounds_are_refused() {
        let odd = Settings {
            cdc_min_bytes: 4097,
            ..Settings::default()
        };
        assert!(odd.check_writable().is_err());
        let inverted = Settings {
            cdc_min_bytes: 65536,
            cdc_max_bytes: 4096,
            ..Settings::default()
        };
        assert!(inverted.check_writable().is_err());
        let other = Settings {
            compression: "lz4".into(),
            ..Settings::default()
        };
        assert!(other.check_readable().is_err());
    }
}
