//! Naming folded sessions: the ids of the sessions a store holds now (`manifests/<id>.json`, loose
//! or packed; not generations or conflicts), and a session named as git names a commit, by its id or by a unique
//! prefix of it.
//!
//! Every command that names a folded session resolves it here, so each takes what the others take
//! and says the same when a prefix is ambiguous.
//!
//! Not for: generations (`ID@N`, see `generations::resolve`) or sessions that are only on disk.

use super::{Store, check_session_id};
use crate::error::{Error, Result, Status};
use crate::files::entry_names;

/// How many candidates an ambiguous prefix's message names.
const SHOWN: usize = 5;

impl Store {
    /// The ids of the sessions folded in this store, sorted.
    pub fn session_ids(&self) -> Result<Vec<String>> {
        let loose = entry_names(&self.manifests_dir())?
            .into_iter()
            .filter(|name| !name.starts_with('.'))
            .filter_map(|name| name.strip_suffix(".json").map(str::to_string))
            .filter(|id| check_session_id(id).is_ok() && self.manifest_path(id).is_file());
        let table = self.packed()?;
        let packed = (table.iter())
            .filter_map(|(name, _)| name.strip_suffix(".json").filter(|id| !id.contains('/')))
            .map(str::to_string);
        let mut ids: Vec<String> = loose.chain(packed).collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The folded session `spec` names: its full id, or a prefix of exactly one id.
    pub fn resolve_session(&self, spec: &str) -> Result<String> {
        check_session_id(spec)?;
        if self.has_manifest(spec) {
            return Ok(spec.to_string());
        }
        resolve_prefix(spec, &self.session_ids()?).map_err(|e| match e {
            Unresolved::None => Error::not_found(format!(
                "no folded session {spec:?} in {} ('ctxfold ls' lists them)",
                crate::cli::human::path(self.root())
            )),
            Unresolved::Ambiguous(message) => Error::usage(message),
        })
    }

    /// The manifest of the folded session `spec` names (see [`Store::resolve_session`]).
    pub fn load_named_manifest(&self, spec: &str) -> Result<super::manifest::Manifest> {
        self.load_manifest(&self.resolve_session(spec)?)
    }

    /// [`Store::resolve_session`], for a command that also acts on what the store keeps of a
    /// session no longer folded (generations, a seed index): `spec` itself when it names no folded
    /// session but `held(spec)` says the store keeps something of it, by its whole id.
    pub fn resolve_session_held(
        &self,
        spec: &str,
        held: impl FnOnce(&str) -> Result<bool>,
    ) -> Result<String> {
        match self.resolve_session(spec) {
            Err(e) if e.status() == Status::Negative && held(spec)? => Ok(spec.to_string()),
            resolved => resolved,
        }
    }
}

/// Why a prefix names no single id.
#[derive(Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// No id starts with it.
    None,
    /// Several do: the message says which.
    Ambiguous(String),
}

/// The one id of `ids` that is `spec` or starts with it.
pub fn resolve_prefix(spec: &str, ids: &[String]) -> std::result::Result<String, Unresolved> {
    if let Some(exact) = ids.iter().find(|id| *id == spec) {
        return Ok(exact.clone());
    }
    let matching: Vec<&String> = ids.iter().filter(|id| id.starts_with(spec)).collect();
    match matching.as_slice() {
        [] => Err(Unresolved::None),
        [one] => Ok((*one).clone()),
        many => {
            let shown: Vec<&str> = many.iter().take(SHOWN).map(|id| id.as_str()).collect();
            let more = match many.len().saturating_sub(SHOWN) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            Err(Unresolved::Ambiguous(format!(
                "session id prefix {spec:?} is ambiguous: it matches {} sessions: {}{more}",
                many.len(),
                shown.join(", ")
            )))
        }
    }
}

/// The shortest length, at least `min`, at which every id of `ids` is told apart from the others
/// by its prefix (git's abbreviated ids): a prefix that long names one session.
pub fn unique_prefix_len(ids: &[&str], min: usize) -> usize {
    let mut sorted: Vec<&str> = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    sorted
        .windows(2)
        .map(|pair| common(pair[0], pair[1]) + 1)
        .fold(min, usize::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn prefixes_name_one_session_or_say_which_they_match() {
        let known = ids(&["019c8a4c-ed82", "019c8a70-dda7", "01a2", "01a2-x"]);
        assert_eq!(
            resolve_prefix("019c8a7", &known),
            Ok("019c8a70-dda7".into())
        );
        // A full id that is also a prefix of another is that id.
        assert_eq!(resolve_prefix("01a2", &known), Ok("01a2".into()));
        assert_eq!(resolve_prefix("ff", &known), Err(Unresolved::None));
        let Err(Unresolved::Ambiguous(message)) = resolve_prefix("019c8a", &known) else {
            panic!("not ambiguous");
        };
        assert_eq!(
            message,
            "session id prefix \"019c8a\" is ambiguous: it matches 2 sessions: 019c8a4c-ed82, 019c8a70-dda7"
        );
        let many: Vec<String> = (0..7).map(|i| format!("ab{i}")).collect();
        let Err(Unresolved::Ambiguous(message)) = resolve_prefix("ab", &many) else {
            panic!("not ambiguous");
        };
        assert!(
            message.ends_with("ab0, ab1, ab2, ab3, ab4 and 2 more"),
            "{message}"
        );
    }

    #[test]
    fn unique_prefixes_grow_until_ids_part() {
        assert_eq!(
            unique_prefix_len(&["01a22ec3-195e", "01a22ec3-2142"], 8),
            10
        );
        assert_eq!(unique_prefix_len(&["0a", "1b"], 8), 8);
        assert_eq!(unique_prefix_len(&["same", "same"], 2), 2);
    }
}
