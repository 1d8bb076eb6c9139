//! The git directory as an agent must leave it. An agent runs as the user,
//! with `.git` in reach: one `git config alias.st '!…'`, one executable
//! `.git/hooks/pre-commit`, and the next `git status` or `git commit` the
//! user types runs the agent's code. So the loop takes a [`GitDirSnapshot`]
//! before every attempt of what in the git directory can run code or
//! change what git does (config, hooks, info/, alternates, submodules'
//! config and hooks, the run's own contract), and after the attempt
//! [`GitDirSnapshot::changes`] names every difference, config key by key,
//! and [`GitDirSnapshot::restore`] puts each file back byte for byte.
//!
//! Refs are not here: [`super::RefSnapshot`] guards them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

/// A file of the git directory as it was: its bytes and mode, or absent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    bytes: Vec<u8>,
    mode: u32,
}

/// What of the git directory an attempt may not change, as it stood.
#[derive(Debug, Clone, Default)]
pub struct GitDirSnapshot {
    /// Absolute path → its state; a path watched but absent is `None`.
    files: BTreeMap<PathBuf, Option<FileState>>,
    /// Directories whose every file is watched: a file that appears in
    /// one of them is a change too.
    dirs: Vec<PathBuf>,
    /// How a path is shown: relative to this directory.
    shown_from: PathBuf,
    /// Files whose change tampers with the run itself.
    run_files: BTreeSet<PathBuf>,
}

/// How dangerous a change of the git directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    /// It changes what git does, but runs nothing (an exclude, a user name).
    Changes,
    /// It rewrites the rules the run judges by (its contract snapshot).
    RunRules,
    /// It could run code as the user: a hook, a shell alias, a driver.
    RunsCode,
}

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileChange {
    Added,
    Modified,
    Removed,
}

/// One change an attempt made in the git directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirChange {
    /// The file, relative to the directory that holds `.git`, e.g.
    /// `.git/hooks/pre-commit`.
    pub path: String,
    /// The config key, for a config file: `core.hooksPath`.
    pub key: Option<String>,
    pub change: FileChange,
    pub risk: Risk,
}

impl GitDirChange {
    /// `hooks/pre-commit`, `config (core.hooksPath)`: what changed, as
    /// the user would look for it under `.git/`.
    pub fn what(&self) -> String {
        match &self.key {
            Some(key) => format!("{} ({key})", self.path),
            None => self.path.clone(),
        }
    }
}

/// Config keys whose value git runs as a command, or that make git run
/// one: `section.key`, or `section.*.key` for any subsection.
const RUNS_CODE: &[&str] = &[
    "core.hookspath",
    "core.fsmonitor",
    "core.sshcommand",
    "core.editor",
    "core.pager",
    "core.askpass",
    "core.gitproxy",
    "core.worktree",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "difftool.*.cmd",
    "difftool.*.path",
    "mergetool.*.cmd",
    "mergetool.*.path",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "credential.helper",
    "credential.*.helper",
    "include.path",
    "includeif.*.path",
    "gpg.program",
    "gpg.*.program",
    "uploadpack.packobjectshook",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "protocol.allow",
    "protocol.*.allow",
    "interactive.difffilter",
    "pager.*",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "man.*.cmd",
    "man.*.path",
    "sendemail.smtpserver",
    "ssh.variant",
    "extensions.worktreeconfig",
];

/// Whether a config key (`section[.subsection].key`, in any case) names a
/// command git may run; an alias does when its value starts with `!`, a
/// submodule's update setting likewise.
fn key_runs_code(section: &str, subsection: Option<&str>, key: &str, value: &[u8]) -> bool {
    let section = section.to_ascii_lowercase();
    let key = key.to_ascii_lowercase();
    let shell = value.trim_start().starts_with(b"!");
    if section == "alias" || (section == "submodule" && key == "update") {
        return shell;
    }
    RUNS_CODE.iter().any(|pattern| {
        let parts: Vec<&str> = pattern.split('.').collect();
        match (parts.as_slice(), subsection) {
            ([s, k], None) => *s == section && (*k == key),
            ([s, "*"], _) => *s == section,
            ([s, "*", k], Some(_)) => *s == section && *k == key,
            _ => false,
        }
    })
}

impl GitDirSnapshot {
    /// Note the files of `git_dirs` (a worktree's own git dir and the
    /// common one) that an attempt may not change, and `run_files`, the
    /// run's own rules. Paths are shown relative to `shown_from`.
    pub fn take(
        git_dirs: &[&Path],
        run_files: &[PathBuf],
        shown_from: &Path,
    ) -> io::Result<GitDirSnapshot> {
        let mut snapshot = GitDirSnapshot {
            shown_from: shown_from.to_owned(),
            run_files: run_files.iter().cloned().collect(),
            ..GitDirSnapshot::default()
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut files: Vec<PathBuf> = run_files.to_vec();
        for git_dir in git_dirs {
            files.push(git_dir.join("config"));
            files.push(git_dir.join("config.worktree"));
            files.push(git_dir.join("shallow"));
            files.push(git_dir.join("objects/info/alternates"));
            files.push(git_dir.join("objects/info/http-alternates"));
            dirs.push(git_dir.join("hooks"));
            dirs.push(git_dir.join("info"));
            for linked in subdirs(&git_dir.join("worktrees"))? {
                files.push(linked.join("config.worktree"));
            }
            for module in submodule_git_dirs(&git_dir.join("modules"))? {
                files.push(module.join("config"));
                dirs.push(module.join("hooks"));
                dirs.push(module.join("info"));
            }
        }
        for dir in &dirs {
            files.extend(watched_files_in(dir)?);
        }
        for dir in run_files.iter().filter(|path| path.is_dir()) {
            files.extend(files_in(dir)?);
            dirs.push(dir.clone());
        }
        for file in files {
            if !file.is_dir() {
                let state = read_state(&file)?;
                snapshot.files.insert(file, state);
            }
        }
        snapshot.dirs = dirs;
        Ok(snapshot)
    }

    /// Stop watching what is under `dir`: a directory someone else
    /// changes while the attempt runs (a sibling's worktree of the run).
    pub fn leave_out(&mut self, dir: &Path) {
        self.files.retain(|path, _| !path.starts_with(dir));
        self.dirs.retain(|watched| !watched.starts_with(dir));
    }

    /// Every file now different from the snapshot, new files in watched
    /// directories included; config files key by key.
    pub fn changes(&self) -> io::Result<Vec<GitDirChange>> {
        let mut now: BTreeMap<PathBuf, Option<FileState>> = BTreeMap::new();
        for path in self.files.keys() {
            now.insert(path.clone(), read_state(path)?);
        }
        for dir in &self.dirs {
            for file in watched_files_in(dir)? {
                if let std::collections::btree_map::Entry::Vacant(slot) = now.entry(file) {
                    let state = read_state(slot.key())?;
                    slot.insert(state);
                }
            }
        }
        let mut changes = Vec::new();
        for (path, after) in &now {
            let before = self.files.get(path).cloned().flatten();
            if before.as_ref() == after.as_ref() {
                continue;
            }
            let change = match (&before, after) {
                (None, _) => FileChange::Added,
                (Some(_), None) => FileChange::Removed,
                (Some(_), Some(_)) => FileChange::Modified,
            };
            changes.extend(self.describe(path, before.as_ref(), after.as_ref(), change));
        }
        Ok(changes)
    }

    /// Put every watched file back as it was: rewritten, recreated or
    /// removed; a directory the attempt made is left, empty of files.
    pub fn restore(&self) -> io::Result<()> {
        for dir in &self.dirs {
            for file in watched_files_in(dir)? {
                if !self.files.contains_key(&file) {
                    remove_if_there(&file)?;
                }
            }
        }
        for (path, state) in &self.files {
            if read_state(path)? == *state {
                continue;
            }
            match state {
                None => remove_if_there(path)?,
                Some(state) => {
                    if let Some(parent) = path.parent() {
                        fs::create_dir_all(parent)?;
                    }
                    if path.is_dir() {
                        fs::remove_dir_all(path)?;
                    }
                    fs::write(path, &state.bytes)?;
                    fs::set_permissions(path, fs::Permissions::from_mode(state.mode))?;
                }
            }
        }
        Ok(())
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.shown_from)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// One change per file, or one per config key that changed.
    fn describe(
        &self,
        path: &Path,
        before: Option<&FileState>,
        after: Option<&FileState>,
        change: FileChange,
    ) -> Vec<GitDirChange> {
        let shown = self.shown(path);
        let whole = |risk| {
            vec![GitDirChange {
                path: shown.clone(),
                key: None,
                change,
                risk,
            }]
        };
        if self.run_files.iter().any(|run| path.starts_with(run)) {
            return whole(Risk::RunRules);
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let in_hooks = path
            .parent()
            .is_some_and(|parent| parent.ends_with("hooks"));
        if in_hooks {
            let sample = name.as_deref().is_some_and(|n| n.ends_with(".sample"));
            let risk = if change == FileChange::Removed || sample {
                Risk::Changes
            } else {
                Risk::RunsCode
            };
            return whole(risk);
        }
        if matches!(name.as_deref(), Some("config" | "config.worktree")) {
            let empty = FileState {
                bytes: Vec::new(),
                mode: 0,
            };
            let keys = config_changes(
                &before.unwrap_or(&empty).bytes,
                &after.unwrap_or(&empty).bytes,
            );
            return match keys {
                Some(keys) if !keys.is_empty() => keys
                    .into_iter()
                    .map(|(key, runs_code)| GitDirChange {
                        path: shown.clone(),
                        key: Some(key),
                        change,
                        risk: if runs_code {
                            Risk::RunsCode
                        } else {
                            Risk::Changes
                        },
                    })
                    .collect(),
                // Only comments or layout changed.
                Some(_) => whole(Risk::Changes),
                // Unreadable as config: git may read it otherwise.
                None => whole(Risk::RunsCode),
            };
        }
        whole(Risk::Changes)
    }
}

/// One config value: section, subsection, key as written, and the value.
type Entry = (String, Option<String>, String, Vec<u8>);

/// The keys whose values differ between two config texts, each with
/// whether it could run code (for a removed key: whether it could before);
/// `None` when a text is not config git-ralph can read.
fn config_changes(before: &[u8], after: &[u8]) -> Option<Vec<(String, bool)>> {
    let before = config_entries(before)?;
    let after = config_entries(after)?;
    let normal = |(section, subsection, key, _): &Entry| {
        (
            section.to_ascii_lowercase(),
            subsection.clone(),
            key.to_ascii_lowercase(),
        )
    };
    let values = |entries: &[Entry]| {
        let mut map: BTreeMap<(String, Option<String>, String), Vec<Vec<u8>>> = BTreeMap::new();
        for entry in entries {
            map.entry(normal(entry)).or_default().push(entry.3.clone());
        }
        map
    };
    let (old, new) = (values(&before), values(&after));
    let mut changed = Vec::new();
    let mut seen = BTreeSet::new();
    for entry in after.iter().chain(before.iter()) {
        let id = normal(entry);
        if old.get(&id) == new.get(&id) || !seen.insert(id.clone()) {
            continue;
        }
        let (section, subsection, key, _) = entry;
        let values = new.get(&id).or(old.get(&id)).cloned().unwrap_or_default();
        let runs_code = values
            .iter()
            .chain(old.get(&id).into_iter().flatten())
            .any(|value| key_runs_code(section, subsection.as_deref(), key, value));
        let shown = match subsection {
            Some(sub) => format!("{section}.{sub}.{key}"),
            None => format!("{section}.{key}"),
        };
        changed.push((shown, runs_code));
    }
    Some(changed)
}

fn config_entries(text: &[u8]) -> Option<Vec<Entry>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let file = gix::config::File::from_bytes_no_includes(
        text,
        gix::config::file::Metadata::api(),
        Default::default(),
    )
    .ok()?;
    let mut entries = Vec::new();
    for section in file.sections() {
        let header = section.header();
        let name = header.name().to_str_lossy().into_owned();
        let subsection = header
            .subsection_name()
            .map(|sub| sub.to_str_lossy().into_owned());
        for key in section.body().value_names() {
            for value in section.body().values(&key) {
                entries.push((
                    name.clone(),
                    subsection.clone(),
                    key.clone(),
                    value.to_vec(),
                ));
            }
        }
    }
    Some(entries)
}

fn read_state(path: &Path) -> io::Result<Option<FileState>> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => Ok(Some(FileState {
            bytes: fs::read(path)?,
            mode: meta.permissions().mode(),
        })),
        Ok(meta) if meta.file_type().is_symlink() => Ok(Some(FileState {
            bytes: fs::read_link(path)?
                .to_string_lossy()
                .into_owned()
                .into_bytes(),
            mode: u32::MAX,
        })),
        Ok(_) => Ok(None),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Files git's own maintenance writes in a watched directory, by the
/// directory's name: `git gc`, `git repack` and `git update-server-info`
/// rewrite `info/refs` for clients of the dumb HTTP protocol from the refs
/// as they are. Whoever runs them, the user or the agent, what they write
/// runs nothing and is not the agent's doing: a ref that moves is caught
/// by the refs' own guard. (The packs, `packed-refs`, `objects/info/` and
/// `logs/` they also write are no watched file.)
const WRITTEN_BY_MAINTENANCE: &[(&str, &str)] = &[("info", "refs")];

/// The files below `dir` the guard watches: all of them, git's own
/// maintenance output aside.
fn watched_files_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = files_in(dir)?;
    let maintained: Vec<PathBuf> = WRITTEN_BY_MAINTENANCE
        .iter()
        .filter(|(in_dir, _)| dir.file_name().is_some_and(|name| name == *in_dir))
        .map(|(_, file)| dir.join(file))
        .collect();
    files.retain(|file| !maintained.contains(file));
    Ok(files)
}

/// Every file below `dir`, recursively; none when it does not exist.
fn files_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(files),
        Err(err) if err.kind() == io::ErrorKind::NotADirectory => return Ok(files),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            files.extend(files_in(&path)?);
        } else {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            dirs.push(entry.path());
        }
    }
    Ok(dirs)
}

/// The git dirs of submodules under `.git/modules`, nested ones included:
/// a directory holding a `HEAD` is one.
fn submodule_git_dirs(modules: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for dir in subdirs(modules)? {
        if dir.join("HEAD").is_file() {
            found.extend(submodule_git_dirs(&dir.join("modules"))?);
            found.push(dir);
        } else {
            found.extend(submodule_git_dirs(&dir)?);
        }
    }
    Ok(found)
}

/// Remove `path`; one already gone is as good. Two agents of a parallel
/// run share the git directory: the other's attempt may have undone the
/// same file first.
fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests;
