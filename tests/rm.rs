//! `ctxfold rm`: a session folded by mistake taken out, every version of it; its objects left to gc.

mod common;
mod homes;

use std::fs;
use std::io::Write;

use common::Env;
use homes::json_lines;

#[test]
fn rm_takes_every_version_of_a_session_out_and_gc_its_objects() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let gone = homes
        .active()
        .find(|s| s.path.to_str().unwrap().contains("/rollout-"))
        .unwrap();
    // A generation (it grew), a conflict kept by sync, and its seed index.
    fs::OpenOptions::new()
        .append(true)
        .open(&gone.path)
        .unwrap()
        .write_all(b"{\"type\":\"event_msg\",\"payload\":{\"more\":1}}\n")
        .unwrap();
    env.run("ctxfold", ["fold", "--apply", gone.path.to_str().unwrap()])
        .ok();
    let conflicts = env.store.join("manifests/conflicts");
    fs::create_dir_all(&conflicts).unwrap();
    let conflict = conflicts.join(format!("{}@0123456789ab.json", gone.id));
    fs::copy(
        env.store.join(format!("manifests/{}.json", gone.id)),
        &conflict,
    )
    .unwrap();
    assert!(!env.stored_seed_index(&env.store, &gone.id).is_empty());
    // A file the context-fold extension kept of it (a handoff), carried into the store.
    let extension = env.store.join("context-fold").join(&gone.id);
    fs::create_dir_all(&extension).unwrap();
    fs::write(extension.join("handoff.md"), "next: ship it\n").unwrap();
    let others_seeds: Vec<String> = homes
        .sessions
        .iter()
        .filter(|s| s.id != gone.id)
        .map(|s| env.stored_seed_index(&env.store, &s.id))
        .collect();

    let before = Env::snapshot(&env.store);
    let run = env.run("ctxfold", ["rm", &gone.id]).ok();
    assert_eq!(
        run.stdout_text(),
        format!(
            "would remove {}: manifest, 1 generation, 1 conflict, seed index\n",
            gone.id
        )
    );
    assert!(run.stderr.contains("dry run"), "{}", run.stderr);
    assert_eq!(Env::snapshot(&env.store), before);

    let run = env
        .run(
            "ctxfold",
            ["rm", "--apply", "--json", &gone.id, "no-such-session"],
        )
        .fails(1);
    let line = &json_lines(&run.stdout)[0];
    assert_eq!(line["removed"], true);
    assert_eq!(line["generations"], 1);
    assert!(
        run.stderr.contains("no folded session \"no-such-session\""),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("ctxfold gc --apply"), "{}", run.stderr);
    assert!(
        !env.store
            .join(format!("manifests/{}.json", gone.id))
            .exists()
    );
    assert!(
        !env.store
            .join("manifests/generations")
            .join(&gone.id)
            .exists()
    );
    assert!(!conflict.exists() && !extension.exists());
    assert_eq!(env.stored_seed_index(&env.store, &gone.id), "");
    let catalog = fs::read_to_string(env.store.join("seeds/catalog.jsonl")).unwrap();
    assert!(!catalog.contains(&gone.id), "{catalog}");
    let kept: Vec<String> = homes
        .sessions
        .iter()
        .filter(|s| s.id != gone.id)
        .map(|s| env.stored_seed_index(&env.store, &s.id))
        .collect();
    assert_eq!(kept, others_seeds);
    let listed = env.run("ctxfold", ["ls"]).ok().stdout_text();
    assert!(!listed.contains(&gone.id), "{listed}");
    env.run("ctxfold", ["restore", &gone.id, "--to", "x"])
        .fails(1);

    // Its objects are unreferenced now, and gc removes them; every other session still restores.
    let fsck = env.run("ctxfold", ["fsck"]).ok().stdout_text();
    assert!(!fsck.contains(" 0 unreferenced"), "{fsck}");
    env.run("ctxfold", ["gc", "--apply", "--prune=now"]).ok();
    let fsck = env.run("ctxfold", ["fsck", "--full"]).ok().stdout_text();
    assert!(fsck.starts_with("0 problems, 0 unreferenced"), "{fsck}");
    for placed in homes.sessions.iter().filter(|s| s.id != gone.id) {
        let run = env.run("ctxfold-cat-manifest", [&placed.id]).ok();
        assert!(run.stdout == placed.bytes, "{} differs", placed.id);
    }
    // Its source is never touched.
    assert!(gone.path.exists());
    env.run("ctxfold", ["rm", "../x"])
        .fails(2)
        .one_line_error("unsafe session id");
}

/// As git warns before it drops the last reference to commits: a session whose source is gone has
/// its only copy here.
#[test]
fn rm_warns_when_the_store_holds_the_only_copy() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let mut active = homes.active();
    let (gone, kept) = (active.next().unwrap(), active.next().unwrap());
    fs::remove_file(&gone.path).unwrap();

    let dry = env.run("ctxfold", ["rm", &gone.id, &kept.id]).ok();
    let warned: Vec<&str> = dry
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", dry.stderr);
    assert!(warned[0].contains(&gone.id), "{}", dry.stderr);
    assert!(
        warned[0].contains("is gone: the store holds its only copy")
            && warned[0].contains(&format!("ctxfold restore {}", gone.id)),
        "{}",
        dry.stderr
    );

    let applied = env.run("ctxfold", ["rm", "--apply", "--json", &gone.id, &kept.id]);
    let applied = applied.ok();
    assert!(
        applied.stderr.contains("was gone: that was its only copy")
            && applied.stderr.contains("ctxfold sync"),
        "{}",
        applied.stderr
    );
    let lines = json_lines(&applied.stdout);
    assert_eq!(lines[0]["source_gone"], true);
    assert_eq!(lines[1]["source_gone"], false);
}

/// `ls`, `log`, `stats`, `grep`, `fsck`, `seeds` and `restore --all` run while sessions are
/// removed one after another take what stays and say no error: a session removed between the
/// listing of the store and the reading of its manifest is gone, not broken.
#[test]
fn commands_of_every_session_beside_an_rm_take_what_stays_without_an_error() {
    let env = Env::new();
    let dir = env.path("sessions");
    common::small_sessions(&dir, 120);
    let ids: Vec<String> = (0..120).map(common::small_id).collect();
    env.run("ctxfold", ["fold", "--apply", "-q", dir.to_str().unwrap()])
        .ok();
    let removing = std::thread::scope(|scope| {
        let remover = scope.spawn(|| {
            for id in &ids[..100] {
                env.run("ctxfold", ["rm", "--apply", "-q", id]).ok();
            }
        });
        let mut listings = 0;
        while !remover.is_finished() {
            let to = env.path(&format!("restored-{listings}/"));
            let commands: [&[&str]; 7] = [
                &["ls"],
                &["log"],
                &["stats"],
                &["grep", "-l", "-F", "session"],
                &["fsck"],
                &["seeds"],
                &["restore", "--all", "--to", to.to_str().unwrap()],
            ];
            for command in commands {
                let run = env.run("ctxfold", command);
                assert_eq!(run.code, Some(0), "{command:?}: {}", run.stderr);
                listings += 1;
            }
        }
        remover.join().unwrap();
        listings
    });
    assert!(removing > 0);
    let listed = env.run("ctxfold", ["ls", "--json"]).ok().stdout_text();
    assert_eq!(listed.lines().count(), 20);
}
