//! Issue 28: the files git-ralph keeps in `.git/ralph/` read back after
//! damage. `tests/fixtures/state/` holds what a real run of two stories
//! (one attempt failed, three checkpoints' worth of events) left there; the
//! tests cut those files at every byte, give their fields values of the
//! wrong type, and write garbage where the lock, the agent's pid file and
//! the learnings are. Every reading ends in a result or in an error that
//! names the file; what is tolerated is said on each test.

use std::path::{Path, PathBuf};

use git_ralph::audit::{self, EventsIndex, Follower, FoundRun, RunFiles};
use git_ralph::contract::{Contract, ContractError};
use git_ralph::events::Record;
use git_ralph::state::{self, Report, RunDir, RunLock, StateError, learnings};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

use crate::harness::fuzz::{awkward_text, cases, cut_bytes, replace_nodes, wrong_json};

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/state")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// A run directory `<tmp>/ralph/greet` to damage.
fn run_dir() -> (tempfile::TempDir, RunDir) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = RunDir::new(&tmp.path().join("ralph"), "greet");
    std::fs::create_dir_all(&dir.dir).expect("run dir");
    (tmp, dir)
}

/// 2,902 cases, one per cut of the 2,901-byte fixture: `state.json` cut
/// at every byte is an error that names the file, with the line and
/// column where JSON stopped making sense; the whole file (its final white
/// space aside) reads.
#[test]
fn fuzz_state_json_cut_at_every_byte() {
    let whole = fixture("state.json");
    let (_tmp, dir) = run_dir();
    let complete = String::from_utf8_lossy(&whole).trim_end().len();
    for at in 0..=whole.len() {
        std::fs::write(dir.state_path(), &whole[..at]).expect("written");
        match dir.load() {
            Ok(state) => {
                assert!(at >= complete, "a state cut at byte {at} read as {state:?}");
            }
            Err(error @ StateError::Corrupt { .. }) => {
                assert!(at < complete, "the whole state did not read: {error}");
                let message = error.to_string();
                assert!(message.contains("state.json"), "{message}");
                let cause = std::error::Error::source(&error)
                    .expect("a cause")
                    .to_string();
                assert!(cause.contains("line"), "cut at {at}: {cause}");
            }
            Err(other) => panic!("cut at {at}: {other}"),
        }
    }
}

/// What a reader of a run's state must be able to do with any state that
/// reads: report it for `status`, trail it for `log`, pick its attempts for
/// `show`, sum it up.
fn use_state(state: &git_ralph::state::RunState, dir: &RunDir) -> Result<(), TestCaseError> {
    for holder in [None, Some(1)] {
        let report = Report::new(state, holder).with_learnings(state, &dir.learnings_path());
        serde_json::to_string(&report).expect("status --json");
    }
    let found = FoundRun {
        dir: dir.clone(),
        label: "greet".to_owned(),
        history: false,
    };
    let trail = audit::trail(&found, state);
    serde_json::to_string(&trail).expect("log --json");
    let _ = state.receipts_summary();
    let _ = state.retries_to_resume();
    let _ = state.totals().tokens();
    let _ = state.stories_done();
    for story in state.stories() {
        let _ = audit::pick_attempt(state, &story.id);
        for attempt in &story.attempts {
            let _ = attempt.tokens();
            let picked = audit::pick_attempt(state, &format!("{}/{}", story.id, attempt.attempt));
            let first = state
                .stories()
                .iter()
                .find(|s| s.id == story.id)
                .map(|s| &s.attempts);
            let findable = !story.id.contains('/') && first == Some(&story.attempts);
            prop_assert!(picked.is_ok() || !findable, "{picked:?}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(256))]

    /// 256 cases: `state.json` with up to four fields given a value of
    /// another type (numbers at their limits among them). It reads and can
    /// be reported, or is an error naming the file and the line.
    #[test]
    fn fuzz_state_json_wrong_types(changes in proptest::collection::vec((0.0..1.0f64, wrong_json()), 1..5)) {
        let mut state: Value = serde_json::from_slice(&fixture("state.json")).expect("JSON");
        replace_nodes(&mut state, &changes, &[]);
        let (_tmp, dir) = run_dir();
        std::fs::write(dir.state_path(), serde_json::to_vec_pretty(&state).expect("JSON")).expect("written");
        match dir.load() {
            Ok(state) => use_state(&state, &dir)?,
            Err(error @ StateError::Corrupt { .. }) => {
                prop_assert!(error.to_string().contains("state.json"));
                let cause = std::error::Error::source(&error).expect("a cause").to_string();
                prop_assert!(cause.contains("line"), "{}", cause);
            }
            Err(other) => prop_assert!(false, "{}", other),
        }
    }
}

/// The records of the complete lines of `bytes` that parse, the way a
/// reader of `events.jsonl` must see them: a line still being written (no
/// newline yet) or damaged is skipped, never an error.
fn complete_records(bytes: &[u8]) -> Vec<Record> {
    let complete = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    bytes[..complete]
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// One line of a damaged `events.jsonl`.
#[derive(Debug, Clone)]
enum EventLine {
    Real(usize),
    WrongTypes(usize, Vec<(f64, Value)>),
    Cut(usize, f64),
    Garbage(String),
}

fn event_line() -> impl Strategy<Value = EventLine> {
    prop_oneof![
        4 => any::<usize>().prop_map(EventLine::Real),
        3 => (any::<usize>(), proptest::collection::vec((0.0..1.0f64, wrong_json()), 1..3))
            .prop_map(|(index, changes)| EventLine::WrongTypes(index, changes)),
        1 => (any::<usize>(), 0.0..1.0f64).prop_map(|(index, at)| EventLine::Cut(index, at)),
        1 => awkward_text(40).prop_map(EventLine::Garbage),
    ]
}

fn render_events(lines: &[EventLine], real: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        let pick = |index: usize| real[index % real.len()];
        match line {
            EventLine::Real(index) => out.extend_from_slice(pick(*index)),
            EventLine::WrongTypes(index, changes) => {
                let mut record: Value = serde_json::from_slice(pick(*index)).expect("JSON");
                replace_nodes(&mut record, changes, &[]);
                out.extend(serde_json::to_vec(&record).expect("JSON"));
            }
            EventLine::Cut(index, at) => out.extend_from_slice(cut_bytes(pick(*index), *at)),
            EventLine::Garbage(text) => out.extend_from_slice(text.as_bytes()),
        }
        out.push(b'\n');
    }
    out
}

/// Every reader of `events.jsonl` on `bytes`: `show --transcript` and its
/// checks, the index and the follower of the terminal screen.
fn read_all_events(dir: &RunDir, bytes: &[u8]) -> Result<Vec<Record>, TestCaseError> {
    let path = dir.events_path();
    std::fs::write(&path, bytes).expect("written");
    let mut records = Vec::new();
    audit::read_events(&path, 0, u64::MAX, |record| records.push(record)).expect("readable");
    let file = std::fs::File::open(&path).expect("open");
    let mut index = EventsIndex::default();
    index.update(&file).expect("indexed");
    prop_assert!(index.indexed <= bytes.len() as u64);
    for span in &index.spans {
        prop_assert!(
            span.start <= span.end && span.end <= bytes.len() as u64,
            "{span:?}"
        );
        let (events, skipped) = audit::read_transcript_tail(&path, span, 512).expect("tail");
        prop_assert!(skipped <= span.end - span.start);
        let _ = events;
        let files = RunFiles::new(dir.clone());
        files
            .each_transcript_event(&span.story, span.attempt, |_| {})
            .expect("transcript");
    }
    let mut opened = Follower::open(&path).expect("followed");
    let _ = opened.follower.backfill().expect("backfilled");
    let _ = opened.follower.poll().expect("polled");
    Ok(records)
}

proptest! {
    #![proptest_config(cases(128))]

    /// 128 cases: a run's `events.jsonl` built from its real lines, some
    /// with wrong types, some cut, some garbage, and the file itself cut at
    /// any byte: every reader skips what it cannot read, and the records
    /// read are those of the complete lines that parse.
    #[test]
    fn fuzz_state_events_damaged(
        lines in proptest::collection::vec(event_line(), 0..40),
        cut in proptest::option::of(0.0..=1.0f64),
    ) {
        let fixture = fixture("events.jsonl");
        let real: Vec<&[u8]> = fixture.split(|b| *b == b'\n').filter(|line| !line.is_empty()).collect();
        let mut bytes = render_events(&lines, &real);
        if let Some(cut) = cut {
            bytes = cut_bytes(&bytes, cut).to_vec();
        }
        let (_tmp, dir) = run_dir();
        let records = read_all_events(&dir, &bytes)?;
        let expected = complete_records(&bytes);
        prop_assert!(records.len() <= expected.len());
        if lines.iter().all(|line| matches!(line, EventLine::Real(_))) {
            prop_assert_eq!(
                serde_json::to_value(&records).expect("JSON"),
                serde_json::to_value(&expected).expect("JSON")
            );
        }
    }
}

/// 4,077 cases, one per cut of the 4,076-byte fixture: the run's real
/// `events.jsonl` cut at every byte gives exactly the records of the lines
/// complete before the cut.
#[test]
fn fuzz_state_events_cut_at_every_byte() {
    let whole = fixture("events.jsonl");
    let (_tmp, dir) = run_dir();
    for at in 0..=whole.len() {
        let bytes = &whole[..at];
        let mut records = Vec::new();
        std::fs::write(dir.events_path(), bytes).expect("written");
        audit::read_events(&dir.events_path(), 0, u64::MAX, |record| {
            records.push(record)
        })
        .expect("readable");
        assert_eq!(
            serde_json::to_value(&records).expect("JSON"),
            serde_json::to_value(complete_records(bytes)).expect("JSON"),
            "cut at {at}"
        );
    }
}

/// 70 cases, one per cut of the 69-byte fixture: the contract snapshot
/// (`contract.json`) cut at every byte is an error naming the file and
/// the line, or the contract.
#[test]
fn fuzz_state_contract_snapshot_cut_at_every_byte() {
    let whole = fixture("contract.json");
    let (_tmp, dir) = run_dir();
    let complete = String::from_utf8_lossy(&whole).trim_end().len();
    for at in 0..=whole.len() {
        std::fs::write(dir.dir.join("contract.json"), &whole[..at]).expect("written");
        match Contract::load_snapshot(&dir.dir) {
            Ok(Some(_)) => assert!(at >= complete, "cut at {at}"),
            Err(error @ ContractError::Invalid { .. }) => {
                let message = error.to_string();
                assert!(message.contains("contract.json"), "{message}");
                assert!(message.contains("line"), "{message}");
                assert!(error.hint().is_some(), "{message}");
            }
            other => panic!("cut at {at}: {other:?}"),
        }
    }
}

/// Contents of a lock or pid file: what git-ralph writes, cut short, and
/// numbers that are no process of ours.
fn pid_file_text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        select(
            &[
                "0\ngreet\n",
                "0",
                "1\ngreet\n",
                "-1\ngreet\n",
                "4294967295\ngreet\n",
                "2147483648\n",
                "99999999999999999999\n",
                " 0 \n",
                "",
                "\n",
                "\ngreet\n",
                "12345\ngr",
                "1",
                "\u{feff}123\n",
            ][..]
        )
        .prop_map(|text| text.as_bytes().to_vec()),
        // A live holder whose change is not UTF-8: read alike by `status`
        // and by `start`.
        Just(b"1\ngreet\x80\n".to_vec()),
        awkward_text(24).prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

proptest! {
    #![proptest_config(cases(256))]

    /// 256 cases: the repository's lock holding garbage, a cut PID, or a
    /// number that is no process: a holder is only ever a live process
    /// (never 0, which `kill` reads as "my own group"), and a lock whose
    /// holder is not alive is taken over.
    #[test]
    fn fuzz_state_lock_file(text in pid_file_text()) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let path = tmp.path().join("lock");
        std::fs::write(&path, &text).expect("written");
        let holder = state::lock_holder(&path);
        if let Some((pid, _)) = &holder {
            prop_assert!(*pid > 0, "pid 0 is no process: {text:?}");
            prop_assert!(state::process_alive(*pid));
        }
        match RunLock::acquire(&path, "greet") {
            Ok(lock) => {
                let ours = std::fs::read_to_string(&path).expect("the lock");
                prop_assert_eq!(ours, format!("{}\ngreet\n", std::process::id()));
                drop(lock);
                prop_assert!(!path.exists());
            }
            Err(state::LockError::Held { pid, .. }) => {
                prop_assert_eq!(holder.map(|(pid, _)| pid), Some(pid), "{:?}", text);
            }
            Err(other) => prop_assert!(false, "{}", other),
        }
    }

    /// 256 cases (those naming a group that may be alive set aside): the
    /// agent's pid file of a run holding garbage or a number
    /// that is no agent of a dead loop: ending the orphaned agent finds
    /// none, and signals nobody (0 and 1 would be git-ralph's own group
    /// and init's).
    #[test]
    fn fuzz_state_agent_pid_file(text in pid_file_text()) {
        // A number that could be a live group on this machine is never
        // tried: the function under test would signal it.
        let pid = std::str::from_utf8(&text).ok().and_then(|text| text.trim().parse::<u32>().ok());
        prop_assume!(pid.is_none_or(|pid| pid <= 1 || pid > i32::MAX as u32));
        let tmp = tempfile::tempdir().expect("temp dir");
        let path = tmp.path().join("agent.pid");
        std::fs::write(&path, &text).expect("written");
        prop_assert!(!git_ralph::process::end_orphaned_group(&path), "{:?}", text);
    }
}

proptest! {
    #![proptest_config(cases(512))]

    /// 512 cases: `learnings.md` holding awkward text: the excerpt for the
    /// prompt stays within its cap and never cuts a character.
    #[test]
    fn fuzz_state_learnings_excerpt(text in awkward_text(300), cap in 0usize..400) {
        let excerpt = learnings::excerpt(&text, cap);
        prop_assert!(excerpt.text.len() <= cap, "{} > {}", excerpt.text.len(), cap);
        prop_assert_eq!(excerpt.total_bytes, text.len());
    }

    /// 512 cases: an attempt's additions to `learnings.md` (any bytes, any
    /// length recorded before) are headed or left alone, never lost.
    #[test]
    fn fuzz_state_learnings_label(
        before in proptest::collection::vec(any::<u8>(), 0..40),
        added in prop_oneof![awkward_text(40).prop_map(String::into_bytes), proptest::collection::vec(any::<u8>(), 0..40)],
        recorded in 0u64..100,
    ) {
        let tmp = tempfile::tempdir().expect("temp dir");
        let path: PathBuf = tmp.path().join("learnings.md");
        let mut bytes = before.clone();
        bytes.extend_from_slice(&added);
        std::fs::write(&path, &bytes).expect("written");
        let labelled = learnings::label(&path, recorded, "1", 2).expect("labelled");
        let after = std::fs::read(&path).expect("read");
        if labelled {
            let text = String::from_utf8(after).expect("only text is labelled");
            prop_assert!(text.contains("## Attempt 2 at story 1"));
            let old = &bytes[..recorded as usize];
            prop_assert!(text.as_bytes().starts_with(old));
        } else {
            prop_assert_eq!(after, bytes);
        }
    }
}
