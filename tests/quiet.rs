//! `-q` quiets stdout's chatter too: what changed or failed is printed, not every session that is
//! up to date; and `status` counts the sessions up to date unless `-v` lists them.

mod common;
mod homes;

use std::fs;
use std::io::Write;

use common::Env;

#[test]
fn quiet_prints_only_what_changed_or_failed() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let first = env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
    let folded = first.stdout_text();
    let new = folded.lines().filter(|l| l.starts_with("new ")).count();
    assert_eq!(new, homes.sessions.len(), "{folded}");
    assert!(folded.lines().all(|l| !l.starts_with("total")), "{folded}");

    // Nothing to do: nothing said.
    let again = env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
    assert_eq!(again.stdout_text(), "");
    assert_eq!(again.stderr, "");
    let said = env.run("ctxfold", ["fold", "--apply"]).ok().stdout_text();
    assert!(said.contains("up to date"), "{said}");

    // One grown: its line alone.
    let grown = homes.active().next().unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(&grown.path)
        .unwrap()
        .write_all(b"{\"more\":1}\n")
        .unwrap();
    let one = env
        .run("ctxfold", ["-q", "fold", "--apply"])
        .ok()
        .stdout_text();
    assert_eq!(one.lines().count(), 1, "{one}");
    assert!(one.contains(&grown.id), "{one}");

    let fsck = env.run("ctxfold", ["fsck", "-q"]).ok();
    assert_eq!(
        (fsck.stdout_text().as_str(), fsck.stderr.as_str()),
        ("", "")
    );
    let said = env.run("ctxfold", ["fsck"]).ok().stdout_text();
    assert!(said.contains("0 problems"), "{said}");
}

#[test]
fn status_counts_the_sessions_up_to_date_and_lists_them_with_v() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let total = homes.sessions.len();
    let status = env.run("ctxfold", ["status"]).ok().stdout_text();
    assert_eq!(
        status,
        format!("{total} sessions up to date (-v lists them)\n")
    );
    for verbose in [["status", "-v"], ["-v", "status"]] {
        let listed = env.run("ctxfold", verbose).ok().stdout_text();
        assert_eq!(listed.lines().count(), total, "{listed}");
        assert!(
            listed.lines().all(|l| l.starts_with("up to date")),
            "{listed}"
        );
    }
    assert_eq!(env.run("ctxfold", ["status", "-q"]).ok().stdout_text(), "");
    let json = env.run("ctxfold", ["status", "--json"]).ok().stdout_text();
    assert_eq!(json.lines().count(), total);
}
