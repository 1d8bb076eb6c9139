//! Ref edits with the reflog lines git would write. gix writes no HEAD reflog
//! line when HEAD changes symbolically (or when old and new ids are equal),
//! yet `git checkout -` and `@{-1}` read exactly that line, so it is appended
//! here by hand.

use std::io::Write;
use std::path::PathBuf;

use gix::bstr::ByteSlice;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::open::{HeadState, Repo};

impl Repo {
    pub(crate) fn edit_refs(&self, edits: Vec<RefEdit>) -> Result<(), GitFailure> {
        let names: Vec<String> = edits
            .iter()
            .map(|edit| edit.name.as_bstr().to_string())
            .collect();
        self.repo
            .edit_references(edits)
            .ctx(|| format!("could not update {}", names.join(", ")))?;
        Ok(())
    }

    /// Remove the lock file a process killed while writing `name` left
    /// behind; returns whether there was one. Only for a ref nobody may be
    /// writing now, such as a story's branch between two of its loops: a
    /// lock there can only be a dead process's.
    pub(crate) fn clear_stale_ref_lock(&self, name: &str) -> Result<bool, GitFailure> {
        let lock = self.common_dir().join(format!("{name}.lock"));
        match std::fs::remove_file(&lock) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(GitFailure::new(
                format!("could not remove {}", lock.display()),
                err,
            )),
        }
    }

    /// Point `name` at `id`, whatever it held before.
    pub(crate) fn set_ref(
        &self,
        name: &str,
        id: ObjectId,
        message: &str,
    ) -> Result<(), GitFailure> {
        self.edit_refs(vec![update(name, id, PreviousValue::Any, message)?])
    }

    /// The `ref: …` line of every other worktree's HEAD that points at
    /// `branch`, as the path of that worktree.
    pub(crate) fn checked_out_elsewhere(
        &self,
        branch: &str,
    ) -> Result<Option<PathBuf>, GitFailure> {
        let own = gix::path::realpath(self.git_dir()).unwrap_or_else(|_| self.git_dir().to_owned());
        let mut git_dirs = vec![(
            self.repo.common_dir().to_owned(),
            self.repo.common_dir().parent().map(ToOwned::to_owned),
        )];
        for proxy in self
            .repo
            .worktrees()
            .ctx(|| "could not list worktrees".into())?
        {
            git_dirs.push((proxy.git_dir().to_owned(), proxy.base().ok()));
        }
        for (git_dir, base) in git_dirs {
            let real = gix::path::realpath(&git_dir).unwrap_or_else(|_| git_dir.clone());
            if real == own {
                continue;
            }
            let Ok(head) = std::fs::read(git_dir.join("HEAD")) else {
                continue;
            };
            if head.trim() == format!("ref: {branch}").as_bytes() {
                return Ok(Some(base.unwrap_or(git_dir)));
            }
        }
        Ok(None)
    }

    /// Append `checkout: moving from <from> to <to>` to HEAD's reflog, unless
    /// gix already wrote a line for this switch.
    pub(crate) fn log_head_switch(
        &self,
        log_len_before: u64,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        from: &str,
        to: &str,
    ) -> Result<(), OpError> {
        let (Some(old), Some(new)) = (old, new) else {
            // Git writes no line for an unborn side either.
            return Ok(());
        };
        let path = self.head_log_path();
        if self.head_log_len() != log_len_before {
            return Ok(());
        }
        let signature = self
            .repo
            .committer()
            .ok_or(OpError::NoIdentity)?
            .ctx(|| "could not read the configured identity".into())?;
        let mut line = format!("{old} {new} ").into_bytes();
        signature
            .write_to(&mut line)
            .ctx(|| "could not format a reflog line".into())?;
        line.extend_from_slice(format!("\tcheckout: moving from {from} to {to}\n").as_bytes());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).ctx(|| format!("could not create {}", dir.display()))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .ctx(|| format!("could not open {}", path.display()))?;
        file.write_all(&line)
            .ctx(|| format!("could not append to {}", path.display()))?;
        Ok(())
    }

    pub(crate) fn head_log_len(&self) -> u64 {
        std::fs::metadata(self.head_log_path())
            .map(|m| m.len())
            .unwrap_or(0)
    }

    fn head_log_path(&self) -> PathBuf {
        self.git_dir().join("logs").join("HEAD")
    }
}

pub(crate) fn update(
    name: &str,
    id: ObjectId,
    expected: PreviousValue,
    message: &str,
) -> Result<RefEdit, GitFailure> {
    Ok(RefEdit {
        change: logged_update(gix::refs::Target::Object(id), expected, message),
        name: ref_name(name)?,
        deref: false,
    })
}

pub(crate) fn delete(name: &str, expected: ObjectId) -> Result<RefEdit, GitFailure> {
    Ok(RefEdit {
        change: Change::Delete {
            expected: PreviousValue::MustExistAndMatch(gix::refs::Target::Object(expected)),
            log: RefLog::AndReference,
        },
        name: ref_name(name)?,
        deref: false,
    })
}

/// `name` as a full ref name, or the failure that says it is none.
fn ref_name(name: &str) -> Result<gix::refs::FullName, GitFailure> {
    name.try_into()
        .ctx(|| format!("'{name}' is not a valid ref name"))
}

/// Setting a ref to `new`, written to its reflog with `message`.
fn logged_update(new: gix::refs::Target, expected: PreviousValue, message: &str) -> Change {
    Change::Update {
        log: LogChange {
            mode: RefLog::AndReference,
            force_create_reflog: false,
            message: message.into(),
        },
        expected,
        new,
    }
}

/// Point HEAD at `target`: symbolically at a branch, or detached at a commit.
pub(crate) fn move_head(target: &HeadState, message: &str) -> Result<RefEdit, GitFailure> {
    let new = match target {
        HeadState::Branch { name, .. } | HeadState::Unborn { name } => {
            gix::refs::Target::Symbolic(ref_name(name.as_str())?)
        }
        HeadState::Detached { commit } => gix::refs::Target::Object(*commit),
    };
    Ok(RefEdit {
        change: logged_update(new, PreviousValue::MustExist, message),
        name: ref_name("HEAD")?,
        deref: false,
    })
}
