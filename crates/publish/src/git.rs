//! Local git: branch commits built in an in-memory index (HEAD, index and working tree never move),
//! and replaying a change commit onto another parent for rebases.

use std::path::{Path, PathBuf};

use git2::{BranchType, IndexEntry, IndexTime, Oid, Repository, Signature, StatusOptions};

use crate::PublishError;

/// A repository driftback writes branches into.
pub struct GitRepo {
    repo: Repository,
    path: PathBuf,
}

impl std::fmt::Debug for GitRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitRepo").field("path", &self.path).finish()
    }
}

/// A file's new content, or `None` to delete it. Paths are relative to the repository root.
pub type FileChange = (PathBuf, Option<String>);

/// What wins when a replayed change and its new parent changed the same lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflicts {
    /// Stop with [`PublishError::RebaseConflict`].
    Fail,
    /// The replayed change wins.
    PreferChange,
}

/// Who commits.
#[derive(Debug, Clone)]
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Default for Author {
    fn default() -> Self {
        Author { name: "driftback".into(), email: "driftback@localhost".into() }
    }
}

impl GitRepo {
    /// Open a non-bare repository whose working tree is clean (untracked files are allowed).
    pub fn open_clean(path: &Path) -> Result<GitRepo, PublishError> {
        let repo = Repository::open(path).map_err(|e| PublishError::NotARepository {
            path: path.display().to_string(),
            message: e.message().to_string(),
        })?;
        if repo.is_bare() {
            return Err(PublishError::NotARepository {
                path: path.display().to_string(),
                message: "it is bare".into(),
            });
        }
        if repo.head().is_err() {
            return Err(PublishError::NoCommits { path: path.display().to_string() });
        }
        let mut options = StatusOptions::new();
        options.include_untracked(false).include_ignored(false);
        let dirty: Vec<String> = {
            let statuses = repo.statuses(Some(&mut options))?;
            statuses.iter().filter_map(|s| s.path().ok().map(str::to_string)).collect()
        };
        if !dirty.is_empty() {
            let mut files = dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            if dirty.len() > 5 {
                files.push_str(&format!(" and {} more", dirty.len() - 5));
            }
            return Err(PublishError::Dirty { path: path.display().to_string(), files });
        }
        Ok(GitRepo { repo, path: path.to_path_buf() })
    }

    /// The commit HEAD points at: the base of every branch of this run.
    pub fn head_commit(&self) -> Result<Oid, PublishError> {
        Ok(self.repo.head()?.peel_to_commit()?.id())
    }

    /// The name of the checked-out branch, for messages.
    pub fn head_name(&self) -> String {
        self.repo.head().ok().and_then(|h| h.shorthand().ok().map(str::to_string)).unwrap_or_else(|| "HEAD".into())
    }

    /// Commit `changes` on top of `base` and point a new branch at it. A branch name already taken
    /// gets a numeric suffix. Returns the branch name and the commit id.
    pub fn commit_on_branch(
        &self,
        base: Oid,
        branch: &str,
        changes: &[FileChange],
        message: &str,
        author: &Author,
    ) -> Result<(String, Oid), PublishError> {
        let base_commit = self.repo.find_commit(base)?;
        let mut index = git2::Index::new()?;
        index.read_tree(&base_commit.tree()?)?;
        for (path, content) in changes {
            let rel = path.to_string_lossy().replace('\\', "/");
            match content {
                Some(text) => {
                    let mode = index.get_path(path, 0).map(|e| e.mode).unwrap_or(0o100644);
                    let entry = IndexEntry {
                        ctime: IndexTime::new(0, 0),
                        mtime: IndexTime::new(0, 0),
                        dev: 0,
                        ino: 0,
                        mode,
                        uid: 0,
                        gid: 0,
                        file_size: text.len() as u32,
                        id: self.repo.blob(text.as_bytes())?,
                        flags: 0,
                        flags_extended: 0,
                        path: rel.into_bytes(),
                    };
                    index.add(&entry)?;
                }
                None => {
                    index.remove_path(path)?;
                }
            }
        }
        let tree_id = index.write_tree_to(&self.repo)?;
        let tree = self.repo.find_tree(tree_id)?;
        let signature = Signature::now(&author.name, &author.email)?;
        let commit = self.repo.commit(None, &signature, &signature, message, &tree, &[&base_commit])?;
        let mut name = branch.to_string();
        let mut n = 2;
        while self.repo.find_branch(&name, BranchType::Local).is_ok() {
            name = format!("{branch}-{n}");
            n += 1;
        }
        self.repo.branch(&name, &self.repo.find_commit(commit)?, false)?;
        Ok((name, commit))
    }

    /// Replay the change `commit` makes (against its first parent) onto `onto`, as a new commit
    /// with the same message and author whose parent is `onto`. No reference moves.
    ///
    /// With [`Conflicts::Fail`] a line changed on both sides is a [`PublishError::RebaseConflict`];
    /// with [`Conflicts::PreferChange`] the change's side wins (a later observation of the cloud
    /// supersedes an earlier one on the same branch).
    pub fn replay(&self, commit: Oid, onto: Oid, conflicts: Conflicts, branch: &str) -> Result<Oid, PublishError> {
        let change = self.repo.find_commit(commit)?;
        let onto_commit = self.repo.find_commit(onto)?;
        let mut options = git2::MergeOptions::new();
        if conflicts == Conflicts::PreferChange {
            options.file_favor(git2::FileFavor::Theirs);
        }
        let mut index = self.repo.cherrypick_commit(&change, &onto_commit, 0, Some(&options))?;
        if index.has_conflicts() {
            let mut paths: Vec<String> = Vec::new();
            for conflict in index.conflicts()? {
                let conflict = conflict?;
                let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
                if let Some(entry) = entry {
                    paths.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            paths.dedup();
            return Err(PublishError::RebaseConflict {
                branch: branch.to_string(),
                onto: onto.to_string(),
                paths: paths.join(", "),
            });
        }
        let tree = self.repo.find_tree(index.write_tree_to(&self.repo)?)?;
        let message = change.message_raw().unwrap_or_default();
        let replayed =
            self.repo.commit(None, &change.author(), &change.committer(), message, &tree, &[&onto_commit])?;
        Ok(replayed)
    }

    /// The files a commit changes against its first parent, with their content in the commit
    /// (`None`: deleted). Paths are relative to the repository root.
    pub fn changed_files(&self, commit: Oid) -> Result<Vec<FileChange>, PublishError> {
        let commit = self.repo.find_commit(commit)?;
        let tree = commit.tree()?;
        let parent_tree = commit.parent(0)?.tree()?;
        let diff = self.repo.diff_tree_to_tree(Some(&parent_tree), Some(&tree), None)?;
        let mut files = Vec::new();
        for delta in diff.deltas() {
            let Some(path) = delta.new_file().path().or(delta.old_file().path()) else { continue };
            let content = match tree.get_path(path) {
                Ok(entry) => {
                    let blob = self.repo.find_blob(entry.id())?;
                    Some(String::from_utf8_lossy(blob.content()).into_owned())
                }
                Err(_) => None,
            };
            files.push((path.to_path_buf(), content));
        }
        Ok(files)
    }

    /// Every UTF-8 file of a commit's tree, by path (binary files are left out): the repository as
    /// a branch has it, for planning a change on top of that branch.
    pub fn files_at(&self, commit: Oid) -> Result<std::collections::BTreeMap<PathBuf, String>, PublishError> {
        let tree = self.repo.find_commit(commit)?.tree()?;
        let mut files = std::collections::BTreeMap::new();
        let mut failure = None;
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() != Some(git2::ObjectType::Blob) {
                return git2::TreeWalkResult::Ok;
            }
            match self.repo.find_blob(entry.id()) {
                Ok(blob) => {
                    if let (Ok(text), Ok(name)) = (std::str::from_utf8(blob.content()), entry.name()) {
                        files.insert(PathBuf::from(format!("{dir}{name}")), text.to_string());
                    }
                    git2::TreeWalkResult::Ok
                }
                Err(e) => {
                    failure = Some(e);
                    git2::TreeWalkResult::Abort
                }
            }
        })?;
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(files),
        }
    }

    /// The commit of a branch that already holds change set `change_set_id` (committed before a
    /// restart): the tip of the local `branch`, else of the remote-tracking `origin/<branch>`, when
    /// its [`CHANGE_SET_TRAILER`](crate::message::CHANGE_SET_TRAILER) names the change set. Found
    /// only on the remote-tracking branch, the local branch is created there (when it is missing).
    pub fn find_committed(&self, branch: &str, change_set_id: &str) -> Result<Option<Oid>, PublishError> {
        let wanted = crate::message::single(change_set_id);
        let holds = |name: &str, kind: BranchType| -> Option<git2::Commit<'_>> {
            let commit = self.repo.find_branch(name, kind).ok()?.get().peel_to_commit().ok()?;
            let found = crate::message::change_set_of(commit.message().ok()?) == Some(wanted.as_str());
            found.then_some(commit)
        };
        if let Some(commit) = holds(branch, BranchType::Local) {
            return Ok(Some(commit.id()));
        }
        let Some(commit) = holds(&format!("origin/{branch}"), BranchType::Remote) else { return Ok(None) };
        if self.repo.find_branch(branch, BranchType::Local).is_err() {
            self.repo.branch(branch, &commit, false)?;
        }
        Ok(Some(commit.id()))
    }

    /// The tip commit of a local branch: its message and the unified diff it makes against its
    /// first parent (as [`GitRepo::diff_of`]).
    pub fn branch_commit(&self, branch: &str) -> Result<(String, String), PublishError> {
        let commit = self.repo.find_branch(branch, BranchType::Local)?.get().peel_to_commit()?;
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        Ok((message, self.diff_of(commit.id())?))
    }

    /// Whether two commits have the same tree (the same files).
    pub fn same_tree(&self, a: Oid, b: Oid) -> Result<bool, PublishError> {
        Ok(self.repo.find_commit(a)?.tree_id() == self.repo.find_commit(b)?.tree_id())
    }

    /// The best common ancestor of two commits: where a branch left its base.
    pub fn merge_base(&self, a: Oid, b: Oid) -> Result<Oid, PublishError> {
        Ok(self.repo.merge_base(a, b)?)
    }

    /// The first parent of a commit.
    pub fn parent_of(&self, commit: Oid) -> Result<Oid, PublishError> {
        Ok(self.repo.find_commit(commit)?.parent_id(0)?)
    }

    /// Whether `ancestor` is `descendant` or one of its ancestors.
    pub fn is_ancestor(&self, ancestor: Oid, descendant: Oid) -> Result<bool, PublishError> {
        Ok(ancestor == descendant || self.repo.graph_descendant_of(descendant, ancestor)?)
    }

    pub(crate) fn raw(&self) -> &Repository {
        &self.repo
    }

    /// The URL of a configured remote (`origin`), if there is one.
    pub fn remote_url(&self, name: &str) -> Option<String> {
        self.repo.find_remote(name).ok().and_then(|r| r.url().ok().map(str::to_string))
    }

    /// Where the repository is, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The unified diff a commit makes against its first parent.
    pub fn diff_of(&self, commit: Oid) -> Result<String, PublishError> {
        let commit = self.repo.find_commit(commit)?;
        let parent = commit.parent(0)?;
        let diff = self.repo.diff_tree_to_tree(Some(&parent.tree()?), Some(&commit.tree()?), None)?;
        let mut out = String::new();
        diff.print(git2::DiffFormat::Patch, |_, _, line| {
            if matches!(line.origin(), '+' | '-' | ' ') {
                out.push(line.origin());
            }
            out.push_str(&String::from_utf8_lossy(line.content()));
            true
        })?;
        Ok(out)
    }
}

/// The unified diff from `old` to `new` of each file (`None` old: a new file), as `git diff`
/// prints it, without committing anything: what an edit held back from the code would write.
pub fn unified_diff(files: &[(&Path, Option<&str>, &str)]) -> Result<String, PublishError> {
    let mut out = String::new();
    for (path, old, new) in files {
        let name = path.to_string_lossy();
        let old_path = old.map(|_| name.as_ref());
        let mut patch = git2::Patch::from_buffers(
            old.unwrap_or_default().as_bytes(),
            old_path.map(Path::new),
            new.as_bytes(),
            Some(Path::new(name.as_ref())),
            None,
        )?;
        let text = patch.to_buf()?;
        out.push_str(&String::from_utf8_lossy(&text));
    }
    Ok(out)
}

/// Create a repository in `dir` and commit every file in it (for the demo and tests).
pub fn init_repository(dir: &Path, message: &str, author: &Author) -> Result<(), PublishError> {
    let repo = Repository::init(dir)?;
    let mut index = repo.index()?;
    index.add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let signature = Signature::now(&author.name, &author.email)?;
    repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &[])?;
    Ok(())
}

/// A branch name from a resource address and change set id: `driftback/aws_instance.web-cs-1a2b3c4d`.
pub fn branch_name(prefix: &str, address: &str, change_set_id: &str) -> String {
    let short: String = change_set_id.trim_start_matches("cs-").chars().take(8).collect();
    format!("{prefix}/{}-{short}", slug(address))
}

/// The branch of a change set in one workspace of one stack of a repository of many root
/// modules: `<prefix>/<stack>/<workspace>/<address>-<id>`, each part made safe as in
/// [`branch_name`] (the repository's top directory is `root`).
pub fn stack_branch_name(prefix: &str, stack: &str, workspace: &str, address: &str, change_set_id: &str) -> String {
    let stack = match slug(stack) {
        s if s.is_empty() => "root".to_string(),
        s => s,
    };
    let workspace = match slug(workspace) {
        w if w.is_empty() => "default".to_string(),
        w => w,
    };
    branch_name(&format!("{prefix}/{stack}/{workspace}"), address, change_set_id)
}

/// `text` as one safe ref name component: ASCII letters, digits, `_`, `-` and single dots, never
/// starting or ending with a dot.
fn slug(text: &str) -> String {
    let slug: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let mut slug = slug.replace("-.", ".").replace(".-", ".");
    while slug.contains("..") {
        slug = slug.replace("..", ".");
    }
    slug.trim_matches('.').to_string()
}

#[cfg(test)]
mod diff_tests {
    use super::*;

    #[test]
    fn an_uncommitted_edit_reads_as_git_diff() {
        let diff = unified_diff(&[(Path::new("main.tf"), Some("a = 1\nb = 2\n"), "a = 1\nb = 3\n")]).unwrap();
        assert!(diff.contains("--- a/main.tf") && diff.contains("+++ b/main.tf"), "{diff}");
        assert!(diff.contains("-b = 2\n+b = 3\n"), "{diff}");
        let new = unified_diff(&[(Path::new("import.tf"), None, "x\n")]).unwrap();
        assert!(new.contains("+x"), "{new}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(dir: &Path) -> Repository {
        let repo = Repository::init(dir).unwrap();
        std::fs::write(dir.join("main.tf"), "resource \"aws_instance\" \"web\" {}\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("main.tf")).unwrap();
        index.write().unwrap();
        {
            let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
            let sig = Signature::now("t", "t@t").unwrap();
            repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[]).unwrap();
        }
        repo
    }

    #[test]
    fn commits_on_a_branch_leave_the_working_tree_alone() {
        let dir = tempfile::tempdir().unwrap();
        let raw = init(dir.path());
        let repo = GitRepo::open_clean(dir.path()).unwrap();
        let base = repo.head_commit().unwrap();
        let changes = vec![
            (
                PathBuf::from("main.tf"),
                Some("resource \"aws_instance\" \"web\" {\n  instance_type = \"t3.large\"\n}\n".to_string()),
            ),
            (PathBuf::from("modules/x/new.tf"), Some("# new\n".to_string())),
        ];
        let (branch, commit) =
            repo.commit_on_branch(base, "driftback/web", &changes, "drift: web", &Author::default()).unwrap();
        assert_eq!(branch, "driftback/web");
        assert_eq!(repo.head_commit().unwrap(), base, "HEAD does not move");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("main.tf")).unwrap(),
            "resource \"aws_instance\" \"web\" {}\n"
        );
        assert!(raw.statuses(None).unwrap().iter().all(|s| s.path().ok() != Some("main.tf")));
        let diff = repo.diff_of(commit).unwrap();
        assert!(diff.contains("+  instance_type = \"t3.large\""), "{diff}");
        assert!(diff.contains("modules/x/new.tf"), "{diff}");
        let (again, _) =
            repo.commit_on_branch(base, "driftback/web", &changes[..1], "drift: web", &Author::default()).unwrap();
        assert_eq!(again, "driftback/web-2");
    }

    #[test]
    fn unusable_repositories_are_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let err = GitRepo::open_clean(dir.path()).unwrap_err();
        assert!(matches!(err, PublishError::NotARepository { .. }), "{err}");
        Repository::init(dir.path()).unwrap();
        assert!(matches!(GitRepo::open_clean(dir.path()).unwrap_err(), PublishError::NoCommits { .. }));
        let dir = tempfile::tempdir().unwrap();
        init(dir.path());
        std::fs::write(dir.path().join("main.tf"), "changed").unwrap();
        let err = GitRepo::open_clean(dir.path()).unwrap_err();
        assert!(err.to_string().contains("main.tf"), "{err}");
    }

    #[test]
    fn branch_names_are_safe() {
        assert_eq!(
            branch_name("driftback", "aws_instance.web", "cs-0123456789abcdef"),
            "driftback/aws_instance.web-01234567"
        );
        assert_eq!(
            branch_name("driftback", "module.a[\"x y\"].aws_s3_bucket.b", "cs-ff"),
            "driftback/module.a-x-y.aws_s3_bucket.b-ff"
        );
        // Stack and workspace names come from directories and backends: each is one safe component.
        assert_eq!(
            stack_branch_name("driftback", "envs/app", "prod", "module.jobs.aws_sqs_queue.this", "cs-0123456789"),
            "driftback/envs-app/prod/module.jobs.aws_sqs_queue.this-01234567"
        );
        assert_eq!(
            stack_branch_name("driftback", ".", "../../x y", "aws_vpc.main", "cs-ab"),
            "driftback/root/x-y/aws_vpc.main-ab"
        );
        let hostile = stack_branch_name("driftback", "a/../..", "ws~1^:?*[", "aws_vpc.main", "cs-ab");
        assert!(!hostile.contains("..") && !hostile.contains('~') && !hostile.contains('^'), "{hostile}");
        assert!(git2::Reference::is_valid_name(&format!("refs/heads/{hostile}")), "{hostile}");
    }
}
