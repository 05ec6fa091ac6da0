//! The working clone the daemon reconciles in: cloned once, held by one process at a time, and
//! brought to the latest base before each change set.
//!
//! A clone driftback owns (`repo_url`) is fetched and hard-reset; a repository mounted in place
//! (`repo_path`) is someone else's working tree, only required to be clean.

use std::fs::File;
use std::path::{Path, PathBuf};

use git2::{BranchType, ErrorCode, Oid, Repository, RepositoryInitOptions};

use crate::remote::{auth_error, callbacks, check_url};
use crate::{Credentials, GitRepo, PublishError};

/// The file in the clone's `.git` directory a running driftback holds an exclusive lock on.
const LOCK_FILE: &str = "driftback-serve.lock";
/// Lock files git leaves at the top of `.git` when stopped mid-operation (and those under `refs/`).
const GIT_LOCKS: [&str; 5] = ["index.lock", "HEAD.lock", "ORIG_HEAD.lock", "config.lock", "packed-refs.lock"];

/// The repository driftback works in, as long as this value lives.
///
/// Opened with [`WorkingClone::open_or_clone`] (driftback's own clone of a URL: locked to this
/// process, fetched and reset by [`WorkingClone::refresh`]) or [`WorkingClone::mounted`] (a working
/// tree mounted in place: never fetched, only checked clean). It holds no open repository, so it
/// can be shared between threads; [`WorkingClone::repo`] opens one.
#[derive(Debug)]
pub struct WorkingClone {
    dir: PathBuf,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Driftback's own clone; the lock is held until the value is dropped.
    Owned {
        base_branch: String,
        credentials: Credentials,
        _lock: File,
    },
    Mounted,
}

impl WorkingClone {
    /// Clone `url` (its `base_branch` checked out) into `dir`, unless `dir` already holds that
    /// clone; then take it for this process. Refused: a directory that is neither empty nor a
    /// clone, and a clone another driftback holds. A clone that is not sound is never used and
    /// never deleted: a clone of another URL (the configuration changed) or one whose HEAD is on no
    /// commit while it has branches is set aside beside `dir` (renamed `NAME.set-aside-N`, so any
    /// work in it stays) and `url` is cloned again, with a warning naming both. What a stopped
    /// predecessor left is cleared: a clone of `url` left half-created (no commit checked out, no
    /// branch) is removed and cloned again, git lock files are removed, and changes to tracked files
    /// are reset (as [`WorkingClone::refresh`] would), so [`WorkingClone::repo`] opens at once.
    ///
    /// `credentials` answer the remote when it asks, for this clone and every later fetch; they are
    /// never written into the clone (its origin is `url` as given).
    pub fn open_or_clone(
        url: &str,
        dir: &Path,
        base_branch: &str,
        credentials: &Credentials,
    ) -> Result<WorkingClone, PublishError> {
        check_url(url, credentials)?;
        let git_dir = dir.join(".git");
        if !git_dir.exists() {
            if dir.exists() && std::fs::read_dir(dir).map_err(io("reading", dir))?.next().is_some() {
                return Err(PublishError::NotAClone { dir: dir.display().to_string() });
            }
            return clone_into(url, dir, base_branch, credentials);
        }
        let repo = match Repository::open(dir) {
            Ok(repo) => repo,
            Err(e) => return clone_over_unopenable(url, dir, base_branch, credentials, &e),
        };
        let origin = origin_url(&repo);
        let lock = take_lock(dir, &git_dir)?;
        let unborn = matches!(repo.head(), Err(e) if e.code() == ErrorCode::UnbornBranch);
        let unsound = if origin.as_deref() != Some(url) {
            Some(format!("it is a clone of {}, not of {url}", origin.as_deref().unwrap_or("nothing")))
        } else if unborn && has_branches(&repo) {
            // Not a clone stopped before its checkout (that has no branches): someone's work.
            Some("its HEAD is on no commit while it has branches".to_string())
        } else {
            None
        };
        if let Some(why) = unsound {
            drop(repo);
            let aside = set_aside(dir).map_err(|e| PublishError::WrongClone {
                dir: dir.display().to_string(),
                origin: origin.clone().unwrap_or_else(|| "nothing".into()),
                url: format!("{url} (and it could not be set aside: {e})"),
            })?;
            tracing::warn!(
                dir = %dir.display(),
                set_aside = %aside.display(),
                url,
                "the working clone is not sound ({why}); set it aside, with whatever it holds, and cloning again"
            );
            // The lock went with the directory: it still guards the set-aside copy until dropped.
            drop(lock);
            let clone = clone_into(url, dir, base_branch, credentials)?;
            carry_over(&aside, dir)?;
            return Ok(clone);
        }
        if unborn {
            tracing::warn!(
                dir = %dir.display(),
                url,
                "the working clone was left half-created (no commit checked out) by a clone that stopped; \
                 removing it and cloning again"
            );
            drop(repo);
            empty_dir(dir)?;
            // The fresh clone takes its own lock before this one (on the removed file) is let go.
            let clone = clone_into(url, dir, base_branch, credentials);
            drop(lock);
            return clone;
        }
        clear_stale_locks(&git_dir)?;
        reset_leftovers(&repo, dir)?;
        Ok(WorkingClone {
            dir: dir.to_path_buf(),
            kind: Kind::Owned { base_branch: base_branch.to_string(), credentials: credentials.clone(), _lock: lock },
        })
    }

    /// A repository mounted in place: a clean working tree with a commit checked out (see
    /// [`GitRepo::open_clean`]). It is never fetched, reset or locked.
    pub fn mounted(path: &Path) -> Result<WorkingClone, PublishError> {
        GitRepo::open_clean(path)?;
        Ok(WorkingClone { dir: path.to_path_buf(), kind: Kind::Mounted })
    }

    /// Bring the clone to the latest base and return the base commit. An owned clone fetches the
    /// base branch from origin and hard-resets to it (whatever a stopped predecessor left in the
    /// working tree is discarded); a mounted repository must still be clean, and its HEAD is the base.
    pub fn refresh(&self) -> Result<Oid, PublishError> {
        let Kind::Owned { base_branch, credentials, .. } = &self.kind else {
            return GitRepo::open_clean(&self.dir)?.head_commit();
        };
        let repo = Repository::open(&self.dir).map_err(|e| PublishError::OpenClone {
            dir: self.dir.display().to_string(),
            message: e.message().to_string(),
        })?;
        let mut origin = repo.find_remote("origin").map_err(|e| PublishError::Fetch {
            url: "origin".into(),
            branch: base_branch.clone(),
            message: format!("the clone has no origin: {}", e.message()),
            transient: false,
        })?;
        let url = origin.url().unwrap_or("origin").to_string();
        let refspec = format!("+refs/heads/{base_branch}:refs/remotes/origin/{base_branch}");
        let mut options = git2::FetchOptions::new();
        options.remote_callbacks(callbacks(&url, credentials));
        origin
            .fetch(&[refspec], Some(&mut options), None)
            .map_err(|e| fetch_error(&url, base_branch, credentials, &e))?;
        // The tip the remote advertised: a base branch deleted there is not found in the
        // remote-tracking branch it left behind (fetching it just leaves that as it was).
        let wanted = format!("refs/heads/{base_branch}");
        let tip = origin
            .list()
            .map_err(|e| fetch_error(&url, base_branch, credentials, &e))?
            .iter()
            .find(|head| head.name() == wanted)
            .map(|head| head.oid());
        let tip =
            tip.ok_or_else(|| PublishError::CloneNoBaseBranch { url: url.clone(), branch: base_branch.clone() })?;
        let object = repo.find_object(tip, None)?;
        repo.reset(&object, git2::ResetType::Hard, None)?;
        Ok(tip)
    }

    /// The repository, opened for committing branches (its working tree must be clean).
    pub fn repo(&self) -> Result<GitRepo, PublishError> {
        GitRepo::open_clean(&self.dir)
    }

    /// The working tree's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Whether this is driftback's own clone (fetched, reset, locked) rather than a mounted one.
    pub fn is_owned(&self) -> bool {
        matches!(self.kind, Kind::Owned { .. })
    }
}

/// Clone `url` into the empty or missing `dir` with `base_branch` checked out, holding the clone's
/// lock from the moment `.git` exists, so a second driftback never mistakes a clone in progress for
/// one left half-created. A clone that fails is removed again.
fn clone_into(
    url: &str,
    dir: &Path,
    base_branch: &str,
    credentials: &Credentials,
) -> Result<WorkingClone, PublishError> {
    tracing::info!(url, dir = %dir.display(), "cloning the infrastructure repository");
    let clone_error = |e: git2::Error| {
        if e.code() == ErrorCode::Auth {
            return auth_error(url, credentials, &e);
        }
        PublishError::Clone {
            url: url.to_string(),
            branch: base_branch.to_string(),
            dir: dir.display().to_string(),
            message: e.message().to_string(),
            transient: is_network(&e),
        }
    };
    let mut options = RepositoryInitOptions::new();
    options.no_reinit(true).origin_url(url).initial_head(base_branch);
    let repo = Repository::init_opts(dir, &options).map_err(clone_error)?;
    let lock = take_lock(dir, &dir.join(".git"))?;
    let fetched = (|| {
        let mut origin = repo.find_remote("origin")?;
        let mut options = git2::FetchOptions::new();
        options.remote_callbacks(callbacks(url, credentials));
        origin.fetch::<&str>(&[], Some(&mut options), None)?;
        Ok::<_, git2::Error>(repo.refname_to_id(&format!("refs/remotes/origin/{base_branch}")))
    })();
    let checked_out = match fetched {
        Err(e) => Err(clone_error(e)),
        Ok(Err(_)) => Err(PublishError::CloneNoBaseBranch { url: url.to_string(), branch: base_branch.to_string() }),
        Ok(Ok(tip)) => (|| {
            let commit = repo.find_commit(tip)?;
            let mut branch = repo.branch(base_branch, &commit, false)?;
            branch.set_upstream(Some(&format!("origin/{base_branch}")))?;
            repo.set_head(&format!("refs/heads/{base_branch}"))?;
            repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))?;
            Ok::<_, git2::Error>(())
        })()
        .map_err(clone_error),
    };
    drop(repo);
    if let Err(e) = checked_out {
        if let Err(cleanup) = empty_dir(dir) {
            tracing::warn!(dir = %dir.display(), error = %cleanup, "could not remove the failed clone");
        }
        return Err(e);
    }
    Ok(WorkingClone {
        dir: dir.to_path_buf(),
        kind: Kind::Owned { base_branch: base_branch.to_string(), credentials: credentials.clone(), _lock: lock },
    })
}

/// A failed fetch of the base branch: refused or missing credentials name the remote and what to
/// configure; other failures say whether they may pass.
fn fetch_error(url: &str, base_branch: &str, credentials: &Credentials, e: &git2::Error) -> PublishError {
    if e.code() == ErrorCode::Auth {
        return auth_error(url, credentials, e);
    }
    PublishError::Fetch {
        url: url.to_string(),
        branch: base_branch.to_string(),
        message: e.message().to_string(),
        transient: is_network(e),
    }
}

/// Discard changes to tracked files a predecessor stopped mid-operation left in the working tree
/// or the index (a reset or checkout cut short), so the clone opens clean. Untracked files stay.
fn reset_leftovers(repo: &Repository, dir: &Path) -> Result<(), PublishError> {
    let mut options = git2::StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    let dirty = repo.statuses(Some(&mut options))?.len();
    if dirty == 0 {
        return Ok(());
    }
    tracing::warn!(
        dir = %dir.display(),
        files = dirty,
        "the working clone has uncommitted changes left by a driftback that stopped mid-operation; resetting it to HEAD"
    );
    let head = repo.head()?.peel(git2::ObjectType::Commit)?;
    repo.reset(&head, git2::ResetType::Hard, None)?;
    Ok(())
}

/// Whether the repository has a local branch. A clone that stopped before its first checkout has
/// none (HEAD names a branch that does not exist yet), so removing it loses no work of driftback's.
fn has_branches(repo: &Repository) -> bool {
    repo.branches(Some(BranchType::Local)).map(|mut b| b.next().is_some()).unwrap_or(true)
}

fn origin_url(repo: &Repository) -> Option<String> {
    repo.find_remote("origin").ok().and_then(|r| r.url().ok().map(str::to_string))
}

/// Take the clone for this process (an exclusive lock held while the file is open), refused when
/// another process holds it.
fn take_lock(dir: &Path, git_dir: &Path) -> Result<File, PublishError> {
    let path = git_dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io("creating", &path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(PublishError::CloneInUse { dir: dir.display().to_string() }),
        Err(std::fs::TryLockError::Error(e)) => Err(io("locking", &path)(e)),
    }
}

/// Remove the git lock files a predecessor killed in the middle of a git operation left behind:
/// with the clone ours alone, nothing else can be holding them, and git refuses to work while they
/// exist.
fn clear_stale_locks(git_dir: &Path) -> Result<(), PublishError> {
    let mut stale: Vec<PathBuf> = GIT_LOCKS.iter().map(|name| git_dir.join(name)).collect();
    let mut dirs = vec![git_dir.join("refs")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "lock") {
                stale.push(p);
            }
        }
    }
    for lock in stale.into_iter().filter(|p| p.exists()) {
        tracing::warn!(lock = %lock.display(), "removing a git lock left by a driftback that stopped mid-operation");
        std::fs::remove_file(&lock).map_err(io("removing the stale git lock", &lock))?;
    }
    Ok(())
}

/// A `dir/.git` that git cannot open (a clone killed before it wrote HEAD, a corrupt config):
/// unless another process holds it (a clone in progress takes the lock as soon as `.git` exists),
/// set aside like any clone that is not sound (what git cannot read may still hold someone's work)
/// and cloned again, with a warning naming both paths.
fn clone_over_unopenable(
    url: &str,
    dir: &Path,
    base_branch: &str,
    credentials: &Credentials,
    error: &git2::Error,
) -> Result<WorkingClone, PublishError> {
    let git_dir = dir.join(".git");
    let unopenable =
        || PublishError::OpenClone { dir: dir.display().to_string(), message: error.message().to_string() };
    // `.git` as a file (a worktree's link) or a lock that cannot be created: not ours to move.
    if !git_dir.is_dir() {
        return Err(unopenable());
    }
    let lock = take_lock(dir, &git_dir)?;
    let aside = set_aside(dir).map_err(|e| PublishError::OpenClone {
        dir: dir.display().to_string(),
        message: format!("{} (and it could not be set aside: {e})", error.message()),
    })?;
    tracing::warn!(
        dir = %dir.display(),
        set_aside = %aside.display(),
        url,
        error = error.message(),
        "git cannot open the working clone; set it aside, with whatever it holds, and cloning again"
    );
    drop(lock);
    let clone = clone_into(url, dir, base_branch, credentials)?;
    carry_over(&aside, dir)?;
    Ok(clone)
}

/// What driftback keeps in its clone's `.git/driftback` (the default SQLite knowledge base, with
/// the pending change sets) belongs to the daemon, not to the clone: it follows the clone that
/// replaces a set-aside one, unless the new clone has its own.
fn carry_over(aside: &Path, dir: &Path) -> Result<(), PublishError> {
    let from = aside.join(".git").join("driftback");
    let to = dir.join(".git").join("driftback");
    if from.is_dir() && !to.exists() {
        std::fs::rename(&from, &to).map_err(io("moving the knowledge base from the set-aside clone", &from))?;
        tracing::info!(from = %from.display(), to = %to.display(), "moved driftback's files into the new clone");
    }
    Ok(())
}

/// Rename `dir` to a free sibling `NAME.set-aside-N` and return that path.
fn set_aside(dir: &Path) -> std::io::Result<PathBuf> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "clone".into());
    let parent = dir.parent().unwrap_or(Path::new("."));
    let aside = (1..)
        .map(|n| parent.join(format!("{name}.set-aside-{n}")))
        .find(|p| !p.exists())
        .expect("some sibling name is free");
    std::fs::rename(dir, &aside)?;
    Ok(aside)
}

/// Remove everything in `dir` but `dir` itself (it may be a mount point).
fn empty_dir(dir: &Path) -> Result<(), PublishError> {
    for entry in std::fs::read_dir(dir).map_err(io("reading", dir))? {
        let entry = entry.map_err(io("reading", dir))?;
        let path = entry.path();
        let removed = if entry.file_type().map_err(io("reading", &path))?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(io("removing", &path))?;
    }
    Ok(())
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PublishError {
    let path = path.display().to_string();
    move |source| PublishError::Io { action, path, source }
}

// Where the daemon's clone and the pushes ask whether a git failure may pass: with the errors.
pub(crate) use crate::error::is_network;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_clone_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<WorkingClone>();
    }
}
