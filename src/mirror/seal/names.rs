//! The names files get in a sealed tree: HMAC-SHA256 of the plain path under the remote's secret,
//! as hex, split `<2 hex>/<62 hex>` so that no one tree holds every file (a commit rewrites only
//! the trees of the names that changed). Keyed, so that no one without the secret can test a
//! guessed path (a session id) against the names; deterministic, so that a path keeps its name.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The folder and file name of the plain `path` under `secret`.
pub fn name(secret: &[u8; 32], path: &str) -> (String, String) {
    keyed(secret, b"ctxfold sealed name v1\0", [path])
}

/// The folder and file name of a group of files sealed together (see `envelope`): keyed by every
/// path it holds, in order, so that the same group keeps its name and a group cannot be moved to
/// another's (nor made to look like one file: the domain differs).
pub fn group_name<'a>(
    secret: &[u8; 32],
    paths: impl IntoIterator<Item = &'a str>,
) -> (String, String) {
    keyed(secret, b"ctxfold sealed group v1\0", paths)
}

fn keyed<'a>(
    secret: &[u8; 32],
    domain: &[u8],
    paths: impl IntoIterator<Item = &'a str>,
) -> (String, String) {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    // Domain-separated, should the secret ever key anything else.
    mac.update(domain);
    for (n, path) in paths.into_iter().enumerate() {
        if n > 0 {
            // No path holds a newline (the envelope is line-based).
            mac.update(b"\n");
        }
        mac.update(path.as_bytes());
    }
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (hex[..2].to_string(), hex[2..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_keyed_and_stable() {
        let (a, b) = ([1; 32], [2; 32]);
        let one = name(&a, "manifests/s1.json");
        assert_eq!(one, name(&a, "manifests/s1.json"));
        assert_ne!(one, name(&b, "manifests/s1.json"));
        assert_ne!(one, name(&a, "manifests/s2.json"));
        assert_eq!((one.0.len(), one.1.len()), (2, 62));
        assert!(!format!("{}{}", one.0, one.1).contains("s1"));
        let group = group_name(&a, ["manifests/s1.json"]);
        assert_ne!(group, one);
        assert_eq!(group, group_name(&a, ["manifests/s1.json"]));
        assert_ne!(
            group_name(&a, ["manifests/s1.json", "manifests/s2.json"]),
            group
        );
    }
}
