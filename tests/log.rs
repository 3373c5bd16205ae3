//! `ctxfold log`: every session once, newest first, from the store and from disk, with where each
//! is; its filters; bad input; the pager only where a person reads.

mod common;
mod homes;

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;

use common::Env;
use homes::json_lines;
use serde_json::Value;

/// `log --json`, one object per session.
fn log(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["log", "--json"];
    all.extend_from_slice(args);
    json_lines(&env.run("ctxfold", all).ok().stdout)
}

fn ids(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn log_lists_every_folded_session_once_newest_first_and_agrees_with_ls() {
    homes::each_set(|env, homes| {
        env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
        let entries = log(&env, &[]);
        let listed = ids(&entries);
        let unique: HashSet<&String> = listed.iter().collect();
        assert_eq!(unique.len(), listed.len(), "a session twice: {listed:?}");
        let ls: HashSet<String> = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout)
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(unique, ls.iter().collect(), "log and ls disagree");
        let placed: HashSet<&String> = homes.sessions.iter().map(|s| &s.id).collect();
        assert_eq!(unique, placed);
        let dates: Vec<&str> = entries
            .iter()
            .map(|e| e["date"].as_str().expect("every fixture has timestamps"))
            .collect();
        assert!(
            dates.windows(2).all(|w| w[0] >= w[1]),
            "not newest first: {dates:?}"
        );
        for entry in &entries {
            assert_eq!(entry["state"], "folded", "{entry}");
            let placed = homes.get(entry["id"].as_str().unwrap());
            assert_eq!(entry["bytes"], placed.bytes.len() as u64, "{entry}");
            assert!(matches!(entry["agent"].as_str(), Some("codex" | "pi")));
        }
        // One line each, in the same order, each naming its session by a prefix that is unique.
        let text = env.run("ctxfold", ["log"]).ok().stdout_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), listed.len(), "{text}");
        for (line, id) in lines.iter().zip(&listed) {
            let short = line.split_whitespace().nth(3).unwrap();
            assert!(id.starts_with(short) && short.len() >= 8, "{line} for {id}");
            assert_eq!(
                listed
                    .iter()
                    .filter(|other| other.starts_with(short))
                    .count(),
                1
            );
            assert!(line.contains("folded"), "{line}");
        }
        // The newest first, then the filters.
        assert_eq!(ids(&log(&env, &["-n", "2"])), listed[..2]);
        for agent in ["codex", "pi"] {
            let only = log(&env, &["--agent", agent]);
            assert!(only.iter().all(|e| e["agent"] == agent));
            let expected = entries.iter().filter(|e| e["agent"] == agent).count();
            assert_eq!(only.len(), expected);
        }
        let newest = dates[0];
        assert_eq!(ids(&log(&env, &["--since", newest])), listed[..1]);
        assert!(log(&env, &["--since", "2999-01-01"]).is_empty());
        assert_eq!(log(&env, &["--since", "1970-01-01"]).len(), listed.len());
        let cwd = entries
            .iter()
            .find_map(|e| e["cwd"].as_str())
            .unwrap()
            .to_string();
        let under = log(&env, &["--cwd", &cwd]);
        assert!(!under.is_empty());
        assert!(under.iter().all(|e| e["cwd"] == cwd.as_str()));
        assert!(log(&env, &["--cwd", &format!("{cwd}-not")]).is_empty());
    });
}

#[test]
fn log_marks_what_is_folded_grown_only_stored_or_only_on_disk() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let active: Vec<_> = homes.active().cloned().collect();
    let (grown, gone, new) = (&active[0], &active[1], &active[2]);
    // Not folded: moved out of the home while fold runs.
    let aside = env.path("aside.jsonl");
    fs::rename(&new.path, &aside).unwrap();
    env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
    fs::rename(&aside, &new.path).unwrap();
    // Grown: its last line again, as an agent appends.
    let last = grown
        .bytes
        .split(|&b| b == b'\n')
        .rfind(|l| !l.is_empty())
        .unwrap();
    let mut more = grown.bytes.clone();
    if !more.ends_with(b"\n") {
        more.push(b'\n');
    }
    more.extend_from_slice(last);
    more.push(b'\n');
    fs::write(&grown.path, &more).unwrap();
    // Stored: its source removed.
    fs::remove_file(&gone.path).unwrap();

    let entries = log(&env, &[]);
    let state = |id: &str| {
        let entry = entries.iter().find(|e| e["id"] == id).unwrap();
        entry["state"].as_str().unwrap().to_string()
    };
    assert_eq!(state(&grown.id), "grown");
    assert_eq!(state(&gone.id), "stored");
    assert_eq!(state(&new.id), "new");
    let grown_entry = entries
        .iter()
        .find(|e| e["id"] == grown.id.as_str())
        .unwrap();
    assert_eq!(
        grown_entry["bytes"],
        more.len() as u64,
        "the size on disk now"
    );
    assert_eq!(entries.len(), homes.sessions.len());
    let others = homes
        .sessions
        .iter()
        .filter(|s| ![&grown.id, &gone.id, &new.id].contains(&&s.id));
    for other in others {
        assert_eq!(state(&other.id), "folded", "{}", other.id);
    }
    // A session folded by its path, outside the homes: on disk while its file is there.
    let outside = env.path("outside.jsonl");
    fs::copy(
        common::own_fixture(common::own::PI_V1_MODEL_CHANGES),
        &outside,
    )
    .unwrap();
    env.run(
        "ctxfold",
        ["fold", "--apply", "-q", outside.to_str().unwrap()],
    )
    .ok();
    let outside_id = "0f1d0000-0000-4000-8000-000000000005";
    let state_of = |env: &Env| {
        let entries = log(env, &[]);
        let entry = entries.iter().find(|e| e["id"] == outside_id).unwrap();
        entry["state"].as_str().unwrap().to_string()
    };
    assert_eq!(state_of(&env), "folded");
    let mut longer = fs::read(&outside).unwrap();
    longer.extend_from_slice(b"{\"type\":\"custom\"}\n");
    fs::write(&outside, &longer).unwrap();
    assert_eq!(state_of(&env), "grown");
    fs::remove_file(&outside).unwrap();
    assert_eq!(state_of(&env), "stored");
    env.run("ctxfold", ["rm", "--apply", "-q", outside_id]).ok();

    // Works from the store alone: no agent homes at all.
    fs::remove_dir_all(&homes.codex).unwrap();
    fs::remove_dir_all(&homes.pi).unwrap();
    let alone = log(&env, &[]);
    assert_eq!(
        alone.len(),
        homes.sessions.len() - 1,
        "all but the one never folded"
    );
    assert!(alone.iter().all(|e| e["state"] == "stored"));
    assert!(
        alone
            .iter()
            .all(|e| e["date"].is_string() && e["agent"].is_string())
    );
}

#[test]
fn bad_input_is_one_line_and_the_right_status() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["log", "--since", "yesterday"])
        .fails(2)
        .one_line_error("bad DATE \"yesterday\"");
    env.run("ctxfold", ["log", "--agent", "gemini"]).fails(2);
    env.run("ctxfold", ["log", "-n", "x"]).fails(2);
    // No store yet: the sessions on disk, all new.
    let entries = log(&env, &[]);
    assert_eq!(entries.len(), homes.sessions.len());
    assert!(entries.iter().all(|e| e["state"] == "new"));
    // A damaged manifest: the others are listed, the damage said in one error, status 4.
    env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
    let victim = &homes.sessions[0].id;
    let manifest = env.store.join("manifests").join(format!("{victim}.json"));
    let bytes = fs::read(&manifest).unwrap();
    fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();
    let run = env.run("ctxfold", ["log", "--json"]).fails(4);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("ctxfold log: error: ") && run.stderr.contains(victim.as_str()),
        "{}",
        run.stderr
    );
    let listed = ids(&json_lines(&run.stdout));
    assert_eq!(listed.len(), homes.sessions.len() - 1);
    assert!(!listed.contains(victim));
}

#[test]
fn the_pager_and_colours_are_only_for_a_terminal() {
    let mut env = Env::new();
    homes::build(&mut env, homes::sets().remove(0));
    env.set("CTXFOLD_PAGER", "sed 's/^/paged: /'");
    // Not a terminal: neither pager nor colour.
    let piped = env.run("ctxfold", ["log"]).ok().stdout_text();
    assert!(
        !piped.contains("paged: ") && !piped.contains('\x1b'),
        "{piped}"
    );
    // On a terminal: through the pager, coloured.
    let on_terminal = |env: &Env, args: &str| {
        let run = env.on_terminal(&format!("$BIN/ctxfold log {args}"))?;
        Some(run.ok().stdout_text())
    };
    let Some(paged) = on_terminal(&env, "") else {
        eprintln!("no script(1): the terminal half is skipped");
        return;
    };
    assert_eq!(
        paged.matches("paged: ").count(),
        piped.lines().count(),
        "{paged}"
    );
    assert!(paged.contains('\x1b'), "no colour: {paged}");
    let unpaged = on_terminal(&env, "--no-pager --color never").unwrap();
    assert!(
        !unpaged.contains("paged: ") && !unpaged.contains('\x1b'),
        "{unpaged}"
    );
    env.set("CTXFOLD_PAGER", "");
    env.set("PAGER", "sed 's/^/paged: /'");
    let unset = on_terminal(&env, "").unwrap();
    assert!(
        !unset.contains("paged: "),
        "an empty CTXFOLD_PAGER is no pager: {unset}"
    );
}

#[test]
fn help_names_the_three_agent_homes() {
    let help = Env::new()
        .run("ctxfold", ["log", "--help"])
        .ok()
        .stdout_text();
    let words = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("($CODEX_HOME, $PI_CODING_AGENT_DIR, $CLAUDE_CONFIG_DIR)"),
        "{help}"
    );
}

#[test]
fn the_ends_cache_changes_nothing_log_says_and_a_damaged_one_is_read_again() {
    homes::each_set(|env, homes| {
        env.run(
            "ctxfold",
            ["fold", "--apply", "-q", "--remove-source", "--allow-active"],
        )
        .ok();
        let cache = env.store.join("cache/ends.jsonl");
        assert!(!cache.exists());
        let first = log(&env, &[]);
        let kept = fs::read_to_string(&cache).unwrap();
        assert_eq!(kept.lines().count(), homes.sessions.len(), "{kept}");
        assert_eq!(log(&env, &[]), first, "the cache changed what log says");
        fs::write(&cache, "{\"sha256\": not json\n").unwrap();
        assert_eq!(
            log(&env, &[]),
            first,
            "a damaged cache changed what log says"
        );
        assert_eq!(fs::read_to_string(&cache).unwrap(), kept);
        // A session removed from the store leaves the cache with it.
        let gone = &homes.sessions[0].id;
        env.run("ctxfold", ["rm", "--apply", gone]).ok();
        log(&env, &[]);
        assert_eq!(
            fs::read_to_string(&cache).unwrap().lines().count(),
            homes.sessions.len() - 1
        );
    });
}

#[test]
fn a_file_unchanged_since_its_fold_is_taken_from_the_store_and_one_that_changed_is_read() {
    homes::each_set(|env, homes| {
        env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
        // Packed, their heads cached by a first listing: what log and status take them from.
        env.run("ctxfold", ["gc", "--apply", "-q"]).ok();
        let status = |env: &Env| env.run("ctxfold", ["status", "--json"]).ok().stdout_text();
        let first = log(&env, &[]);
        let first_status = status(&env);
        assert_eq!(log(&env, &[]), first);
        // No stamp to vouch for any file: each is read, and they say the same.
        let stamps = env.store.join("cache/stamps.jsonl.zst");
        let kept =
            String::from_utf8(zstd::decode_all(&fs::read(&stamps).unwrap()[..]).unwrap()).unwrap();
        fs::remove_file(&stamps).unwrap();
        assert_eq!(log(&env, &[]), first);
        assert_eq!(status(&env), first_status);
        // A Pi file rewritten to open another session, its new stamp vouched for as fold vouches
        // for what it read: log and status take the stamp's word and do not read the file...
        let pi = (homes.sessions.iter())
            .find(|s| s.path.starts_with(&homes.pi))
            .unwrap();
        let last = if pi.id.ends_with('0') { "1" } else { "0" };
        let other = format!("{}{last}", &pi.id[..pi.id.len() - 1]);
        let text = String::from_utf8(pi.bytes.clone()).unwrap();
        fs::write(&pi.path, text.replace(&pi.id, &other)).unwrap();
        let meta = fs::metadata(&pi.path).unwrap();
        let vouched: String = (kept.lines())
            .map(|line| {
                let mut entry: Value = serde_json::from_str(line).unwrap();
                if entry["path"] == pi.path.to_str().unwrap() {
                    let ns = |s: i64, n: i64| s * 1_000_000_000 + n;
                    entry["size"] = meta.len().into();
                    entry["mtime_ns"] = ns(meta.mtime(), meta.mtime_nsec()).into();
                    entry["ctime_ns"] = ns(meta.ctime(), meta.ctime_nsec()).into();
                    entry["inode"] = meta.ino().into();
                    entry["device"] = meta.dev().into();
                }
                format!("{entry}\n")
            })
            .collect();
        assert!(vouched != kept, "no stamp of {}", pi.path.display());
        // (Written as an earlier ctxfold wrote the cache, uncompressed: read as well.)
        fs::write(env.store.join("cache/stamps.jsonl"), &vouched).unwrap();
        assert_eq!(log(&env, &[]), first);
        assert!(!status(&env).contains(&other));
        // ...and a stamp that no longer matches the file (its own, from the fold) has it read; the
        // compressed cache stands over the older one.
        fs::write(&stamps, zstd::encode_all(kept.as_bytes(), 3).unwrap()).unwrap();
        let listed = ids(&log(&env, &[]));
        assert!(listed.contains(&other), "{listed:?}");
        assert!(status(&env).contains(&other));
    });
}
