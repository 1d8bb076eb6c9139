use gix::index::entry::stat::Time;
use gix::index::entry::{Flags, Mode, Stat};

use super::{SharedBase, encode_split, file_name};
use crate::git::index_file::encode_plain;

fn stat(n: u32) -> Stat {
    Stat {
        mtime: Time {
            secs: 1_700_000_000 + n,
            nsecs: n,
        },
        ctime: Time {
            secs: 1_600_000_000,
            nsecs: 0,
        },
        dev: 1,
        ino: n,
        uid: 0,
        gid: 0,
        size: n,
    }
}

/// An index of `(path, stage, content number)`.
fn index_of(entries: &[(String, u32, u32)]) -> gix::index::State {
    let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
    for (path, stage, n) in entries {
        let id = gix::ObjectId::from_hex(format!("{n:040x}").as_bytes()).unwrap();
        let flags = Flags::from_bits_retain(stage << 12);
        state.dangerously_push_entry(stat(*n), id, flags, Mode::FILE, path.as_str().into());
    }
    state.sort_entries();
    state
}

fn listing(state: &gix::index::State) -> Vec<(String, u32, gix::ObjectId, Stat)> {
    state
        .entries()
        .iter()
        .map(|e| (e.path(state).to_string(), e.stage_raw(), e.id, e.stat))
        .collect()
}

/// Write `base` as a shared index and `index` split against it, read the
/// result back with gix, and return what it read.
fn round_trip(base: &gix::index::State, index: &gix::index::State) -> Option<gix::index::File> {
    let dir = tempfile::tempdir().unwrap();
    let shared = encode_plain(base).unwrap();
    let checksum = gix::ObjectId::from_bytes_or_panic(&shared[shared.len() - 20..]);
    std::fs::write(dir.path().join(file_name(&checksum)), &shared).unwrap();
    let base = SharedBase {
        checksum,
        index: std::sync::Arc::new(gix::fs::FileSnapshot::new(gix::index::File::from_state(
            base.clone(),
            dir.path().join("unused"),
        ))),
    };
    let bytes = encode_split(index, &base)?;
    std::fs::write(dir.path().join("index"), &bytes).unwrap();
    Some(
        gix::index::File::at(
            dir.path().join("index"),
            gix::hash::Kind::Sha1,
            false,
            Default::default(),
        )
        .expect("gix reads the split index"),
    )
}

fn numbered(count: u32) -> Vec<(String, u32, u32)> {
    (0..count)
        .map(|n| (format!("d{}/f{n:04}", n % 7), 0, n))
        .collect()
}

#[test]
fn an_unchanged_index_is_read_back_whole() {
    let base = index_of(&numbered(300));
    let read = round_trip(&base, &base).unwrap();
    assert_eq!(listing(&read), listing(&base));
}

#[test]
fn replaced_added_and_deleted_entries_are_read_back() {
    let mut entries = numbered(1000);
    // Replaced across several bitmap words, with gaps between them.
    for at in [0usize, 5, 63, 64, 65, 200, 999] {
        entries[at].2 += 5000;
    }
    // Deleted, including the first and the last.
    for at in [998usize, 500, 130, 1] {
        entries.remove(at);
    }
    entries.push(("a-new-first".into(), 0, 7001));
    entries.push(("d3/f0100-new".into(), 0, 7002));
    entries.push(("zz/new-last".into(), 0, 7003));
    let base = index_of(&numbered(1000));
    let index = index_of(&entries);
    let read = round_trip(&base, &index).unwrap();
    assert_eq!(listing(&read), listing(&index));
}

#[test]
fn conflict_stages_are_entries_of_their_own() {
    let mut entries = numbered(100);
    entries.push(("d1/f0001".into(), 1, 8001));
    entries.push(("d1/f0001".into(), 3, 8003));
    entries.retain(|(path, stage, _)| !(path == "d1/f0001" && *stage == 0));
    entries.push(("d1/f0001".into(), 2, 8002));
    let base = index_of(&numbered(100));
    let index = index_of(&entries);
    let read = round_trip(&base, &index).unwrap();
    assert_eq!(listing(&read), listing(&index));
}

#[test]
fn an_emptied_index_deletes_every_shared_entry() {
    let base = index_of(&numbered(3));
    let index = index_of(&[]);
    // All three gone is more than a fifth of the shared index.
    assert!(round_trip(&base, &index).is_none());
    let base = index_of(&numbered(64 * 3 + 1));
    let mut entries = numbered(64 * 3 + 1);
    entries.truncate(64 * 3);
    let read = round_trip(&base, &index_of(&entries)).unwrap();
    assert_eq!(listing(&read), listing(&index_of(&entries)));
}

#[test]
fn more_than_a_fifth_changed_asks_for_a_new_shared_index() {
    let base = index_of(&numbered(100));
    let mut entries = numbered(100);
    for entry in entries.iter_mut().take(21) {
        entry.2 += 9000;
    }
    assert!(round_trip(&base, &index_of(&entries)).is_none());
    entries[20].2 -= 9000;
    assert!(round_trip(&base, &index_of(&entries)).is_some());
}
