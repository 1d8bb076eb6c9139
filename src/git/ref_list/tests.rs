use std::fs;

use super::*;

/// A repository whose branches sit in loose files under three directories.
fn repo_with_branches() -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    crate::git::init(dir.path()).expect("init");
    let mut repo = Repo::open(dir.path()).expect("open");
    fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let commit = repo.checkpoint("first").expect("a commit").commit;
    for name in [
        "refs/heads/a/one",
        "refs/heads/b/two",
        "refs/heads/c/four",
        "refs/heads/c/three",
    ] {
        repo.set_ref(name, commit, "test").expect("a branch");
    }
    (dir, repo)
}

#[test]
fn a_directory_deleted_mid_listing_is_an_error_of_something_vanished() {
    let (dir, repo) = repo_with_branches();
    let platform = repo.repo.references().unwrap();
    let mut listing = platform.prefixed("refs/heads/").unwrap();
    let first = listing.next().expect("a ref").expect("read");
    assert_eq!(first.name().as_bstr(), "refs/heads/a/one");
    fs::remove_dir_all(dir.path().join(".git/refs/heads/b")).unwrap();
    let rest: Vec<_> = listing.collect();
    let errors: Vec<_> = rest.iter().filter_map(|item| item.as_ref().err()).collect();
    assert!(!errors.is_empty(), "{rest:?}");
    assert!(errors.iter().all(|err| vanished(*err)), "{errors:?}");
}

#[test]
fn a_ref_deleted_mid_listing_is_an_error_of_something_vanished() {
    let (dir, repo) = repo_with_branches();
    let platform = repo.repo.references().unwrap();
    let mut listing = platform.prefixed("refs/heads/c/").unwrap();
    let first = listing.next().expect("a ref").expect("read");
    assert_eq!(first.name().as_bstr(), "refs/heads/c/four");
    fs::remove_file(dir.path().join(".git/refs/heads/c/three")).unwrap();
    let errors: Vec<_> = listing.by_ref().filter_map(Result::err).collect();
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|err| vanished(err)), "{errors:?}");
}

#[test]
fn a_listing_names_every_ref_under_the_prefix() {
    let (_dir, repo) = repo_with_branches();
    let names: Vec<String> = repo
        .listed_refs("refs/heads/")
        .unwrap()
        .iter()
        .map(|r| r.name().as_bstr().to_string())
        .collect();
    assert!(names.contains(&"refs/heads/a/one".to_owned()), "{names:?}");
    assert!(
        names.contains(&"refs/heads/c/three".to_owned()),
        "{names:?}"
    );
    assert_eq!(names.len(), 5, "with the checked-out branch: {names:?}");
}

type Listing = Box<dyn std::error::Error + Send + Sync>;

/// Lists `refs/heads/` `times` times while another thread makes and
/// deletes a branch in a directory of its own, so that the directory comes
/// and goes.
fn listings_under_churn(
    list: impl Fn(&Repo) -> Result<usize, Listing>,
    times: usize,
) -> Vec<Result<usize, Listing>> {
    let (dir, repo) = repo_with_branches();
    let commit = repo.resolve_ref("refs/heads/a/one").unwrap().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (stop, path) = (stop.clone(), dir.path().to_owned());
        std::thread::spawn(move || {
            // Written as git writes a ref: whole, then renamed into place.
            let (churned, staged) = (
                path.join(".git/refs/heads/churn/branch"),
                path.join(".git/churn.staged"),
            );
            let line = format!("{commit}\n");
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                fs::write(&staged, &line).unwrap();
                fs::create_dir_all(churned.parent().unwrap()).unwrap();
                fs::rename(&staged, &churned).unwrap();
                fs::remove_dir_all(churned.parent().unwrap()).unwrap();
            }
        })
    };
    let results = (0..times).map(|_| list(&repo)).collect();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    churn.join().unwrap();
    results
}

#[test]
fn a_listing_while_branches_come_and_go_is_whole() {
    // Without taking it again, listing meets the vanished paths (however
    // busy the machine keeps the other thread).
    let seen = (0..20).any(|_| {
        listings_under_churn(
            |repo| {
                repo.list_once("refs/heads/", Vanished::Fail)
                    .map(|refs| refs.len())
            },
            300,
        )
        .iter()
        .any(Result::is_err)
    });
    assert!(seen, "the churn is seen");
    let listed = listings_under_churn(
        |repo| {
            repo.listed_refs("refs/heads/")
                .map(|refs| refs.len())
                .map_err(Listing::from)
        },
        300,
    );
    for result in listed {
        let count = result.expect("a listing");
        assert!((5..=6).contains(&count), "{count}");
    }
}
