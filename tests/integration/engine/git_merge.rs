//! A story's work merged onto the run's branch, through the library,
//! judged by `git merge-tree --write-tree` on the same commits: the same
//! tree when it merges cleanly, a conflict on the same paths when it does
//! not, and the tracking file taken as the branch has it.

use proptest::prelude::*;

use super::fixture::*;
use git_ralph::git::{ObjectId, Repo, StoryMerge};

fn id(hex: &str) -> ObjectId {
    ObjectId::from_hex(hex.as_bytes()).unwrap()
}

/// Commit `files` (path, content; `None` deletes) on a new branch `name`
/// from `base`; returns the commit.
fn side(fx: &Fixture, name: &str, base: &str, files: &[(&str, Option<&str>)]) -> String {
    fx.git(&["switch", "-q", "-c", name, base]);
    for (path, content) in files {
        match content {
            Some(text) => {
                fx.write(path, text);
            }
            None => fx.remove(path),
        }
    }
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "--allow-empty", "-m", name]);
    let tip = fx.git(&["rev-parse", "HEAD"]);
    fx.git(&["switch", "-q", "main"]);
    tip
}

/// What git says of merging `theirs` onto `ours` from `base`: the tree, or
/// the conflicted paths.
fn oracle(fx: &Fixture, base: &str, ours: &str, theirs: &str) -> StoryMerge {
    let out = fx.git_output(&[
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        &format!("--merge-base={base}"),
        ours,
        theirs,
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let tree = lines.next().unwrap_or_default().to_owned();
    if out.status.success() {
        StoryMerge::Clean { tree: id(&tree) }
    } else {
        let mut paths: Vec<String> = lines.filter(|l| !l.is_empty()).map(str::to_owned).collect();
        paths.sort();
        paths.dedup();
        StoryMerge::Conflicted { paths }
    }
}

fn ours_merge(fx: &Fixture, base: &str, ours: &str, theirs: &str, keep: &str) -> StoryMerge {
    Repo::open(&fx.root)
        .unwrap()
        .merge_work(id(base), id(ours), id(theirs), keep)
        .unwrap()
}

const TEN: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

#[test]
fn work_on_other_files_and_other_lines_merges_as_git_merges_it() {
    let fx = Fixture::new();
    fx.write("ten.txt", TEN);
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "ten"]);
    let base = fx.git(&["rev-parse", "HEAD"]);
    let ours = side(
        &fx,
        "ours",
        &base,
        &[
            ("ten.txt", Some(&TEN.replace("2\n", "two\n"))),
            ("ours.txt", Some("ours\n")),
        ],
    );
    let theirs = side(
        &fx,
        "theirs",
        &base,
        &[
            ("ten.txt", Some(&TEN.replace("9\n", "nine\n"))),
            ("docs/remove-me.txt", None),
            ("new/theirs.txt", Some("theirs\n")),
        ],
    );
    let merged = ours_merge(&fx, &base, &ours, &theirs, "tasks.md");
    assert!(matches!(merged, StoryMerge::Clean { .. }), "{merged:?}");
    assert_eq!(merged, oracle(&fx, &base, &ours, &theirs));
}

#[test]
fn the_same_lines_changed_twice_conflict_on_the_paths_git_names() {
    let fx = Fixture::new();
    let base = fx.git(&["rev-parse", "HEAD"]);
    let ours = side(
        &fx,
        "ours",
        &base,
        &[("src/a.txt", Some("ours\n")), ("both.txt", Some("ours\n"))],
    );
    let theirs = side(
        &fx,
        "theirs",
        &base,
        &[
            ("src/a.txt", Some("theirs\n")),
            ("both.txt", Some("theirs\n")),
        ],
    );
    let merged = ours_merge(&fx, &base, &ours, &theirs, "tasks.md");
    assert_eq!(
        merged,
        StoryMerge::Conflicted {
            paths: vec!["both.txt".into(), "src/a.txt".into()]
        }
    );
    assert_eq!(merged, oracle(&fx, &base, &ours, &theirs));
    // A file changed on one side and deleted on the other conflicts too.
    let deleting = side(&fx, "deleting", &base, &[("docs/keep.txt", None)]);
    let editing = side(
        &fx,
        "editing",
        &base,
        &[("docs/keep.txt", Some("edited\n"))],
    );
    assert_eq!(
        ours_merge(&fx, &base, &deleting, &editing, "tasks.md"),
        StoryMerge::Conflicted {
            paths: vec!["docs/keep.txt".into()]
        }
    );
}

#[test]
fn the_tracking_file_is_taken_as_the_branch_has_it() {
    let fx = Fixture::new();
    fx.write("tasks.md", "- [ ] 1.1 a\n- [ ] 2.1 b\n");
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "tasks"]);
    let base = fx.git(&["rev-parse", "HEAD"]);
    // Adjacent ticks conflict as text; the tracking file is not merged as
    // text, so nothing conflicts and the branch's copy is kept.
    let ours = side(
        &fx,
        "ours",
        &base,
        &[("tasks.md", Some("- [x] 1.1 a\n- [ ] 2.1 b\n"))],
    );
    let theirs = side(
        &fx,
        "theirs",
        &base,
        &[
            ("tasks.md", Some("- [ ] 1.1 a\n- [x] 2.1 b\n")),
            ("b.txt", Some("b\n")),
        ],
    );
    assert!(matches!(
        oracle(&fx, &base, &ours, &theirs),
        StoryMerge::Conflicted { .. }
    ));
    let StoryMerge::Clean { tree } = ours_merge(&fx, &base, &ours, &theirs, "tasks.md") else {
        panic!("the tracking file must not conflict");
    };
    let tree = tree.to_string();
    assert_eq!(
        fx.git(&["show", &format!("{tree}:tasks.md")]),
        "- [x] 1.1 a\n- [ ] 2.1 b"
    );
    assert_eq!(fx.git(&["show", &format!("{tree}:b.txt")]), "b");
}

/// A small edit of one of three files, as a side of a merge makes it.
fn edit() -> impl Strategy<Value = (usize, Option<(usize, String)>)> {
    (
        0usize..3,
        prop::option::weighted(0.85, (0usize..10, "[a-c]{1,3}")),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// 24 cases: random line edits and deletions of three ten-line files
    /// on both sides merge to git's tree, or conflict on git's paths.
    #[test]
    fn merges_agree_with_git(ours in prop::collection::vec(edit(), 0..4), theirs in prop::collection::vec(edit(), 0..4)) {
        let fx = Fixture::new();
        for n in 0..3 {
            fx.write(format!("f{n}.txt"), TEN);
        }
        fx.git(&["add", "-A"]);
        fx.git(&["commit", "-q", "-m", "files"]);
        let base = fx.git(&["rev-parse", "HEAD"]);
        let apply = |edits: &[(usize, Option<(usize, String)>)]| {
            let mut files: Vec<Option<Vec<String>>> =
                (0..3).map(|_| Some(TEN.lines().map(str::to_owned).collect())).collect();
            for (file, change) in edits {
                match (change, files[*file].as_mut()) {
                    (Some((line, text)), Some(lines)) => lines[*line] = text.clone(),
                    (None, _) => files[*file] = None,
                    (Some(_), None) => {}
                }
            }
            files
                .into_iter()
                .enumerate()
                .map(|(n, lines)| (format!("f{n}.txt"), lines.map(|l| l.join("\n") + "\n")))
                .collect::<Vec<_>>()
        };
        let (ours_files, theirs_files) = (apply(&ours), apply(&theirs));
        let o: Vec<(&str, Option<&str>)> = ours_files.iter().map(|(p, c)| (p.as_str(), c.as_deref())).collect();
        let t: Vec<(&str, Option<&str>)> = theirs_files.iter().map(|(p, c)| (p.as_str(), c.as_deref())).collect();
        let ours_commit = side(&fx, "ours", &base, &o);
        let theirs_commit = side(&fx, "theirs", &base, &t);
        prop_assert_eq!(
            ours_merge(&fx, &base, &ours_commit, &theirs_commit, "tasks.md"),
            oracle(&fx, &base, &ours_commit, &theirs_commit)
        );
    }
}

/// The files that changed between two trees are git's: `git diff
/// --name-status --no-renames`, with directories that became files and
/// files that became directories, whole directories added and removed, and
/// a mode change.
#[test]
fn issue_39_changed_files_are_what_git_diff_names() {
    let fx = Fixture::new();
    let old = fx.git(&["rev-parse", "HEAD^{tree}"]);
    fx.remove("docs");
    fx.write("docs", "a file where a directory was\n");
    fx.remove("src/a.txt");
    fx.write("src/a.txt/inner.txt", "a directory where a file was\n");
    fx.write("new/deep/er/file.txt", "new\n");
    fx.chmod_x("run.sh", false);
    fx.git(&["add", "-A"]);
    let new = fx.git(&["write-tree"]);
    let repo = Repo::open(&fx.root).unwrap();
    let ours: Vec<String> = repo
        .changed_files(oid(&old), oid(&new))
        .unwrap()
        .into_iter()
        .map(|file| {
            let status = match (file.old, file.new) {
                (None, _) => "A",
                (_, None) => "D",
                _ => "M",
            };
            format!("{status}\t{}", file.path)
        })
        .collect();
    let mut gits: Vec<String> = fx
        .git(&["diff", "--name-status", "--no-renames", &old, &new])
        .lines()
        .map(str::to_owned)
        .collect();
    gits.sort_by(|a, b| a[2..].cmp(&b[2..]));
    assert_eq!(ours, gits);
}

fn oid(hex: &str) -> ObjectId {
    ObjectId::from_hex(hex.as_bytes()).unwrap()
}
