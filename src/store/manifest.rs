//! Fold V1 manifests: the serde types that write exactly the contract's JSON, the checks every
//! manifest passes before anything trusts it, and where they are read from (committing them is
//! `commit`'s job).
//!
//! Readers follow the reference implementation: unknown top-level keys (`created_at`) and
//! `settings.record_threshold` are ignored, any other unknown setting is refused (it could change
//! how objects must be read), `title`, `cwd` and `json_path` may be absent, and
//! only `version` 1 with `kind` `fold-v1` is accepted (`fold-v2` and its `record` parts are refused
//! by name).

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Store;
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};
use crate::segment::Settings;

pub const VERSION: u64 = 1;
pub const KIND: &str = "fold-v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u64,
    pub kind: String,
    pub session: Session,
    pub source: Source,
    pub settings: Settings,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub rollout_path: String,
    pub archived: bool,
    /// The source's mtime when it was folded, RFC 3339 UTC to the nanosecond
    /// (`2026-11-30T23:21:07.123456789Z`): restore sets it again, as tar and restic do, since
    /// agents sort and judge sessions by it. Not in the contract, whose readers ignore unknown keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
}

impl Session {
    /// [`Session::mtime`] as a time (`None`: absent, or not one).
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        crate::time::parse_nanos(self.mtime.as_deref()?)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub bytes: u64,
    pub sha256: Digest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    pub kind: PartKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    pub object: ObjectRef,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    Residual,
    Field,
}

impl<'de> Deserialize<'de> for PartKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let kind = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        match kind.as_ref() {
            "residual" => Ok(Self::Residual),
            "field" => Ok(Self::Field),
            "record" => Err(serde::de::Error::custom(
                "a \"record\" part belongs to fold-v2, not fold-v1",
            )),
            other => Err(serde::de::Error::custom(format!(
                "unknown part kind {other:?}"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub sha256: Digest,
    pub raw_bytes: u64,
    /// Informational (the reference implementation says so too); 0 when not yet known.
    #[serde(default)]
    pub stored_bytes: u64,
}

/// Only the two fields that decide whether the rest can be read at all.
#[derive(Deserialize)]
struct Header {
    version: Option<serde_json::Value>,
    kind: Option<serde_json::Value>,
}

impl Header {
    fn of(manifest: &Manifest) -> Self {
        Self {
            version: Some(manifest.version.into()),
            kind: Some(manifest.kind.as_str().into()),
        }
    }

    /// Refuse any version but 1 and any kind but `fold-v1`.
    fn check(&self, what: &str) -> Result<()> {
        let version = self.version.as_ref().and_then(|v| v.as_u64());
        let kind = self.kind.as_ref().and_then(|v| v.as_str());
        if version == Some(VERSION) && kind == Some(KIND) {
            return Ok(());
        }
        Err(Error::manifest_invalid(
            what,
            format!(
                "unsupported manifest version {} kind {} (ctxfold reads version 1, kind \"fold-v1\")",
                shown(&self.version),
                shown(&self.kind)
            ),
        ))
    }
}

impl Manifest {
    /// Parse and check a manifest; errors name `what` (usually the file).
    pub fn from_slice(bytes: &[u8], what: &str) -> Result<Self> {
        let invalid =
            |e: serde_json::Error| Error::manifest_invalid(what, format!("invalid manifest: {e}"));
        // Parsed once: only a manifest that does not parse is read again, for its version and
        // kind, since one that is not version 1 is refused as such whatever else it holds.
        let manifest: Manifest = match serde_json::from_slice(bytes) {
            Ok(manifest) => manifest,
            Err(e) => {
                let header: Header = serde_json::from_slice(bytes).map_err(invalid)?;
                header.check(what)?;
                return Err(invalid(e));
            }
        };
        Header::of(&manifest).check(what)?;
        manifest
            .check()
            .map_err(|e| Error::manifest_invalid(what, e.without_context()))?;
        Ok(manifest)
    }

    /// The contract's JSON, compact (any valid JSON is the contract's JSON, and compact takes a
    /// third less room than the reference's pretty-printing), with a final newline.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).expect("manifests always serialize");
        out.push(b'\n');
        out
    }

    /// What every manifest must satisfy whoever wrote it. The error says why, without naming the
    /// manifest (callers do: a stored one is corrupt, one being committed is refused).
    pub fn check(&self) -> Result<()> {
        super::check_session_id(&self.session.id)
            .map_err(|e| Error::corrupt(e.without_context()))?;
        self.settings.check_readable()?;
        let total = self
            .parts
            .iter()
            .try_fold(0u64, |sum, p| sum.checked_add(p.object.raw_bytes))
            .ok_or_else(|| Error::corrupt("part sizes overflow"))?;
        if total != self.source.bytes {
            return Err(Error::corrupt(format!(
                "parts add up to {total} bytes but the source has {}",
                self.source.bytes
            )));
        }
        Ok(())
    }
}

fn shown(value: &Option<serde_json::Value>) -> String {
    value
        .as_ref()
        .map_or_else(|| "(absent)".to_string(), |v| v.to_string())
}

impl Store {
    /// The manifest of session `id`.
    pub fn load_manifest(&self, id: &str) -> Result<Manifest> {
        self.manifest_of(id)?.ok_or_else(|| {
            Error::not_found(format!(
                "no folded session {id:?} in {}",
                self.root().display()
            ))
        })
    }

    /// The manifest of session `id`, or None when the store holds none: for a session listed a
    /// moment ago, one removed since (an `rm` at the same moment).
    pub fn manifest_of(&self, id: &str) -> Result<Option<Manifest>> {
        super::check_session_id(id)?;
        self.manifest_at(&self.manifest_path(id))
    }

    /// A manifest read from any file (not one of the store's: see [`Store::load_manifest_at`]).
    pub fn load_manifest_file(path: &Path) -> Result<Manifest> {
        let bytes = fs::read(path).with_path("read", path)?;
        Manifest::from_slice(&bytes, &path.display().to_string())
    }
}

/// A manifest of session `id` whose source is `bytes`, held whole by one residual part: what unit
/// tests elsewhere commit and read back.
#[cfg(test)]
pub fn of_one_part(id: &str, bytes: &[u8]) -> Manifest {
    let digest = Digest::of(bytes);
    let size = bytes.len() as u64;
    Manifest {
        version: VERSION,
        kind: KIND.into(),
        session: Session {
            id: id.into(),
            title: None,
            cwd: None,
            rollout_path: "/r.jsonl".into(),
            archived: false,
            mtime: None,
        },
        source: Source {
            bytes: size,
            sha256: digest,
        },
        settings: Settings::default(),
        parts: vec![Part {
            kind: PartKind::Residual,
            json_path: None,
            object: ObjectRef {
                sha256: digest,
                raw_bytes: size,
                stored_bytes: 0,
            },
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            version: 1,
            kind: KIND.into(),
            session: Session {
                id: "s1".into(),
                title: Some("t".into()),
                cwd: None,
                rollout_path: "/r.jsonl".into(),
                archived: false,
                mtime: None,
            },
            source: Source {
                bytes: 5,
                sha256: Digest::of(b"hello"),
            },
            settings: Settings::default(),
            parts: vec![Part {
                kind: PartKind::Residual,
                json_path: None,
                object: ObjectRef {
                    sha256: Digest::of(b"hello"),
                    raw_bytes: 5,
                    stored_bytes: 14,
                },
            }],
        }
    }

    /// Why `json` is refused, as a manifest named `m.json`.
    fn refusal(json: &str) -> String {
        Manifest::from_slice(json.as_bytes(), "m.json")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn writes_the_contract_shape_in_its_key_order() {
        let json = String::from_utf8(sample().to_json()).unwrap();
        let keys: Vec<usize> = [
            "\"version\"",
            "\"kind\"",
            "\"session\"",
            "\"source\"",
            "\"settings\"",
            "\"parts\"",
        ]
        .iter()
        .map(|k| json.find(k).unwrap())
        .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{json}");
        assert!(!json.contains("\"cwd\""));
        assert!(!json.contains("json_path"));
        assert!(json.contains("\"compression\":\"zstd\""));
        assert_eq!(json.lines().count(), 1);
        assert_eq!(
            Manifest::from_slice(json.as_bytes(), "m").unwrap(),
            sample()
        );
    }

    #[test]
    fn reads_reference_manifests_with_extra_keys() {
        let text = r#"{"version":1,"kind":"fold-v1","created_at":"2026-07-01T00:00:00Z",
          "session":{"id":"s","rollout_path":"/x","archived":true},
          "source":{"bytes":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
          "settings":{"field_threshold":4096,"max_json_line_bytes":33554432,"cdc_min_bytes":4096,
            "cdc_average_bytes":16384,"cdc_max_bytes":65536,"compression":"zstd","record_threshold":512},
          "parts":[]}"#;
        let m = Manifest::from_slice(text.as_bytes(), "m").unwrap();
        assert_eq!(m.session.title, None);
        assert!(m.parts.is_empty());
    }

    #[test]
    fn refuses_other_versions_kinds_and_record_parts() {
        let base = String::from_utf8(sample().to_json()).unwrap();
        let v2 = base.replace("\"version\":1", "\"version\":2");
        let err = refusal(&v2);
        assert!(
            err.starts_with("m.json: unsupported manifest version 2"),
            "{err}"
        );
        let fold_v2 = base.replace("\"fold-v1\"", "\"fold-v2\"");
        let err = refusal(&fold_v2);
        assert!(err.contains("kind \"fold-v2\""), "{err}");
        // Refused for its version whether or not the rest reads as version 1.
        let other = r#"{"kind":"fold-v2","parts":{"new":[]},"version":2}"#;
        let err = refusal(other);
        assert!(
            err.starts_with("m.json: unsupported manifest version 2 kind \"fold-v2\""),
            "{err}"
        );
        let absent = r#"{"kind":"fold-v1"}"#;
        let err = refusal(absent);
        assert!(err.contains("version (absent)"), "{err}");
        let mistyped = base.replace("\"archived\":false", "\"archived\":0");
        let err = refusal(&mistyped);
        assert!(
            err.starts_with("m.json: invalid manifest: invalid type"),
            "{err}"
        );
        let record = base.replace("\"residual\"", "\"record\"");
        let err = refusal(&record);
        assert!(err.contains("belongs to fold-v2"), "{err}");
    }

    #[test]
    fn refuses_unknown_settings_and_compressions_by_name() {
        let base = String::from_utf8(sample().to_json()).unwrap();
        let unknown = base.replace(
            "\"compression\":\"zstd\"",
            "\"compression\":\"zstd\",\"window_log\":27",
        );
        let err = refusal(&unknown);
        assert!(
            err.starts_with("m.json: invalid manifest: unknown field `window_log`"),
            "{err}"
        );
        let lz4 = base.replace("\"compression\":\"zstd\"", "\"compression\":\"lz4\"");
        let err = refusal(&lz4);
        assert!(err.contains("unsupported compression \"lz4\""), "{err}");
        let mut with = sample();
        with.settings.dictionary = Some(Digest::of(b"dictionary"));
        let json = String::from_utf8(with.to_json()).unwrap();
        assert!(
            json.contains(&format!("\"dictionary\":\"{}\"", Digest::of(b"dictionary"))),
            "{json}"
        );
        assert_eq!(Manifest::from_slice(json.as_bytes(), "m").unwrap(), with);
        let bad = json.replace(&Digest::of(b"dictionary").to_string(), "nope");
        assert!(Manifest::from_slice(bad.as_bytes(), "m").is_err());
    }

    #[test]
    fn refuses_lying_sizes_and_unsafe_ids() {
        let mut m = sample();
        m.source.bytes = 6;
        assert!(
            m.check()
                .unwrap_err()
                .to_string()
                .contains("add up to 5 bytes")
        );
        let mut m = sample();
        m.session.id = "../x".into();
        assert!(m.check().is_err());
    }
}
