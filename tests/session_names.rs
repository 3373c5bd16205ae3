//! Every command that names a folded session takes what `restore`, `show` and `diff` take: its id
//! or a unique prefix of it, and says the same of a prefix several sessions share.

mod common;

use common::{Env, own, own_fixture};

const WORK: &str = "01a22ec3-195e-7d02-bb4d-4f6fa0817a3c";
const SMALL: &str = "01a22ec3-2142-7dc0-ba9d-93c0133f1498";
const AMBIGUOUS: &str = "session id prefix \"01a22ec3\" is ambiguous: it matches 2 sessions";

/// Two Codex sessions whose ids share `01a22ec3`, folded with their seeds.
fn folded() -> Env {
    let env = Env::new();
    let work = own_fixture(own::CODEX_AGENT_WORK);
    let small = own_fixture(own::CODEX_AGENT_SMALL);
    env.run(
        "ctxfold",
        [
            "fold",
            "--apply",
            work.to_str().unwrap(),
            small.to_str().unwrap(),
        ],
    )
    .ok();
    env
}

#[test]
fn a_unique_prefix_names_a_session_in_every_command() {
    let env = folded();
    let whole = env.run("ctxfold-cat-manifest", [WORK]).ok().stdout;
    assert_eq!(
        whole,
        std::fs::read(own_fixture(own::CODEX_AGENT_WORK)).unwrap()
    );
    assert_eq!(
        env.run("ctxfold-cat-manifest", ["01a22ec3-19"]).ok().stdout,
        whole
    );

    let seeds = env.run("ctxfold-read-seeds", ["--session", WORK]).ok();
    assert!(!seeds.stdout.is_empty());
    let by_prefix = env
        .run("ctxfold-read-seeds", ["--session", "01a22ec3-19"])
        .ok();
    assert_eq!(by_prefix.stdout, seeds.stdout);

    let recall = env
        .run(
            "ctxfold",
            ["recall", "-m1", "--session", "01a22ec3-19", "."],
        )
        .ok()
        .stdout_text();
    assert!(recall.contains(&format!("## session {WORK}")), "{recall}");
    assert!(!recall.contains(SMALL), "{recall}");

    let extract = env
        .run(
            "ctxfold-extract-seeds",
            ["--final", "--session", "01a22ec3-21"],
        )
        .ok();
    assert!(!extract.stdout.is_empty());

    env.run("ctxfold", ["seeds", "01a22ec3-21"]).ok();

    let rm = env.run("ctxfold", ["rm", "--apply", "01a22ec3-21"]).ok();
    assert!(
        rm.stdout_text().contains(&format!("removed {SMALL}")),
        "{}",
        rm.stdout_text()
    );
    assert!(!env.store.join(format!("manifests/{SMALL}.json")).exists());
}

#[test]
fn an_ambiguous_prefix_is_refused_alike_everywhere() {
    let env = folded();
    let runs = [
        env.run("ctxfold-cat-manifest", ["01a22ec3"]),
        env.run("ctxfold-read-seeds", ["--session", "01a22ec3"]),
        env.run("ctxfold-extract-seeds", ["--session", "01a22ec3"]),
        env.run("ctxfold", ["recall", "--session", "01a22ec3", "."]),
        env.run("ctxfold", ["seeds", "01a22ec3"]),
        env.run("ctxfold", ["rm", "--apply", "01a22ec3", WORK]),
        env.run("ctxfold", ["restore", "01a22ec3", "--to", "-"]),
    ];
    for run in runs {
        run.fails(2).one_line_error(AMBIGUOUS);
    }
    // Nothing was removed: every name is resolved first.
    assert!(env.store.join(format!("manifests/{WORK}.json")).exists());
}

#[test]
fn a_session_not_folded_is_said_to_be_so() {
    let env = folded();
    for run in [
        env.run("ctxfold", ["recall", "--session", "0123", "."]),
        env.run("ctxfold-read-seeds", ["--session", "0123"]),
        env.run("ctxfold-cat-manifest", ["0123"]),
    ] {
        run.fails(1).one_line_error("no folded session \"0123\"");
    }
}
