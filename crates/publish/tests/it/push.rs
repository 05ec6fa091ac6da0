//! Pushing to real bare repositories: new branches, moved bases, conflicts, failed validation, and a
//! non-fast-forward rejection that gets rebased.

use std::cell::Cell;
use std::path::PathBuf;
use std::time::Duration;

use driftback_publish::{Author, Credentials, GitRepo, PublishError, Remote, RetryPolicy};

use crate::{MAIN_TF, Setup, git};

fn no_wait() -> RetryPolicy {
    RetryPolicy { attempts: 2, first_delay: Duration::ZERO, max_delay: Duration::ZERO }
}

fn remote(setup: &Setup) -> Remote {
    Remote::new(&setup.remote_url(), Credentials::None, no_wait()).unwrap()
}

/// Commit `main.tf` = `content` on the clone's HEAD, as the pipeline does.
fn change(repo: &GitRepo, content: &str, local_branch: &str) -> git2::Oid {
    let base = repo.head_commit().unwrap();
    let changes = vec![(PathBuf::from("main.tf"), Some(content.to_string()))];
    repo.commit_on_branch(base, local_branch, &changes, "drift: change", &Author::default()).unwrap().1
}

fn parses(files: &[driftback_publish::FileChange]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for (path, content) in files {
        let text = content.as_deref().unwrap_or_default();
        if text.matches('{').count() != text.matches('}').count() {
            return Err(format!("{} has unbalanced braces", path.display()).into());
        }
    }
    Ok(())
}

#[test]
fn a_new_branch_is_pushed_as_is_and_the_working_tree_is_untouched() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let large = MAIN_TF.replace("t3.medium", "t3.large");
    let commit = change(&repo, &large, "driftback/web");
    let mut validated = 0;
    let pushed = remote(&setup)
        .push_change(&repo, commit, "driftback/web", "main", &mut |_: &[_]| {
            validated += 1;
            Ok(())
        })
        .unwrap();
    assert!(pushed.created && !pushed.already_there);
    assert_eq!(pushed.commit, commit);
    assert_eq!(pushed.rebased_onto, None);
    assert_eq!(validated, 0, "nothing replayed, nothing to re-validate");
    assert_eq!(git(&setup.remote, &["rev-parse", "driftback/web"]), commit.to_string());
    assert_eq!(std::fs::read_to_string(setup.work.join("main.tf")).unwrap(), MAIN_TF);
    assert_eq!(git(&setup.work, &["status", "--porcelain"]), "");

    // Pushing the same change again finds it there and pushes nothing.
    let again = remote(&setup).push_change(&repo, commit, "driftback/web", "main", &mut parses).unwrap();
    assert!(again.already_there);
    // So is the same change committed again by a run that stopped before recording it.
    let changes = vec![(PathBuf::from("main.tf"), Some(large.clone()))];
    let base = repo.head_commit().unwrap();
    let (_, same) = repo.commit_on_branch(base, "driftback/web", &changes, "drift: again", &Author::default()).unwrap();
    assert_ne!(same, commit);
    let again = remote(&setup).push_change(&repo, same, "driftback/web", "main", &mut parses).unwrap();
    assert!(again.already_there);
    assert_eq!(git(&setup.remote, &["rev-parse", "driftback/web"]), commit.to_string(), "no empty commit");
}

#[test]
fn a_moved_base_gets_the_change_replayed_onto_it_and_validated_again() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    setup.teammate_pushes("main", "main", "outputs.tf", "output \"x\" {\n  value = 1\n}\n");
    let new_base = git(&setup.remote, &["rev-parse", "main"]);

    let mut seen: Vec<PathBuf> = Vec::new();
    let pushed = remote(&setup)
        .push_change(&repo, commit, "driftback/web", "main", &mut |files: &[_]| {
            seen.extend(files.iter().map(|(p, _)| p.clone()));
            parses(files)
        })
        .unwrap();
    assert_eq!(pushed.rebased_onto.map(|o| o.to_string()), Some(new_base.clone()));
    assert_eq!(seen, [PathBuf::from("main.tf")], "the replayed change's files are validated");
    assert_eq!(git(&setup.remote, &["rev-parse", "driftback/web^"]), new_base);
    assert!(setup.remote_file("driftback/web", "main.tf").contains("t3.large"));
    assert!(setup.remote_file("driftback/web", "outputs.tf").contains("output"));
    let message = git(&setup.remote, &["log", "-1", "--format=%B", "driftback/web"]);
    assert_eq!(message, "drift: change", "the replayed commit keeps its message");
}

#[test]
fn a_base_that_changed_the_same_lines_is_a_conflict_and_nothing_is_pushed() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    setup.teammate_pushes("main", "main", "main.tf", &MAIN_TF.replace("t3.medium", "m5.large"));
    let err = remote(&setup).push_change(&repo, commit, "driftback/web", "main", &mut parses).unwrap_err();
    assert!(matches!(err, PublishError::RebaseConflict { .. }), "{err}");
    assert!(err.to_string().contains("main.tf") && err.to_string().contains("planned again"), "{err}");
    assert!(git(&setup.remote, &["branch", "--list", "driftback/web"]).is_empty());
}

#[test]
fn a_replayed_change_that_no_longer_validates_is_not_pushed() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    setup.teammate_pushes("main", "main", "outputs.tf", "# moved\n");
    let err = remote(&setup)
        .push_change(&repo, commit, "driftback/web", "main", &mut |_: &[_]| Err("main.tf: does not parse".into()))
        .unwrap_err();
    assert!(matches!(err, PublishError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("does not parse"), "{err}");
    assert!(git(&setup.remote, &["branch", "--list", "driftback/web"]).is_empty());
}

#[test]
fn a_push_rejected_as_non_fast_forward_is_rebased_onto_what_won_and_pushed() {
    let setup = Setup::create();
    // The resource's branch already exists with a teammate's fix on it.
    setup.teammate_pushes("driftback/web", "main", "variables.tf", "variable \"a\" {}\n");
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");

    // Between driftback's look at the remote and its push, the teammate pushes again.
    let raced = Cell::new(false);
    let mut validations = 0;
    let pushed = remote(&setup)
        .push_change(&repo, commit, "driftback/web", "main", &mut |files: &[_]| {
            validations += 1;
            if !raced.replace(true) {
                setup.teammate_pushes("driftback/web", "driftback/web", "locals.tf", "locals {}\n");
            }
            parses(files)
        })
        .unwrap();
    assert_eq!(pushed.rejections, 1, "the first push lost the race and was rejected");
    assert_eq!(validations, 2, "each replay is validated");
    assert!(!pushed.created);
    let tip = git(&setup.remote, &["rev-parse", "driftback/web"]);
    assert_eq!(tip, pushed.commit.to_string());
    assert_eq!(git(&setup.remote, &["log", "-1", "--format=%s", "driftback/web^"]), "teammate edits locals.tf");
    for file in ["variables.tf", "locals.tf"] {
        assert!(!setup.remote_file("driftback/web", file).is_empty(), "{file} kept");
    }
    assert!(setup.remote_file("driftback/web", "main.tf").contains("t3.large"));
}

#[test]
fn a_later_change_on_the_same_branch_wins_where_both_changed_a_line() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let first = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web-1");
    remote(&setup).push_change(&repo, first, "driftback/web", "main", &mut parses).unwrap();
    // The second change set is planned from the base again: instance_type is t3.medium there.
    let second_text = MAIN_TF.replace("t3.medium", "t3.xlarge").replace("ami-123", "ami-456");
    let second = change(&repo, &second_text, "driftback/web-2");
    let pushed = remote(&setup).push_change(&repo, second, "driftback/web", "main", &mut parses).unwrap();
    assert_eq!(pushed.rebased_onto, Some(first));
    assert_eq!(setup.remote_file("driftback/web", "main.tf"), second_text.trim_end());
    assert_eq!(git(&setup.remote, &["rev-list", "--count", "main..driftback/web"]), "2");
}

#[test]
fn an_unreachable_remote_fails_after_the_retries_naming_it() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    let missing = setup.dir.path().join("gone.git").display().to_string();
    let err = Remote::new(&missing, Credentials::None, no_wait())
        .unwrap()
        .push_change(&repo, commit, "driftback/web", "main", &mut parses)
        .unwrap_err();
    assert!(err.to_string().contains("gone.git"), "{err}");
}

#[test]
fn a_missing_base_branch_is_named() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    let err = remote(&setup).push_change(&repo, commit, "driftback/web", "trunk", &mut parses).unwrap_err();
    assert!(matches!(err, PublishError::NoBaseBranch { .. }), "{err}");
    assert!(err.to_string().contains("publish.base_branch"), "{err}");
}

/// Where pushing `branch` locks the bare remote's ref, as git itself names the lock.
fn branch_lock(setup: &Setup, branch: &str) -> PathBuf {
    let lock = setup.remote.join("refs/heads").join(format!("{branch}.lock"));
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    lock
}

#[test]
fn a_branch_lock_a_push_killed_midway_left_on_a_local_remote_is_removed_by_the_next_push() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    // What a driftback killed while pushing leaves: its note of the lock, and the lock.
    let lock = branch_lock(&setup, "driftback/web");
    std::fs::write(&lock, "").unwrap();
    let in_flight = setup.work.join(".git/driftback-push-in-flight");
    std::fs::write(&in_flight, lock.to_str().unwrap()).unwrap();

    let pushed = remote(&setup).push_change(&repo, commit, "driftback/web", "main", &mut parses).unwrap();
    assert!(pushed.created);
    assert_eq!(git(&setup.remote, &["rev-parse", "driftback/web"]), commit.to_string());
    assert!(!lock.exists() && !in_flight.exists(), "the stale lock and the note are gone");
}

#[test]
fn a_branch_lock_another_writer_holds_is_retried_then_named_with_what_to_do() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = change(&repo, &MAIN_TF.replace("t3.medium", "t3.large"), "driftback/web");
    let lock = branch_lock(&setup, "driftback/web");
    std::fs::write(&lock, "").unwrap();

    let err = remote(&setup).push_change(&repo, commit, "driftback/web", "main", &mut parses).unwrap_err();
    let PublishError::PushFailed { attempts, message, .. } = &err else { panic!("{err}") };
    assert_eq!(*attempts, 2, "tried as often as the retry policy says: {err}");
    assert!(message.contains("locked for another update"), "not taken for a moved remote: {err}");
    assert!(message.contains(&lock.display().to_string()) && message.contains("remove"), "{err}");
    assert!(lock.exists(), "a lock this clone did not note is never removed");
    assert!(git(&setup.remote, &["branch", "--list", "driftback/web"]).is_empty());
}
