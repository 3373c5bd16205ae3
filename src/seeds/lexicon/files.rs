//! The file lexicon: paths named by tool inputs (read/edit/write targets, apply_patch headers) and
//! path-shaped tokens inside output, made repo-relative when under the session's cwd.

use serde_json::Value;

use super::{Run, class, runs};

/// Extensions that make a bare name (`main.rs`) a file name.
const EXTENSIONS: &[&str] = &[
    "rs", "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "go", "java", "kt", "c", "h", "cc", "cpp",
    "hpp", "cs", "rb", "php", "swift", "sh", "bash", "zsh", "fish", "toml", "yaml", "yml", "json",
    "jsonl", "md", "txt", "html", "css", "scss", "sql", "lock", "xml", "ini", "cfg", "conf", "vue",
    "svelte", "lua", "zig", "proto", "gradle", "mk",
];

/// Argument keys that name a file a tool reads or writes.
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "file",
    "filename",
    "target_file",
];

/// The paths a tool call's arguments name.
pub fn call_paths(args: &Value, mut found: impl FnMut(&str)) {
    for key in PATH_KEYS {
        if let Some(path) = args.get(*key).and_then(Value::as_str) {
            found(path);
        }
    }
    if let Some(paths) = args.get("paths").and_then(Value::as_array) {
        paths.iter().filter_map(Value::as_str).for_each(&mut found);
    }
    // apply_patch: `*** Add File: p`, `*** Update File: p`, `*** Delete File: p`, `*** Move to: p`.
    for key in ["input", "patch"] {
        if let Some(patch) = args.get(key).and_then(Value::as_str) {
            for line in patch.lines() {
                for header in [
                    "*** Add File: ",
                    "*** Update File: ",
                    "*** Delete File: ",
                    "*** Move to: ",
                ] {
                    if let Some(path) = line.strip_prefix(header) {
                        found(path.trim());
                    }
                }
            }
        }
    }
}

/// Each path-shaped token of `text`: `/a/b`, `./a`, `../a`, `~/a`, `a/b/c`, `a/b.ext`, `name.ext`.
pub fn paths_in<'t>(text: &'t str, mut found: impl FnMut(&'t str)) {
    runs(text, class::PATH, |run| in_run(run, &mut found));
}

/// The path of one maximal run of path-shaped bytes, if it is one.
pub(super) fn in_run<'t>(run: Run<'t>, found: &mut impl FnMut(&'t str)) {
    // Without a `/` or a `.`, a plain word (most runs).
    let token = run
        .text
        .trim_end_matches(['.', '-'])
        .trim_start_matches('-');
    if run.any & class::PATH_MARK != 0 && (3..=256).contains(&token.len()) && is_path(token) {
        found(token);
    }
}

fn is_path(t: &str) -> bool {
    // Neither a `/` nor an extension's `.` (once a run's end is trimmed): never a path.
    let b = t.as_bytes();
    if !b.iter().any(|&c| c == b'/' || c == b'.')
        || !b.iter().any(u8::is_ascii_alphabetic)
        || t.contains("//")
    {
        return false;
    }
    let last = t.rsplit('/').next().unwrap_or_default();
    let has_ext = last
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
    if !t.contains('/') {
        return has_ext;
    }
    let relative_root = ["./", "../", "~/"].iter().any(|p| t.starts_with(p));
    let segments = t.split('/').filter(|s| !s.is_empty()).count();
    // `/model` is as likely a slash command as a path: a rooted path needs two segments.
    relative_root || has_ext || segments >= 3 || (t.starts_with('/') && segments >= 2)
}

/// `path` relative to `cwd` when it lies under it; else as given.
pub fn relative<'p>(path: &'p str, cwd: Option<&str>) -> &'p str {
    let Some(cwd) = cwd
        .map(|c| c.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
    else {
        return path;
    };
    match path
        .strip_prefix(cwd)
        .and_then(|rest| rest.strip_prefix('/'))
    {
        Some(rest) if !rest.is_empty() => rest,
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        paths_in(text, |p| out.push(p));
        out
    }

    #[test]
    fn path_shapes() {
        assert_eq!(
            all("see src/main.rs:12:5, ./run.sh and /etc/hosts; ~/x/y and a/b/c, README.md."),
            [
                "src/main.rs",
                "./run.sh",
                "/etc/hosts",
                "~/x/y",
                "a/b/c",
                "README.md"
            ]
        );
        assert!(all("and/or 1/2 2024/01/02 https://example.com/a w/o /model").is_empty());
    }

    #[test]
    fn relative_under_cwd_only() {
        assert_eq!(relative("/repo/src/a.rs", Some("/repo")), "src/a.rs");
        assert_eq!(
            relative("/repository/a.rs", Some("/repo")),
            "/repository/a.rs"
        );
        assert_eq!(relative("/etc/hosts", None), "/etc/hosts");
    }

    #[test]
    fn patch_headers_and_argument_keys() {
        let mut out = Vec::new();
        let args = serde_json::json!({"input": "*** Begin Patch\n*** Update File: src/a.rs\n@@\n*** Add File: b.md\n", "path": "c.rs"});
        call_paths(&args, |p| out.push(p.to_string()));
        assert_eq!(out, ["c.rs", "src/a.rs", "b.md"]);
    }
}
