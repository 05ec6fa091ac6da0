//! The daemon's working clone against real bare repositories: cloned once, refused when it is not
//! ours, recovered when half-created, locked to one process, stale git locks cleared, refreshed to
//! a base someone else moved; and a change set's commit found again by its trailer.

use std::path::{Path, PathBuf};

use driftback_publish::message::{CHANGE_SET_TRAILER, change_set_of, commit_message};
use driftback_publish::{Author, Credentials, GitRepo, PublishError, WorkingClone};

use crate::{MAIN_TF, Setup, git, story};

fn oid(rev: &str) -> git2::Oid {
    git2::Oid::from_str(rev).unwrap()
}

/// A clone of the setup's remote into a new directory under the setup's temporary directory.
fn clone_of(setup: &Setup, name: &str) -> (WorkingClone, PathBuf) {
    let dir = setup.dir.path().join(name);
    let clone = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
    (clone, dir)
}

fn branches(dir: &Path) -> String {
    git(dir, &["for-each-ref", "--format=%(refname)", "refs/heads/", "refs/remotes/"])
}

#[test]
fn a_clone_is_made_once_then_reopened() {
    let setup = Setup::create();
    let (clone, dir) = clone_of(&setup, "clone");
    assert!(clone.is_owned());
    assert_eq!(clone.path(), dir);
    assert_eq!(std::fs::read_to_string(dir.join("main.tf")).unwrap(), MAIN_TF);
    assert_eq!(git(&dir, &["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(git(&dir, &["rev-parse", "--abbrev-ref", "main@{upstream}"]), "origin/main");
    let tip = oid(&git(&setup.remote, &["rev-parse", "main"]));
    assert_eq!(clone.repo().unwrap().head_commit().unwrap(), tip);
    drop(clone);

    // Reopened, not cloned again: an untracked file left in the working tree is still there. A
    // change to a tracked file (a reset cut short) is undone, so the clone opens clean at once.
    std::fs::write(dir.join("left-here.txt"), "x").unwrap();
    std::fs::write(dir.join("main.tf"), "half a reset").unwrap();
    let again = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
    assert!(dir.join("left-here.txt").exists());
    assert_eq!(std::fs::read_to_string(dir.join("main.tf")).unwrap(), MAIN_TF);
    assert_eq!(again.repo().unwrap().head_commit().unwrap(), tip);
    assert_eq!(again.refresh().unwrap(), tip);
}

#[test]
fn a_clone_of_another_repository_is_set_aside_with_its_work_and_cloned_again() {
    let setup = Setup::create();
    // The configuration now names another repository; the old clone holds a local branch.
    let (clone, dir) = clone_of(&setup, "moved");
    drop(clone);
    git(&dir, &["branch", "driftback/unpushed"]);
    std::fs::create_dir_all(dir.join(".git/driftback")).unwrap();
    std::fs::write(dir.join(".git/driftback/kb.sqlite"), "pending change sets").unwrap();
    let other = setup.dir.path().join("other.git");
    git(setup.dir.path(), &["clone", "-q", "--bare", &setup.remote_url(), other.to_str().unwrap()]);
    let clone = WorkingClone::open_or_clone(other.to_str().unwrap(), &dir, "main", &Credentials::None).unwrap();
    assert_eq!(git(&dir, &["remote", "get-url", "origin"]), other.to_str().unwrap());
    assert!(!branches(&dir).contains("refs/heads/driftback/unpushed"));
    // Nothing lost: the old clone, with its branch, is beside it.
    let aside = setup.dir.path().join("moved.set-aside-1");
    assert!(branches(&aside).contains("refs/heads/driftback/unpushed"), "{}", aside.display());
    assert_eq!(git(&aside, &["remote", "get-url", "origin"]), setup.remote_url());
    // The daemon's own files (the default knowledge base) came into the new clone.
    assert_eq!(std::fs::read_to_string(dir.join(".git/driftback/kb.sqlite")).unwrap(), "pending change sets");
    drop(clone);

    // A half-created clone of another URL is set aside too (a second one gets the next name).
    let half = setup.dir.path().join("half-other");
    std::fs::create_dir_all(&half).unwrap();
    git(&half, &["init", "-q", "-b", "main"]);
    git(&half, &["remote", "add", "origin", "/somewhere/else.git"]);
    WorkingClone::open_or_clone(&setup.remote_url(), &half, "main", &Credentials::None).unwrap();
    assert_eq!(std::fs::read_to_string(half.join("main.tf")).unwrap(), MAIN_TF);
    assert!(setup.dir.path().join("half-other.set-aside-1/.git").exists());
}

#[test]
fn a_clone_another_process_holds_is_not_set_aside() {
    let setup = Setup::create();
    let (held, dir) = clone_of(&setup, "held");
    let err = WorkingClone::open_or_clone("/somewhere/else.git", &dir, "main", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::CloneInUse { .. }), "{err}");
    assert!(dir.join(".git").exists() && !setup.dir.path().join("held.set-aside-1").exists());
    drop(held);
}

#[test]
fn a_directory_with_files_but_no_clone_is_refused() {
    let setup = Setup::create();
    let dir = setup.dir.path().join("busy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let err = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::NotAClone { .. }), "{err}");
    assert!(err.to_string().contains("is not empty and not a clone; give an empty or new directory"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");

    // An empty directory (a fresh volume) is cloned into.
    let empty = setup.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    WorkingClone::open_or_clone(&setup.remote_url(), &empty, "main", &Credentials::None).unwrap();
    assert!(empty.join("main.tf").exists());
}

#[test]
fn a_half_created_clone_is_removed_and_cloned_again() {
    let setup = Setup::create();
    // What a clone stopped before its first checkout leaves: `.git` with origin, HEAD on no commit.
    let dir = setup.dir.path().join("half");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["remote", "add", "origin", &setup.remote_url()]);
    std::fs::write(dir.join("partial.tf"), "# half written").unwrap();
    std::fs::write(dir.join(".git/index.lock"), "").unwrap();

    let clone = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("main.tf")).unwrap(), MAIN_TF);
    assert!(!dir.join("partial.tf").exists());
    assert!(!dir.join(".git/index.lock").exists());
    let tip = oid(&git(&setup.remote, &["rev-parse", "main"]));
    assert_eq!(clone.refresh().unwrap(), tip);
    // The recovered clone is locked like any other.
    let err = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::CloneInUse { .. }), "{err}");
}

#[test]
fn a_clone_git_cannot_open_is_set_aside_and_cloned_again_keeping_driftbacks_files() {
    let setup = Setup::create();
    let (clone, dir) = clone_of(&setup, "broken");
    drop(clone);
    // The default knowledge base lives in the clone's `.git/driftback`.
    std::fs::create_dir_all(dir.join(".git/driftback")).unwrap();
    std::fs::write(dir.join(".git/driftback/kb.sqlite"), "the daemon's store").unwrap();
    // A clone killed before it wrote HEAD: git cannot open it.
    std::fs::remove_file(dir.join(".git/HEAD")).unwrap();
    assert!(git2::Repository::open(&dir).is_err());

    let clone = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
    let tip = oid(&git(&setup.remote, &["rev-parse", "main"]));
    assert_eq!(clone.repo().unwrap().head_commit().unwrap(), tip);
    assert_eq!(std::fs::read_to_string(dir.join(".git/driftback/kb.sqlite")).unwrap(), "the daemon's store");
    // What git could not read is beside it, not deleted.
    let aside = setup.dir.path().join("broken.set-aside-1");
    assert!(aside.join(".git/objects").is_dir() && !aside.join(".git/driftback").exists());
    // Locked like any other.
    let err = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::CloneInUse { .. }), "{err}");
    drop(clone);

    // One another process holds (a clone in progress) is left alone.
    std::fs::remove_file(dir.join(".git/HEAD")).unwrap();
    let held = std::fs::OpenOptions::new().write(true).open(dir.join(".git/driftback-serve.lock")).unwrap();
    held.lock().unwrap();
    let err = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::CloneInUse { .. }), "{err}");
    assert!(!setup.dir.path().join("broken.set-aside-2").exists());
}

#[test]
fn a_clone_with_branches_but_head_on_no_commit_is_set_aside_not_removed() {
    let setup = Setup::create();
    let (clone, dir) = clone_of(&setup, "orphan");
    drop(clone);
    // Someone checked out an orphan branch: the local branches are kept in the set-aside copy.
    git(&dir, &["checkout", "-q", "--orphan", "nothing-yet"]);
    let clone = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
    let tip = oid(&git(&setup.remote, &["rev-parse", "main"]));
    assert_eq!(clone.repo().unwrap().head_commit().unwrap(), tip);
    let aside = setup.dir.path().join("orphan.set-aside-1");
    assert_eq!(git(&aside, &["symbolic-ref", "HEAD"]), "refs/heads/nothing-yet");
    assert!(branches(&aside).contains("refs/heads/main"));
}

#[test]
fn a_second_process_is_refused_while_the_first_holds_the_clone() {
    let setup = Setup::create();
    let (first, dir) = clone_of(&setup, "locked");
    let err = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::CloneInUse { .. }), "{err}");
    assert!(err.to_string().contains("another driftback serve is using the working clone"), "{err}");
    assert!(!err.is_transient());
    drop(first);
    WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
}

#[test]
fn git_locks_left_by_a_stopped_predecessor_are_removed() {
    let setup = Setup::create();
    let (clone, dir) = clone_of(&setup, "stale");
    drop(clone);
    let stale = [dir.join(".git/index.lock"), dir.join(".git/HEAD.lock"), dir.join(".git/refs/heads/main.lock")];
    for lock in &stale {
        std::fs::write(lock, "").unwrap();
    }
    std::fs::write(dir.join(".git/keep.lockfile"), "").unwrap();
    let clone = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "main", &Credentials::None).unwrap();
    for lock in &stale {
        assert!(!lock.exists(), "{} removed", lock.display());
    }
    assert!(dir.join(".git/keep.lockfile").exists(), "only git's lock files are removed");
    // And git works again: the clone can be reset.
    setup.teammate_pushes("main", "main", "README.md", "infra\n");
    clone.refresh().unwrap();
    assert!(dir.join("README.md").exists());
}

#[test]
fn refresh_moves_to_the_base_someone_else_pushed_and_discards_leftovers() {
    let setup = Setup::create();
    let (clone, dir) = clone_of(&setup, "refresh");
    let first = clone.refresh().unwrap();
    setup.teammate_pushes("main", "main", "README.md", "infra\n");
    let tip = oid(&git(&setup.remote, &["rev-parse", "main"]));
    assert_ne!(first, tip);
    // A predecessor stopped mid-change: the working tree has an edit nobody committed.
    std::fs::write(dir.join("main.tf"), "half an edit").unwrap();
    assert_eq!(clone.refresh().unwrap(), tip);
    assert_eq!(std::fs::read_to_string(dir.join("README.md")).unwrap(), "infra\n");
    assert_eq!(std::fs::read_to_string(dir.join("main.tf")).unwrap(), MAIN_TF);
    let repo = clone.repo().unwrap();
    assert_eq!(repo.head_commit().unwrap(), tip);
}

#[test]
fn a_remote_that_cannot_be_reached_is_a_transient_failure() {
    let setup = Setup::create();
    let (clone, dir) = clone_of(&setup, "unreachable");
    // Nothing listens on port 1: the connection is refused, as when the network is down.
    git(&dir, &["remote", "set-url", "origin", "https://127.0.0.1:1/acme/infra.git"]);
    let err = clone.refresh().unwrap_err();
    assert!(matches!(err, PublishError::Fetch { .. }), "{err}");
    assert!(err.is_transient(), "{err:?}");
    assert!(err.to_string().contains("fetching main from origin https://127.0.0.1:1/acme/infra.git"), "{err}");

    let fresh = setup.dir.path().join("never-cloned");
    let err = WorkingClone::open_or_clone("https://127.0.0.1:1/acme/infra.git", &fresh, "main", &Credentials::None)
        .unwrap_err();
    assert!(matches!(err, PublishError::Clone { .. }), "{err}");
    assert!(err.is_transient(), "{err:?}");
    assert!(!fresh.join(".git").exists(), "a failed clone is removed");
}

#[test]
fn a_base_branch_the_remote_does_not_have_is_refused() {
    let setup = Setup::create();
    let dir = setup.dir.path().join("no-base");
    let err = WorkingClone::open_or_clone(&setup.remote_url(), &dir, "trunk", &Credentials::None).unwrap_err();
    assert!(matches!(err, PublishError::CloneNoBaseBranch { ref branch, .. } if branch == "trunk"), "{err}");
    assert!(err.to_string().contains("set [serve] base_branch"), "{err}");
    assert!(!err.is_transient());
    assert!(!dir.join(".git").exists(), "a failed clone is removed");

    // The base branch deleted on the remote after the clone was made.
    setup.teammate_pushes("driftback/kept", "main", "x.tf", "# x\n");
    let (clone, dir) = clone_of(&setup, "base-gone");
    std::fs::write(dir.join("main.tf"), "left as it was").unwrap();
    git(&setup.remote, &["symbolic-ref", "HEAD", "refs/heads/driftback/kept"]);
    git(&setup.remote, &["update-ref", "-d", "refs/heads/main"]);
    let err = clone.refresh().unwrap_err();
    assert!(matches!(err, PublishError::CloneNoBaseBranch { .. }), "{err}");
    assert!(!err.is_transient(), "{err}");
    assert_eq!(git(&dir, &["rev-parse", "HEAD"]), git(&dir, &["rev-parse", "origin/main"]), "not reset");
    assert_eq!(std::fs::read_to_string(dir.join("main.tf")).unwrap(), "left as it was");
}

#[test]
fn a_mounted_repository_is_only_checked_clean() {
    let setup = Setup::create();
    let mounted = WorkingClone::mounted(&setup.work).unwrap();
    assert!(!mounted.is_owned());
    let head = oid(&git(&setup.work, &["rev-parse", "HEAD"]));
    setup.teammate_pushes("main", "main", "README.md", "infra\n");
    assert_eq!(mounted.refresh().unwrap(), head, "never fetched");
    assert!(!setup.work.join(".git/driftback-serve.lock").exists(), "never locked");
    std::fs::write(setup.work.join("main.tf"), "edited by hand").unwrap();
    assert!(matches!(mounted.refresh().unwrap_err(), PublishError::Dirty { .. }));
    assert!(matches!(WorkingClone::mounted(&setup.work).unwrap_err(), PublishError::Dirty { .. }));
}

/// Commit the change set of `story` on `branch` as the pipeline does: its message has the trailers.
fn commit_change_set(repo: &GitRepo, branch: &str, change_set_id: &str) -> git2::Oid {
    let mut story = story("console-instance-type");
    story.change_set_id = change_set_id.to_string();
    let message = commit_message(&story);
    assert_eq!(change_set_of(&message), Some(change_set_id));
    let changes = vec![(PathBuf::from("main.tf"), Some(MAIN_TF.replace("t3.medium", "t3.large")))];
    let base = repo.head_commit().unwrap();
    repo.commit_on_branch(base, branch, &changes, &message, &Author::default()).unwrap().1
}

#[test]
fn a_committed_change_set_is_found_by_its_trailer_on_a_local_branch() {
    let setup = Setup::create();
    let (clone, _dir) = clone_of(&setup, "local");
    let repo = clone.repo().unwrap();
    assert_eq!(repo.find_committed("driftback/web-5e1f0c2a", "cs-1").unwrap(), None, "no branch yet");
    let commit = commit_change_set(&repo, "driftback/web-5e1f0c2a", "cs-1");
    assert_eq!(repo.find_committed("driftback/web-5e1f0c2a", "cs-1").unwrap(), Some(commit));
    // The branch of another change set (the same resource, the same short id) is not this one's.
    assert_eq!(repo.find_committed("driftback/web-5e1f0c2a", "cs-2").unwrap(), None);
    // A commit that only mentions the change set in its body does not count.
    let base = repo.head_commit().unwrap();
    let forged = format!("drift: x\n\n{CHANGE_SET_TRAILER}: cs-3\n\nReviewed-by: someone\n");
    let changes = vec![(PathBuf::from("x.tf"), Some("# x\n".to_string()))];
    repo.commit_on_branch(base, "driftback/x", &changes, &forged, &Author::default()).unwrap();
    assert_eq!(repo.find_committed("driftback/x", "cs-3").unwrap(), None);
}

#[test]
fn a_change_set_pushed_before_a_restart_is_found_on_the_remote_branch() {
    let setup = Setup::create();
    // The daemon committed and pushed, then its clone was lost.
    let work = GitRepo::open_clean(&setup.work).unwrap();
    let pushed = commit_change_set(&work, "driftback/web-aaaa", "cs-a");
    git(&setup.work, &["push", "-q", "origin", "driftback/web-aaaa"]);
    // Another change set's branch, pushed too.
    commit_change_set(&work, "driftback/web-bbbb", "cs-b");
    git(&setup.work, &["push", "-q", "origin", "driftback/web-bbbb"]);

    let (clone, dir) = clone_of(&setup, "restarted");
    let (other, other_dir) = clone_of(&setup, "diverged");
    // Merged and deleted on the remote since: the clone still knows it, as the change set's commit.
    git(&setup.remote, &["update-ref", "-d", "refs/heads/driftback/web-aaaa"]);
    clone.refresh().unwrap();
    let repo = clone.repo().unwrap();
    assert!(!branches(&dir).contains("refs/heads/driftback/web-aaaa"));
    assert_eq!(repo.find_committed("driftback/web-aaaa", "cs-a").unwrap(), Some(pushed));
    assert_eq!(git(&dir, &["rev-parse", "refs/heads/driftback/web-aaaa"]), pushed.to_string(), "local branch made");
    assert_eq!(repo.find_committed("driftback/web-aaaa", "cs-a").unwrap(), Some(pushed), "found again locally");
    assert_eq!(repo.find_committed("driftback/web-bbbb", "cs-a").unwrap(), None);
    assert!(!branches(&dir).contains("refs/heads/driftback/web-bbbb"), "no local branch for a miss");

    // A local branch holding something else is left as it is; the remote's commit is still found.
    let other_repo = other.repo().unwrap();
    let local = commit_change_set(&other_repo, "driftback/web-aaaa", "cs-other");
    assert_eq!(other_repo.find_committed("driftback/web-aaaa", "cs-a").unwrap(), Some(pushed));
    assert_eq!(git(&other_dir, &["rev-parse", "refs/heads/driftback/web-aaaa"]), local.to_string());
}

#[test]
fn a_branch_commit_is_read_back_with_its_message_and_diff() {
    let setup = Setup::create();
    let repo = GitRepo::open_clean(&setup.work).unwrap();
    let commit = commit_change_set(&repo, "driftback/web-cccc", "cs-c");
    let (message, diff) = repo.branch_commit("driftback/web-cccc").unwrap();
    assert_eq!(change_set_of(&message), Some("cs-c"));
    assert!(message.starts_with("drift(aws_instance.web): "), "{message}");
    assert_eq!(diff, repo.diff_of(commit).unwrap());
    assert!(diff.contains("-  instance_type = \"t3.medium\"\n+  instance_type = \"t3.large\"\n"), "{diff}");
    assert!(repo.branch_commit("driftback/none").is_err());
}
