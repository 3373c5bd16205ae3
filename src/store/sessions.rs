//! The sessions a store holds, by id: the ids of its current manifests, and the one session a
//! unique prefix of an id names, as git names a commit by a prefix of its hash.
//!
//! Not for: what a manifest says (`manifest`), or earlier versions (`generations`).

use super::{Store, check_session_id, entry_names};
use crate::error::{Error, Result};

/// How many of an ambiguous prefix's sessions the error lists.
const LISTED: usize = 8;

impl Store {
    /// The ids of the sessions folded in this store (current manifests: not generations or
    /// conflicts), sorted.
    pub fn session_ids(&self) -> Result<Vec<String>> {
        let mut ids: Vec<String> = entry_names(&self.manifests_dir())?
            .into_iter()
            .filter_map(|name| Some(name.strip_suffix(".json")?.to_string()))
            .filter(|id| check_session_id(id).is_ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The session `prefix` names: the session with that exact id, else the only one whose id
    /// starts with it. None is a negative answer (exit 1); several are a usage error (exit 2)
    /// that lists them.
    pub fn resolve_session(&self, prefix: &str) -> Result<String> {
        check_session_id(prefix)?;
        if self.has_manifest(prefix) {
            return Ok(prefix.to_string());
        }
        let matches: Vec<String> = self
            .session_ids()?
            .into_iter()
            .filter(|id| id.starts_with(prefix))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::not_found(format!(
                "no folded session {prefix:?} in {} ('ctxfold ls' lists them)",
                crate::cli::human::path(self.root())
            ))),
            many => {
                let mut listed = many[..many.len().min(LISTED)].join(", ");
                if many.len() > LISTED {
                    listed.push_str(&format!(" and {} more", many.len() - LISTED));
                }
                Err(Error::usage(format!(
                    "session id prefix {prefix:?} is ambiguous: {} sessions match: {listed}",
                    many.len()
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn a_unique_prefix_names_its_session_and_an_ambiguous_one_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path().join("s")).unwrap();
        for id in ["019c8a4d-aaaa", "019c8a4e-bbbb", "019c8a4e-cccc", "x"] {
            std::fs::write(store.manifest_path(id), "{}").unwrap();
        }
        std::fs::write(store.manifests_dir().join(".tmp.json"), "").unwrap();
        assert_eq!(
            store.session_ids().unwrap(),
            ["019c8a4d-aaaa", "019c8a4e-bbbb", "019c8a4e-cccc", "x"]
        );
        assert_eq!(store.resolve_session("019c8a4d").unwrap(), "019c8a4d-aaaa");
        assert_eq!(store.resolve_session("x").unwrap(), "x");
        let ambiguous = store.resolve_session("019c8a4e").unwrap_err();
        assert_eq!(ambiguous.status(), Status::Usage);
        assert!(
            ambiguous
                .to_string()
                .ends_with("2 sessions match: 019c8a4e-bbbb, 019c8a4e-cccc"),
            "{ambiguous}"
        );
        assert_eq!(
            store.resolve_session("02").unwrap_err().status(),
            Status::Negative
        );
        assert_eq!(
            store.resolve_session("../x").unwrap_err().status(),
            Status::Usage
        );
    }
}
