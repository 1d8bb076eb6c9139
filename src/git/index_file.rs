//! The index file as bytes. gix serialises an index one field at a time
//! through a hashing writer, which on 100,000 entries costs as much as
//! comparing them all with the worktree; the engine rewrites the index after
//! every checkpoint and revert. The plain case (version 2: no extended
//! flags, no sparse directories, and no extensions, since the engine drops
//! the cache-tree and resolve-undo before writing) is encoded here in one
//! buffer and hashed once. Anything else goes to gix's writer, and the bytes
//! are the same either way.

use gix::index::entry::Flags;

/// The index file `index` is written as, when it is the plain case: header,
/// entries and trailing checksum, with no extension. `None` otherwise.
pub(crate) fn encode_plain(index: &gix::index::State) -> Option<Vec<u8>> {
    if !plain_entries(index) || index.tree().is_some() || index.resolve_undo().is_some() {
        return None;
    }
    let entries = index.entries();
    let count = u32::try_from(entries.len()).ok()?;
    let hash_len = index.object_hash().len_in_bytes();
    let paths: usize = entries.iter().map(|e| e.path(index).len()).sum();
    let mut out = Vec::with_capacity(12 + entries.len() * (62 + 8 + hash_len) + paths + hash_len);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    for entry in entries {
        push_entry(&mut out, entry, entry.path(index));
    }
    seal(&mut out, index.object_hash())?;
    Some(out)
}

/// Whether `index` can be written by [`encode_plain`], its extensions
/// aside.
pub(crate) fn plain_entries(index: &gix::index::State) -> bool {
    !index.is_sparse()
        && !index
            .entries()
            .iter()
            .any(|e| e.flags.intersects(Flags::EXTENDED | Flags::REMOVE))
}

/// One entry as a version-2 index holds it, written under `path` (which a
/// split index leaves empty for an entry it replaces).
pub(crate) fn push_entry(out: &mut Vec<u8>, entry: &gix::index::Entry, path: &[u8]) {
    let start = out.len();
    let stat = entry.stat;
    for field in [
        stat.ctime.secs,
        stat.ctime.nsecs,
        stat.mtime.secs,
        stat.mtime.nsecs,
        stat.dev,
        stat.ino,
        entry.mode.bits(),
        stat.uid,
        stat.gid,
        stat.size,
    ] {
        out.extend_from_slice(&field.to_be_bytes());
    }
    out.extend_from_slice(entry.id.as_bytes());
    let max = Flags::PATH_LEN.bits() as usize;
    let path_len = path.len().min(max) as u16;
    out.extend_from_slice(&(entry.flags.to_storage().bits() | path_len).to_be_bytes());
    out.extend_from_slice(path);
    // At least one NUL, then up to the next multiple of eight.
    let len = out.len() - start + 1;
    out.resize(out.len() + 1 + (8 - len % 8) % 8, 0);
}

/// Append the checksum of everything in `out` to it, as every index ends.
pub(crate) fn seal(out: &mut Vec<u8>, kind: gix::hash::Kind) -> Option<()> {
    let mut hasher = gix::hash::hasher(kind);
    hasher.update(out);
    out.extend_from_slice(hasher.try_finalize().ok()?.as_slice());
    Some(())
}

#[cfg(test)]
mod tests {
    use gix::index::entry::stat::Time;
    use gix::index::entry::{Flags, Mode, Stat};

    fn gix_bytes(file: &gix::index::File) -> Vec<u8> {
        let mut out = Vec::new();
        file.write_to(&mut out, gix::index::write::Options::default())
            .unwrap();
        out
    }

    fn file_with(entries: &[(&str, Flags, Mode)]) -> gix::index::File {
        let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
        for (n, (path, flags, mode)) in entries.iter().enumerate() {
            let n = n as u32;
            let stat = Stat {
                mtime: Time {
                    secs: 1_700_000_000 + n,
                    nsecs: n * 7,
                },
                ctime: Time {
                    secs: 1_600_000_000 + n,
                    nsecs: n * 11,
                },
                dev: 2049,
                ino: 100 + n,
                uid: 1000,
                gid: 1000,
                size: n * 13,
            };
            let id = gix::ObjectId::from_hex(format!("{n:040x}").as_bytes()).unwrap();
            state.dangerously_push_entry(stat, id, *flags, *mode, path.as_bytes().into());
        }
        state.sort_entries();
        gix::index::File::from_state(state, std::path::PathBuf::from("index"))
    }

    #[test]
    fn plain_entries_encode_as_gix_writes_them() {
        let long = "d/".repeat(2100) + "f";
        let file = file_with(&[
            ("a", Flags::empty(), Mode::FILE),
            ("ab", Flags::empty(), Mode::FILE_EXECUTABLE),
            ("abc/defg", Flags::ASSUME_VALID, Mode::SYMLINK),
            ("sub", Flags::empty(), Mode::COMMIT),
            ("x/1234567", Flags::empty(), Mode::FILE),
            ("x/12345678", Flags::empty(), Mode::FILE),
            ("ü/日本", Flags::empty(), Mode::FILE),
            (long.as_str(), Flags::empty(), Mode::FILE),
        ]);
        let ours = super::encode_plain(&file).expect("the plain case");
        assert_eq!(ours, gix_bytes(&file));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index"), &ours).unwrap();
        let read = gix::index::File::at(
            dir.path().join("index"),
            gix::hash::Kind::Sha1,
            false,
            Default::default(),
        )
        .expect("gix reads it back, checksum and all");
        assert_eq!(read.entries().len(), 8);
    }

    #[test]
    fn conflict_stages_encode_as_gix_writes_them() {
        let stage = |n: u32| Flags::from_bits_retain(n << 12);
        let file = file_with(&[
            ("c", stage(1), Mode::FILE),
            ("c", stage(2), Mode::FILE),
            ("c", stage(3), Mode::FILE),
        ]);
        assert_eq!(super::encode_plain(&file).unwrap(), gix_bytes(&file));
    }

    #[test]
    fn an_empty_index_encodes_as_gix_writes_it() {
        let file = file_with(&[]);
        assert_eq!(super::encode_plain(&file).unwrap(), gix_bytes(&file));
    }

    #[test]
    fn extended_flags_go_to_gix() {
        let file = file_with(&[("a", Flags::INTENT_TO_ADD | Flags::EXTENDED, Mode::FILE)]);
        assert!(super::encode_plain(&file).is_none());
    }
}
