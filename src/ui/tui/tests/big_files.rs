//! The loop screen's Diff view of an attempt at work that wrote a file far
//! larger than memory should hold: the real live diff of a real worktree,
//! rendered, names the file by its size and does not read it.

use super::*;
use crate::audit::AttemptDetails;
use crate::git::{ObjectId, Repo};

/// The live diff of a worktree against the commit the attempt began at.
struct LiveWorktree {
    repo: Repo,
    base: ObjectId,
}

impl AttemptDetails for LiveWorktree {
    fn diff(&self, _: &str, _: u32) -> Option<String> {
        self.repo.worktree_patch(self.base).ok()
    }
}

#[test]
fn issue_24_the_diff_view_names_a_700_mb_file_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    crate::git::init(dir.path()).unwrap();
    let config = dir.path().join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[user]\n\tname = Test\n\temail = test@example.invalid\n");
    std::fs::write(&config, text).unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
    let mut repo = Repo::open(dir.path()).unwrap();
    let base = repo.checkpoint("initial").unwrap().commit;
    // 700 MB that take no room on disk; reading them would take seconds.
    let big = std::fs::File::create(dir.path().join("big.bin")).unwrap();
    big.set_len(700_000_000).unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();

    let mut app = sample(Mode::Loop);
    press(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.tab, Tab::Diff);
    let details = LiveWorktree { repo, base };
    let started = Instant::now();
    app.load_details(&details, started);
    let took = started.elapsed();
    let screen = render(&mut app, 160, 48);
    assert!(
        screen.contains("Binary files /dev/null and b/big.bin differ (binary, 700 MB)"),
        "{screen}"
    );
    assert!(screen.contains("+world"), "{screen}");
    // Hashing 700 MB takes seconds even optimised; naming the file takes
    // a stat.
    assert!(took < Duration::from_secs(2), "the diff took {took:?}");
}
