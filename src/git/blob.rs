//! Worktree file → blob with memory that does not grow with the file. A
//! file above [`STREAM_ABOVE`] that no filter converts is hashed and
//! written straight from disk into a loose object, as `git add` does above
//! `core.bigFileThreshold`; smaller files, and files a filter rewrites, go
//! through gix's filter pipeline in memory as before. A repository that
//! keeps its objects in memory (the live diff) only hashes a big file and
//! remembers its size, so the diff can name it without reading it.

use std::io::Read;
use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
use gix::objs::tree::EntryKind;

use super::ObjectId;
use super::error::{Context, GitFailure};
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
