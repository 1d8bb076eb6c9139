use super::*;

const RECORDED: &str = include_str!("../../../tests/fixtures/trackers/beads/issues.jsonl");

fn ids(snapshot: &Snapshot) -> Vec<&str> {
    snapshot.issues.iter().map(|i| i.id.as_str()).collect()
}

#[test]
fn the_recorded_file_gives_its_open_work_in_the_order_of_work() {
    let snapshot = parse(Path::new("issues.jsonl"), RECORDED).expect("parse");
    let by_id: HashMap<&str, &Issue> = snapshot.issues.iter().map(|i| (i.id.as_str(), i)).collect();
    assert!(!by_id.contains_key("bd-1c7e"), "closed");
    assert_eq!(
        ids(&snapshot),
        ["bd-5d2a", "bd-2e8c", "bd-9f3b"],
        "bd-9f3b (priority 0) waits for bd-2e8c: {:?}",
        snapshot.warnings
    );
    assert_eq!(by_id["bd-9f3b"].depends_on, ["bd-2e8c"]);
    assert_eq!(by_id["bd-9f3b"].priority, Some(0));
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
}

#[test]
fn waiting_on_deferred_work_leaves_an_issue_out_and_whatever_waits_on_it() {
    let text = concat!(
        r#"{"id":"a","title":"A","status":"deferred","priority":1}"#,
        "\n",
        r#"{"id":"b","title":"B","status":"open","priority":1,"dependencies":[{"issue_id":"b","depends_on_id":"a","type":"blocks"}]}"#,
        "\n",
        r#"{"id":"c","title":"C","status":"open","priority":1,"dependencies":[{"issue_id":"c","depends_on_id":"b","type":"blocks"},{"issue_id":"c","depends_on_id":"zz","type":"blocks"}]}"#,
        "\n",
        r#"{"id":"d","title":"D","status":"open","priority":3}"#,
        "\n"
    );
    let snapshot = parse(Path::new("f"), text).expect("parse");
    assert_eq!(ids(&snapshot), ["d"]);
    let kinds: Vec<WarningKind> = snapshot.warnings.iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        [
            WarningKind::LeftOut,
            WarningKind::LeftOut,
            WarningKind::OutsideDependency,
            WarningKind::LeftOut
        ],
        "{:?}",
        snapshot.warnings
    );
}

#[test]
fn a_parent_waits_for_its_children_and_related_work_does_not_wait() {
    let text = concat!(
        r#"{"id":"epic","title":"E","status":"open","priority":0,"issue_type":"epic"}"#,
        "\n",
        r#"{"id":"kid","title":"K","status":"in_progress","priority":3,"dependencies":[{"issue_id":"kid","depends_on_id":"epic","type":"parent-child"},{"issue_id":"kid","depends_on_id":"epic","type":"related"}]}"#,
        "\n",
        r#"{"id":"note","title":"N","status":"open","issue_type":"message"}"#,
        "\n"
    );
    let snapshot = parse(Path::new("f"), text).expect("parse");
    assert_eq!(ids(&snapshot), ["kid", "epic"], "the epic after its child");
    assert_eq!(snapshot.issues[1].depends_on, ["kid"]);
    assert!(snapshot.issues[0].depends_on.is_empty());
    assert!(
        snapshot
            .warnings
            .iter()
            .any(|w| w.message.contains("note") && w.message.contains("`message`")),
        "{:?}",
        snapshot.warnings
    );
}

#[test]
fn a_line_that_is_not_an_issue_names_its_line() {
    let error = parse(Path::new("issues.jsonl"), "{\"id\":\"a\"}\n\nnot json\n").expect_err("bad");
    assert!(
        error
            .to_string()
            .starts_with("issues.jsonl:3: not a beads issue"),
        "{error}"
    );
    let error = parse(Path::new("issues.jsonl"), "").expect_err("empty");
    assert!(matches!(error, IssuesError::NoIssues { .. }), "{error}");
}

#[test]
fn criteria_are_one_a_line() {
    assert_eq!(
        criteria("- [ ] greets\n* says bye\n\n plain\n"),
        ["greets", "says bye", "plain"]
    );
}

#[test]
fn records_that_are_not_issues_are_passed_over() {
    let text = concat!(
        r#"{"_type":"issue","id":"a","title":"A","status":"open","priority":2}"#,
        "\n",
        r#"{"_type":"memory","key":"k","value":"v"}"#,
        "\n",
        r#"{"_type":"config","key":"k"}"#,
        "\n"
    );
    let snapshot = parse(Path::new("f"), text).expect("parse");
    assert_eq!(ids(&snapshot), ["a"]);
    assert_eq!(snapshot.warnings.len(), 1, "{:?}", snapshot.warnings);
    assert!(snapshot.warnings[0].message.contains("`config`"));
}

#[test]
fn waits_for_waits_on_the_children_and_unknown_types_are_named() {
    let text = concat!(
        r#"{"id":"gate","title":"G","priority":0,"dependencies":[{"depends_on_id":"spawner","type":"waits-for"}]}"#,
        "\n",
        r#"{"id":"spawner","title":"S","priority":1}"#,
        "\n",
        r#"{"id":"kid","title":"K","priority":3,"dependencies":[{"depends_on_id":"spawner","type":"parent-child"},{"depends_on_id":"gate","type":"mirrors"}]}"#,
        "\n"
    );
    let snapshot = parse(Path::new("f"), text).expect("parse");
    assert_eq!(ids(&snapshot), ["kid", "gate", "spawner"]);
    assert_eq!(snapshot.warnings.len(), 1, "{:?}", snapshot.warnings);
    assert!(snapshot.warnings[0].message.contains("`mirrors`"));
}
