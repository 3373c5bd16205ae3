//! hash-object and cat-object: names agree with sha256sum, batch output agrees with git's format.

mod common;

use std::fs;
use std::process::Command;

use common::Env;

fn sha256sum(path: &std::path::Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum is installed");
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn hash_object_agrees_with_sha256sum() {
    let env = Env::new();
    let mut files = common::fixture_files();
    let empty = env.path("empty");
    fs::write(&empty, b"").unwrap();
    files.push(empty);
    let expected: Vec<String> = files.iter().map(|f| sha256sum(f)).collect();
    let out = env.run("ctxfold-hash-object", &files).ok();
    assert_eq!(out.stdout_text().lines().collect::<Vec<_>>(), expected);
    assert!(!env.store.exists(), "hashing without -w wrote a store");
    let paths: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
    let out = env
        .run_with_stdin("ctxfold-hash-object", ["--stdin-paths"], paths.as_bytes())
        .ok();
    assert_eq!(out.stdout_text().lines().collect::<Vec<_>>(), expected);
    let bytes = fs::read(&files[0]).unwrap();
    let out = env
        .run_with_stdin("ctxfold-hash-object", ["--stdin"], &bytes)
        .ok();
    assert_eq!(out.stdout_text().trim(), expected[0]);
}

#[test]
fn written_objects_read_back_verified() {
    let env = Env::new();
    let file = &common::fixture_files()[0];
    let sha = env
        .run("ctxfold-hash-object", ["-w".as_ref(), file.as_os_str()])
        .ok()
        .stdout_text()
        .trim()
        .to_string();
    let object = env
        .store
        .join("objects")
        .join(&sha[..2])
        .join(format!("{sha}.zst"));
    assert!(object.exists());
    let original = fs::read(file).unwrap();
    assert_eq!(
        env.run("ctxfold-cat-object", ["-p", &sha]).ok().stdout,
        original
    );
    assert_eq!(
        env.run("ctxfold-cat-object", ["-s", &sha])
            .ok()
            .stdout_text()
            .trim(),
        original.len().to_string()
    );
    assert!(
        env.run("ctxfold-cat-object", ["-e", &sha])
            .ok()
            .stdout
            .is_empty()
    );
    let missing = "0".repeat(64);
    let run = env.run("ctxfold-cat-object", ["-e", &missing]).fails(1);
    assert!(run.stderr.is_empty() && run.stdout.is_empty());
    env.run("ctxfold-cat-object", ["-p", &missing])
        .fails(1)
        .one_line_error(&format!("object {missing} is missing"));
    env.run("ctxfold-cat-object", ["-p", "XYZ"])
        .fails(2)
        .one_line_error("not an object name");
    env.run("ctxfold-cat-object", [&sha]).fails(2);
}

#[test]
fn batch_output_agrees_with_git_cat_file() {
    let env = Env::new();
    let contents: [&[u8]; 3] = [b"", b"hello\n", b"no newline \xff binary\x00 bytes"];
    let git_dir = env.path("repo.git");
    assert!(
        Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&git_dir)
            .status()
            .unwrap()
            .success()
    );
    let (mut ours_in, mut git_in, mut ours_want, mut git_want) =
        (String::new(), String::new(), Vec::new(), Vec::new());
    for (i, bytes) in contents.iter().enumerate() {
        let path = env.path(&format!("c{i}"));
        fs::write(&path, bytes).unwrap();
        let sha = env
            .run("ctxfold-hash-object", ["-w", path.to_str().unwrap()])
            .ok()
            .stdout_text()
            .trim()
            .to_string();
        let git = Command::new("git")
            .arg("--git-dir")
            .arg(&git_dir)
            .args(["hash-object", "-w"])
            .arg(&path)
            .output()
            .unwrap();
        let git_sha = String::from_utf8(git.stdout).unwrap().trim().to_string();
        ours_in.push_str(&format!("{sha}\n"));
        git_in.push_str(&format!("{git_sha}\n"));
        ours_want.push(sha);
        git_want.push(git_sha);
    }
    ours_in.push_str(&format!("{}\n", "f".repeat(64)));
    git_in.push_str(&format!("{}\n", "f".repeat(40)));
    for mode in ["--batch", "--batch-check"] {
        let ours = env
            .run_with_stdin("ctxfold-cat-object", [mode], ours_in.as_bytes())
            .ok()
            .stdout;
        let mut git_cmd = Command::new("git");
        git_cmd
            .arg("--git-dir")
            .arg(&git_dir)
            .args(["cat-file", mode]);
        git_cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = git_cmd.spawn().unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), git_in.as_bytes()).unwrap();
        drop(child.stdin.take());
        let mut git = child.wait_with_output().unwrap().stdout;
        // Same format once git's sha1 names are swapped for our sha256 names.
        for (g, o) in git_want.iter().zip(&ours_want) {
            git = replace(&git, g.as_bytes(), o.as_bytes());
        }
        git = replace(&git, "f".repeat(40).as_bytes(), "f".repeat(64).as_bytes());
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&git),
            "{mode}"
        );
    }
}

fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let env = Env::new();
    let file = &common::fixture_files()[0];
    let mut child = env
        .command("ctxfold-split")
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
}

#[test]
fn a_full_disk_is_an_error() {
    if !std::path::Path::new("/dev/full").exists() {
        panic!("/dev/full is needed for this test");
    }
    let env = Env::new();
    let file = &common::fixture_files()[0];
    let out = env
        .command("ctxfold-split")
        .arg(file)
        .stdout(fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("write to stdout: No space left on device")
    );
}
