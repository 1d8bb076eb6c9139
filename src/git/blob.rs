//! Worktree file → blob with memory that does not grow with the file. A
//! file above [`STREAM_ABOVE`] that no filter converts is hashed and
//! written straight from disk into a loose object, as `git add` does above
//! `core.bigFileThreshold`; smaller files, and files a filter rewrites, go
//! through gix's filter pipeline in memory as before. A repository that
//! keeps its objects in memory (the live diff) does not read a big file at
//! all: it names it by its path and stat data and remembers its size, so
//! the diff can show it as "binary, 700 MB". A
//! revert that restores a big blob streams it out of its loose object the
//! same way, unless a filter would convert it.

use std::io::Read;
use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
use gix::objs::tree::EntryKind;

use super::error::{Context, GitFailure};
use super::ids::ObjectId;
use super::open::Repo;

/// Files larger than this are streamed, never read whole.
pub(crate) const STREAM_ABOVE: u64 = 1024 * 1024;

/// A worktree file as an object: its id, its kind, and the `lstat` taken
/// before it was read.
pub(crate) type Hashed = (ObjectId, EntryKind, std::fs::Metadata);

impl Repo {
    /// [`gix::filter::Pipeline::worktree_file_to_object`], streaming big
    /// files. `None` when the path is gone or of a kind git cannot track.
    pub(crate) fn worktree_file_to_blob(
        &self,
        pipeline: &mut gix::filter::Pipeline<'_>,
        rela_path: &BStr,
        index: &gix::index::State,
    ) -> Result<Option<Hashed>, GitFailure> {
        let context = || format!("could not hash '{}'", rela_path.to_str_lossy());
        let relative = gix::path::from_bstr(rela_path)
            .ctx(|| format!("'{}' is not a valid path here", rela_path.to_str_lossy()))?;
        let path = self.workdir().join(&relative);
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(GitFailure::new(context(), err)),
        };
        if !metadata.is_file() || metadata.len() <= STREAM_ABOVE {
            return pipeline
                .worktree_file_to_object(rela_path, index)
                .ctx(context);
        }
        if self.hashed_only.is_some() {
            return Ok(Some(self.unread_blob(&relative, &metadata)));
        }
        let file = std::fs::File::open(&path).ctx(context)?;
        let id = match pipeline
            .convert_to_git(file, &relative, index)
            .ctx(context)?
        {
            ToGitOutcome::Unchanged(file) => self.stream_blob(file, metadata.len(), &path)?,
            ToGitOutcome::Buffer(buf) => self.repo.write_blob(buf).ctx(context)?.detach(),
            ToGitOutcome::Process(mut read) => {
                let mut buf = Vec::new();
                read.read_to_end(&mut buf).ctx(context)?;
                self.repo.write_blob(buf).ctx(context)?.detach()
            }
        };
        let kind = if gix::fs::is_executable(&metadata) {
            EntryKind::BlobExecutable
        } else {
            EntryKind::Blob
        };
        Ok(Some((id, kind, metadata)))
    }

    /// A big file where objects live in memory (the live diff), named
    /// without being read: an id made from its path and `lstat`, which no
    /// blob has, so the diff shows it as changed, by its size. A file whose
    /// stat data changed but not its bytes shows as changed too; reading
    /// hundreds of megabytes every time the screen refreshes would be
    /// worse.
    fn unread_blob(&self, relative: &Path, metadata: &std::fs::Metadata) -> Hashed {
        use std::os::unix::fs::MetadataExt;
        let mut hasher = gix::hash::hasher(self.repo.object_hash());
        hasher.update(b"unread worktree file\0");
        hasher.update(relative.as_os_str().as_encoded_bytes());
        for number in [
            metadata.len(),
            metadata.ino(),
            metadata.dev(),
            metadata.mtime() as u64,
            metadata.mtime_nsec() as u64,
            metadata.ctime() as u64,
            metadata.ctime_nsec() as u64,
        ] {
            hasher.update(&number.to_le_bytes());
        }
        let id = hasher
            .try_finalize()
            .unwrap_or_else(|_| ObjectId::null(self.repo.object_hash()));
        if let Some(sizes) = &self.hashed_only {
            sizes.borrow_mut().insert(id, metadata.len());
        }
        let kind = if gix::fs::is_executable(metadata) {
            EntryKind::BlobExecutable
        } else {
            EntryKind::Blob
        };
        (id, kind, metadata.clone())
    }

    /// Hash `size` bytes of `from` as a blob and write it as a loose object
    /// as they are read, or only hash it when objects live in memory. A file
    /// that shrinks while it is read is an error, never a truncated object.
    fn stream_blob(&self, from: impl Read, size: u64, path: &Path) -> Result<ObjectId, GitFailure> {
        let context = || format!("could not hash '{}'", path.display());
        let mut exact = Exact {
            inner: from,
            left: size,
        };
        if let Some(sizes) = &self.hashed_only {
            let mut hasher = gix::hash::hasher(self.repo.object_hash());
            hasher.update(&gix::objs::encode::loose_header(
                gix::objs::Kind::Blob,
                size,
            ));
            let mut buf = vec![0; 64 * 1024];
            loop {
                let read = exact.read(&mut buf).ctx(context)?;
                if read == 0 {
                    break;
                }
                hasher.update(&buf[..read]);
            }
            let id = hasher.try_finalize().ctx(context)?;
            sizes.borrow_mut().insert(id, size);
            return Ok(id);
        }
        use gix::objs::Write;
        self.repo
            .objects
            .write_stream(gix::objs::Kind::Blob, size, &mut exact)
            .ctx(context)
    }

    /// The size of blob `id` without reading it: from its header, or from
    /// [`Repo::stream_blob`] when it was only hashed.
    pub(crate) fn blob_size(&self, id: ObjectId) -> Option<u64> {
        if let Some(size) = self
            .hashed_only
            .as_ref()
            .and_then(|sizes| sizes.borrow().get(&id).copied())
        {
            return Some(size);
        }
        self.repo.find_header(id).ok().map(|header| header.size())
    }
}

/// Exactly `left` bytes of `inner`: fewer is an error.
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..want])?;
        if read == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            ));
        }
        self.left -= read as u64;
        Ok(read)
    }
}

/// `700 MB`, `1.5 KB`: a size for people, in powers of 1000.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

/// Attributes that make checkout rewrite a blob on its way out.
const CONVERTING: [&str; 6] = [
    "text",
    "eol",
    "crlf",
    "ident",
    "filter",
    "working-tree-encoding",
];

impl Repo {
    /// Check out the big blobs among `positions` of `index` by streaming
    /// them from their loose objects, and return the positions done. A
    /// blob that is packed, small, or that a filter would convert, a path
    /// whose directories are not plain directories, are left to gix's
    /// checkout, which reads blobs whole.
    pub(crate) fn stream_big_checkouts(
        &self,
        index: &mut gix::index::File,
        positions: &std::collections::HashSet<usize>,
    ) -> Result<std::collections::HashSet<usize>, GitFailure> {
        use gix::index::entry::Mode;
        let mut done = std::collections::HashSet::new();
        let big: Vec<usize> = positions
            .iter()
            .copied()
            .filter(|&at| {
                let entry = &index.entries()[at];
                matches!(entry.mode, Mode::FILE | Mode::FILE_EXECUTABLE)
                    && self.loose_path(entry.id).is_file()
                    && self
                        .blob_size(entry.id)
                        .is_some_and(|size| size > STREAM_ABOVE)
            })
            .collect();
        if big.is_empty() || self.converts_line_endings() {
            return Ok(done);
        }
        let mut attributes = self
            .repo
            .attributes_only(
                index,
                gix::worktree::stack::state::attributes::Source::IdMappingThenWorktree,
            )
            .ctx(|| "could not read .gitattributes".into())?;
        let mut outcome = attributes.selected_attribute_matches(CONVERTING);
        for at in big {
            let (path, mode, id) = {
                let entry = &index.entries()[at];
                (entry.path(index).to_owned(), entry.mode, entry.id)
            };
            let converts = attributes
                .at_entry(path.as_bstr(), Some(mode))
                .ctx(|| format!("could not read the attributes of '{path}'"))?
                .matching_attributes(&mut outcome);
            let converts = converts
                && outcome.iter_selected().any(|found| {
                    !matches!(found.assignment.state, gix::attrs::StateRef::Unspecified)
                });
            if converts {
                continue;
            }
            let relative = gix::path::from_bstr(path.as_bstr())
                .ctx(|| format!("'{path}' is not a valid path here"))?;
            let target = self.workdir().join(&relative);
            if !self.plain_parents(&relative) {
                continue;
            }
            if target.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
                continue;
            }
            self.stream_out(id, &target, mode == Mode::FILE_EXECUTABLE)
                .ctx(|| format!("could not check out '{path}'"))?;
            index.entries_mut()[at].stat = gix::index::entry::Stat::default();
            done.insert(at);
        }
        Ok(done)
    }

    fn loose_path(&self, id: ObjectId) -> std::path::PathBuf {
        let hex = id.to_hex().to_string();
        self.repo
            .objects
            .store_ref()
            .path()
            .join(&hex[..2])
            .join(&hex[2..])
    }

    /// `core.autocrlf` or `core.eol` may convert any text file.
    fn converts_line_endings(&self) -> bool {
        let config = self.repo.config_snapshot();
        let autocrlf = config.string("core.autocrlf");
        autocrlf.is_some_and(|value| !value.eq_ignore_ascii_case(b"false"))
            || config.string("core.eol").is_some()
    }

    /// Whether every directory above `relative` is a plain directory, or
    /// not there yet: never write through a symlink or over a file.
    fn plain_parents(&self, relative: &Path) -> bool {
        let mut dir = self.workdir().to_owned();
        let Some(parent) = relative.parent() else {
            return true;
        };
        for part in parent.components() {
            dir.push(part);
            match dir.symlink_metadata() {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return false,
                Err(_) => return true,
            }
        }
        true
    }

    /// Inflate loose object `id` into `target`, through a temporary file
    /// beside it that is renamed into place.
    fn stream_out(&self, id: ObjectId, target: &Path, executable: bool) -> std::io::Result<()> {
        use std::io::Write;
        let dir = target.parent().unwrap_or(self.workdir());
        std::fs::create_dir_all(dir)?;
        let source = std::fs::File::open(self.loose_path(id))?;
        let mut source = std::io::BufReader::with_capacity(64 * 1024, source);
        let mut inflate = gix::zlib::Decompress::new();
        let mut out = tempfile::NamedTempFile::new_in(dir)?;
        let mut buf = vec![0; 256 * 1024];
        let mut header = true;
        loop {
            let read = gix::zlib::stream::inflate::read(&mut source, &mut inflate, &mut buf)?;
            if read == 0 {
                break;
            }
            let mut data = &buf[..read];
            if header {
                let Some(end) = data.iter().position(|b| *b == 0) else {
                    return Err(std::io::Error::other("a loose object header is too long"));
                };
                data = &data[end + 1..];
                header = false;
            }
            out.write_all(data)?;
        }
        use std::os::unix::fs::PermissionsExt;
        let file = out.as_file();
        let mode = file.metadata()?.permissions().mode() & 0o777;
        let mode = if executable {
            mode | ((mode & 0o444) >> 2)
        } else {
            mode
        };
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        // A rename replaces a file or a symlink, never what a symlink
        // points to.
        out.persist(target).map_err(|err| err.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(999), "999 bytes");
        assert_eq!(human_size(1_500), "1.5 KB");
        assert_eq!(human_size(700_000_000), "700 MB");
        assert_eq!(human_size(734_003_200), "734 MB");
    }

    #[test]
    fn a_short_read_is_an_error_not_a_shorter_object() {
        let mut exact = Exact {
            inner: &b"abc"[..],
            left: 5,
        };
        let mut out = Vec::new();
        let err = exact.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
        let mut exact = Exact {
            inner: &b"abcdef"[..],
            left: 4,
        };
        let mut out = Vec::new();
        exact.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcd");
    }
}
