//! The index written as git's split index: the bulk of the entries once, in
//! a shared file `sharedindex.<checksum>` beside the index, and in the index
//! file itself only what differs from it, named by two bitmaps (which shared
//! entries are gone, which are replaced) and followed by the entries that
//! are new. git and gix read such an index as the one it stands for.
//!
//! The loop rewrites the index after every checkpoint and revert, for an
//! attempt that touched a dozen files; on 100,000 files the whole index is
//! 8 MB to encode, hash and write each time, more than everything else a
//! watched checkpoint does. Split, each write costs what changed.
//!
//! This file only encodes; when to write split, and handing the index back
//! whole at the end, is `split_writes.rs`.

use super::ids::ObjectId;
use super::index_file::{plain_entries, push_entry, seal};

/// A shared index the next writes describe their index against: its
/// checksum (which names its file) and what it holds.
pub(crate) struct SharedBase {
    pub checksum: ObjectId,
    pub index: gix::worktree::Index,
}

/// The name of the shared index with this checksum, beside the index.
pub(crate) fn file_name(checksum: &ObjectId) -> String {
    format!("sharedindex.{checksum}")
}

/// Whether a repository writes its index split, and against what.
#[derive(Default)]
pub(crate) struct SplitWrites {
    /// Write split once the index has this many entries; `None`: never.
    pub from: Option<usize>,
    /// The shared index the next write is described against.
    pub base: Option<SharedBase>,
    /// Shared indexes no longer in use, removed once the index that no
    /// longer names them is in place.
    pub retired: Vec<String>,
}

/// What a write of the index was.
pub(crate) enum Written {
    /// Split, against the shared index named, when the write made it.
    Split(Option<ObjectId>),
    /// Whole, no longer split.
    Whole,
}

/// The index file of a split index, and the shared index it made first.
pub(crate) struct Split {
    pub bytes: Vec<u8>,
    pub new_base: Option<ObjectId>,
}

/// At most this part of a shared index may differ before a new one is
/// written: git's own `splitIndex.maxPercentChange` default, 20%.
const MAX_CHANGED_PART: usize = 5;

/// `index` as the index file of a split index whose shared part is `base`:
/// `None` when it is not the plain case, or when so much changed that a new
/// shared index is due.
pub(crate) fn encode_split(index: &gix::index::State, base: &SharedBase) -> Option<Vec<u8>> {
    if !plain_entries(index) || index.tree().is_some() || index.resolve_undo().is_some() {
        return None;
    }
    let shared: &gix::index::State = &base.index;
    let diff = differences(index, shared);
    let changed = diff.replaced.len() + diff.added.len() + diff.deleted.len();
    if changed > 0 && changed * MAX_CHANGED_PART > shared.entries().len() {
        return None;
    }
    let entries = index.entries();
    // Replaced entries first, in the shared index's order and without a
    // name (they take the shared entry's), then the new ones, sorted.
    let written = diff
        .replaced
        .iter()
        .map(|&at| (&entries[at], &b""[..]))
        .chain(diff.added.iter().map(|&at| {
            let path: &[u8] = entries[at].path(index);
            (&entries[at], path)
        }));
    assemble(
        written,
        &base.checksum,
        &diff.deleted,
        &diff.replaced_in_base,
        index.object_hash(),
    )
}

/// The index file of a split index identical to its shared part.
pub(crate) fn encode_unchanged(checksum: &ObjectId) -> Option<Vec<u8>> {
    assemble(std::iter::empty(), checksum, &[], &[], checksum.kind())
}

/// Header, `entries` under the names given, the link to the shared index
/// `checksum` with its two bitmaps, and the checksum of it all.
fn assemble<'a>(
    entries: impl Iterator<Item = (&'a gix::index::Entry, &'a [u8])>,
    checksum: &ObjectId,
    deleted: &[u32],
    replaced: &[u32],
    kind: gix::hash::Kind,
) -> Option<Vec<u8>> {
    let mut body = Vec::with_capacity(4096);
    let mut count = 0u32;
    for (entry, path) in entries {
        push_entry(&mut body, entry, path);
        count = count.checked_add(1)?;
    }
    let mut out = Vec::with_capacity(body.len() + 256);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&body);
    let mut link = Vec::with_capacity(64);
    link.extend_from_slice(checksum.as_bytes());
    ewah(deleted, &mut link);
    ewah(replaced, &mut link);
    out.extend_from_slice(b"link");
    out.extend_from_slice(&u32::try_from(link.len()).ok()?.to_be_bytes());
    out.extend_from_slice(&link);
    seal(&mut out, kind)?;
    Some(out)
}

/// How `index` differs from the shared index `base`, entry by entry.
#[derive(Default)]
struct Differences {
    /// Positions in `index` of entries that replace a shared one.
    replaced: Vec<usize>,
    /// Positions in `base` of the entries replaced.
    replaced_in_base: Vec<u32>,
    /// Positions in `index` of entries the shared index does not have.
    added: Vec<usize>,
    /// Positions in `base` of entries `index` no longer has.
    deleted: Vec<u32>,
}

fn differences(index: &gix::index::State, base: &gix::index::State) -> Differences {
    use std::cmp::Ordering;
    let (ours, theirs) = (index.entries(), base.entries());
    let (mut i, mut j) = (0, 0);
    let mut diff = Differences::default();
    while i < ours.len() || j < theirs.len() {
        let order = match (ours.get(i), theirs.get(j)) {
            (Some(a), Some(b)) => {
                let (pa, pb) = (a.path(index), b.path(base));
                match pa.cmp(pb) {
                    Ordering::Equal => a.stage_raw().cmp(&b.stage_raw()),
                    other => other,
                }
            }
            (Some(_), None) => Ordering::Less,
            (None, _) => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                diff.added.push(i);
                i += 1;
            }
            Ordering::Greater => {
                diff.deleted.push(j as u32);
                j += 1;
            }
            Ordering::Equal => {
                if !same(&ours[i], &theirs[j]) {
                    diff.replaced.push(i);
                    diff.replaced_in_base.push(j as u32);
                }
                i += 1;
                j += 1;
            }
        }
    }
    diff
}

/// Whether two entries of one path are written the same.
fn same(a: &gix::index::Entry, b: &gix::index::Entry) -> bool {
    a.stat == b.stat
        && a.id == b.id
        && a.mode == b.mode
        && a.flags.to_storage().bits() == b.flags.to_storage().bits()
}

/// The bitmap with `bits` (ascending) set, in the EWAH form git writes:
/// the bit count, the 64-bit words, and where the last marker word is. A
/// marker word says how many all-zero words come, then how many literal
/// words follow it; only words with a bit set are written literally.
fn ewah(bits: &[u32], out: &mut Vec<u8>) {
    const LITERALS_SHIFT: u32 = 33;
    let mut words: Vec<u64> = vec![0];
    let mut marker = 0;
    let mut next_word = 0u64;
    let mut at = 0;
    while at < bits.len() {
        let word_index = u64::from(bits[at] / 64);
        let mut literal = 0u64;
        while at < bits.len() && u64::from(bits[at] / 64) == word_index {
            literal |= 1 << (bits[at] % 64);
            at += 1;
        }
        let gap = word_index - next_word;
        if gap > 0 {
            if words[marker] >> LITERALS_SHIFT > 0 {
                words.push(0);
                marker = words.len() - 1;
            }
            // A u32 bit position is at most 2^26 words on: the 32-bit run
            // length always holds the gap.
            words[marker] |= gap << 1;
        }
        words.push(literal);
        words[marker] += 1 << LITERALS_SHIFT;
        next_word = word_index + 1;
    }
    let bit_count = bits.last().map_or(0, |last| last + 1);
    out.extend_from_slice(&bit_count.to_be_bytes());
    out.extend_from_slice(&(words.len() as u32).to_be_bytes());
    for word in &words {
        out.extend_from_slice(&word.to_be_bytes());
    }
    out.extend_from_slice(&(marker as u32).to_be_bytes());
}

#[cfg(test)]
mod tests;
