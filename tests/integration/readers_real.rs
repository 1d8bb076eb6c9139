//! Issue 46, end to end through the real binary: files in the shapes real
//! trackers and plans take, each written here. An odd value in an advisory
//! field never refuses a prd.json; stories marked to be skipped are named,
//! not run; a section the file puts out of scope is skipped; an index of
//! the sections below is not work; a generic sub-heading never titles a
//! story; a stage number after a word or a mark is the story's id; beads
//! is read as `bd` reads it, and a big tracker in one pass.

use serde_json::{Value, json};

use crate::harness::{TestRepo, assert_exit, ralph, run, stdout};

/// `git ralph start demo ARGS --dry-run --json`: the preview, which must
/// be given.
fn preview(repo: &TestRepo, args: &[&str]) -> Value {
    let output = run(ralph(repo).args(["start", "demo"]).args(args).args([
        "--dry-run",
        "--json",
        "--agent-command",
        "true",
    ]));
    assert_exit(&output, 0);
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// The same dry run as a person reads it.
fn dry_run_text(repo: &TestRepo, args: &[&str]) -> String {
    let output = run(ralph(repo).args(["start", "demo"]).args(args).args([
        "--dry-run",
        "--agent-command",
        "true",
    ]));
    assert_exit(&output, 0);
    stdout(&output)
}

fn ids(preview: &Value) -> Vec<String> {
    preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|s| s["id"].as_str().expect("id").to_owned())
        .collect()
}

fn titles(preview: &Value) -> Vec<String> {
    preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|s| s["title"].as_str().expect("title").to_owned())
        .collect()
}

/// Every warning's message.
fn warnings(preview: &Value) -> Vec<String> {
    preview["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w["message"].as_str().expect("message").to_owned())
        .collect()
}

/// The one warning that holds every one of `words`.
fn warning_with(preview: &Value, words: &[&str]) -> String {
    let all = warnings(preview);
    all.iter()
        .find(|message| words.iter().all(|word| message.contains(word)))
        .cloned()
        .unwrap_or_else(|| panic!("no warning says {words:?}: {all:#?}"))
}

fn prd_repo(stories: Value) -> TestRepo {
    let text = serde_json::to_string_pretty(&json!({ "userStories": stories })).expect("json");
    TestRepo::with_files(&[("prd.json", &text)])
}

fn story(id: &str, priority: Value) -> Value {
    json!({"id": id, "title": format!("Story {id}"), "priority": priority, "passes": false})
}

/// Pattern 1: a story slotted in between (9.5), a priority word nobody
/// listed, notes that are not text: the file is read, 9.5 runs between 9
/// and 10, and each odd value is named with its file and story.
#[test]
fn issue_46_an_odd_advisory_value_never_refuses_a_prd() {
    let mut notes = story("US-4", json!(3));
    notes["notes"] = json!({"by": "alice"});
    let repo = prd_repo(json!([
        story("US-1", json!(10)),
        story("US-2", json!(9.5)),
        story("US-3", json!("someday")),
        notes,
        story("US-5", json!(9)),
    ]));
    let preview = preview(&repo, &["--prd", "prd.json"]);
    assert_eq!(
        ids(&preview),
        ["US-4", "US-5", "US-2", "US-1", "US-3"],
        "{preview}"
    );
    warning_with(&preview, &["prd.json", "US-3", "someday"]);
    warning_with(&preview, &["prd.json", "US-4", "notes"]);
}

/// A prd.json is refused only when nothing in it can be run, and the
/// refusal names the file, the story and the field.
#[test]
fn issue_46_a_prd_is_refused_only_when_nothing_can_run() {
    let mut bad = story("US-2", json!(2));
    bad["passes"] = json!("perhaps");
    let repo = prd_repo(json!([story("US-1", json!(1)), bad.clone()]));
    let preview = preview(&repo, &["--prd", "prd.json"]);
    assert_eq!(ids(&preview), ["US-1"], "{preview}");
    warning_with(&preview, &["prd.json", "US-2", "passes"]);

    let repo = prd_repo(json!([bad]));
    let output = run(ralph(&repo).args([
        "start",
        "demo",
        "--prd",
        "prd.json",
        "--dry-run",
        "--agent-command",
        "true",
    ]));
    assert_ne!(output.status.code(), Some(0));
    let said = crate::harness::stderr(&output);
    for word in ["prd.json", "US-2", "passes"] {
        assert!(said.contains(word), "{word} missing from {said}");
    }
}

/// Pattern 2: stories marked to be skipped are not run, and the dry run
/// lists each with its reason.
#[test]
fn issue_46_stories_marked_to_skip_are_named_not_run() {
    let mut skip = story("US-2", json!(1));
    skip["skip"] = json!(true);
    skip["skipReason"] = json!("Requires a person to test");
    let mut blocked = story("US-3", json!(1));
    blocked["blocked"] = json!(true);
    let mut statuses = Vec::new();
    for (id, status) in [
        ("US-4", "deferred"),
        ("US-5", "manual"),
        ("US-6", "wontfix"),
        ("US-7", "skipped"),
        ("US-8", "blocked"),
    ] {
        let mut marked = json!({"id": id, "title": format!("Story {id}"), "priority": 1});
        marked["status"] = json!(status);
        statuses.push(marked);
    }
    let mut all = vec![story("US-1", json!(2)), skip, blocked];
    all.extend(statuses);
    let repo = prd_repo(Value::Array(all));
    let preview = preview(&repo, &["--prd", "prd.json"]);
    assert_eq!(ids(&preview), ["US-1"], "{preview}");
    assert!(
        preview["prompt"]
            .as_str()
            .expect("prompt")
            .contains("Story US-1")
    );
    warning_with(&preview, &["US-2", "Requires a person to test"]);
    warning_with(&preview, &["US-3", "blocked"]);
    for (id, status) in [
        ("US-4", "deferred"),
        ("US-5", "manual"),
        ("US-6", "wontfix"),
        ("US-7", "skipped"),
        ("US-8", "blocked"),
    ] {
        warning_with(&preview, &[id, status]);
    }
    let text = dry_run_text(&repo, &["--prd", "prd.json"]);
    assert!(text.contains("Requires a person to test"), "{text}");
}

/// Pattern 3: a numbered section the file puts out of scope is skipped
/// and named with its open tasks; one that only sounds like a non-work
/// section stays work.
#[test]
fn issue_46_a_numbered_out_of_scope_section_is_skipped() {
    let plan = "# Plan\n\n## 1. Setup\n- [x] 1.1 Add the crate\n\n\
                ## 2. Summary page\n- [ ] 2.1 Lay it out\n\n\
                ## 3. Follow-ons (out of scope here — noted for sequencing)\n\
                - [ ] 3.1 Sync the cache (separate change)\n\
                - [ ] 3.2 Drop the old table (separate change)\n\n\
                ## 4. Cleanup to do in a separate change\n- [ ] 4.1 Rename things\n\n\
                ## 5. Later work (not in this change)\n- [ ] 5.1 Dark mode\n";
    let repo = TestRepo::with_files(&[("PLAN.md", plan)]);
    let preview = preview(&repo, &["--tasks", "PLAN.md"]);
    assert_eq!(ids(&preview), ["1", "2"], "{preview}");
    warning_with(&preview, &["Follow-ons", "2 open"]);
    warning_with(&preview, &["Cleanup", "1 open"]);
    warning_with(&preview, &["Later work", "1 open"]);
}

/// Pattern 4: a summary list of boxes that repeats the headings below is
/// not work; where it disagrees with the details, the details win and the
/// preview says so.
#[test]
fn issue_46_a_summary_index_of_the_sections_is_not_work() {
    let plan = "# Roadmap\n\n## Phases\n\
                - [x] **Phase 1: Foundations**\n\
                - [x] **Phase 2: Billing**\n\
                - [ ] **Phase 3: Reports**\n\n\
                ### Phase 1: Foundations\n- [x] Set up the repo\n\n\
                ### Phase 2: Billing\n- [x] Invoices\n- [ ] Refunds\n\n\
                ### Phase 3: Reports\n- [ ] Monthly report\n";
    let repo = TestRepo::with_files(&[("ROADMAP.md", plan)]);
    let preview = preview(&repo, &["--tasks", "ROADMAP.md"]);
    assert_eq!(
        ids(&preview),
        ["phase-1", "phase-2", "phase-3"],
        "{preview}"
    );
    assert_eq!(preview["stories"][1]["status"], "next", "{preview}");
    warning_with(&preview, &["Phases", "Phase 2", "open"]);
}

/// Pattern 5: a generic sub-heading never becomes the title; the nearest
/// heading that names something does.
#[test]
fn issue_46_a_generic_sub_heading_never_titles_a_story() {
    let plan = "# Plan\n\n## Phase 3: Billing\n\n#### Tasks\n- [ ] Invoices\n- [ ] Refunds\n\n\
                ## Phase 4: Reports\n\n### CHECKLIST\n- [ ] Monthly\n\n\
                ## Search\n\n### To do\n- [ ] Index\n\n### Acceptance\n- [ ] Finds by name\n";
    let repo = TestRepo::with_files(&[("PLAN.md", plan)]);
    let preview = preview(&repo, &["--tasks", "PLAN.md"]);
    let titles = titles(&preview);
    assert_eq!(titles.len(), 4, "{preview}");
    for (title, wanted) in titles
        .iter()
        .zip(["Billing", "Reports", "Search", "Search"])
    {
        assert!(
            title.contains(wanted),
            "{title:?} lacks {wanted:?}: {preview}"
        );
        for generic in ["Tasks", "CHECKLIST", "To do", "Acceptance"] {
            assert!(!title.contains(generic), "{title:?}: {preview}");
        }
    }
    let ids = ids(&preview);
    assert_eq!(&ids[..2], ["phase-3", "phase-4"], "{preview}");
    assert_ne!(ids[2], ids[3], "{preview}");
}

/// Pattern 6: a stage number after a word, an emoji or a status mark is
/// the story's id, whatever the language; ids never collide.
#[test]
fn issue_46_stage_numbers_after_a_word_or_a_mark_are_ids() {
    let plan = "# Plan\n\n## 1. Prepare\n- [x] a\n\n\
                ### ✅ Etapa 0: Base\n- [x] b\n\n\
                ### 阶段 3：数据\n- [ ] c\n\n\
                ## Fase 2 - Pagos\n- [ ] d\n\n\
                ## Schritt 4: Tests\n- [ ] e\n\n\
                ## 🚀 Etapa 7 — Lanzamiento\n- [ ] f\n\n\
                ## Wrap up\n- [ ] g\n\n\
                ## 7. Polish\n- [ ] h\n";
    let repo = TestRepo::with_files(&[("PLAN.md", plan)]);
    let preview = preview(&repo, &["--tasks", "PLAN.md"]);
    let ids = ids(&preview);
    assert_eq!(
        &ids[..6],
        ["1", "etapa-0", "阶段-3", "fase-2", "schritt-4", "etapa-7"],
        "{preview}"
    );
    assert_eq!(ids[7], "7", "{preview}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "ids collide: {ids:?}");
    assert!(!ids[6].parse::<u32>().is_ok_and(|n| n == 7), "{ids:?}");
}

fn bead(id: &str, extra: Value) -> String {
    let mut issue = json!({
        "id": id,
        "title": format!("Issue {id}"),
        "status": "open",
        "priority": 1,
        "issue_type": "task",
        "created_at": "2025-01-01T00:00:00Z",
    });
    for (key, value) in extra.as_object().expect("object") {
        issue[key] = value.clone();
    }
    issue.to_string()
}

fn beads_repo(lines: &[String]) -> TestRepo {
    TestRepo::with_files(&[(".beads/issues.jsonl", &(lines.join("\n") + "\n"))])
}

/// Pattern 7: templates (and the steps under them) are not work; times
/// from different zones compare as instants; an issue with no priority is
/// read as bd reads it (P0), with a warning that says so.
#[test]
fn issue_46_beads_is_read_as_bd_reads_it() {
    let repo = beads_repo(&[
        bead("bd-late", json!({"created_at": "2025-01-01T09:00:00Z"})),
        bead(
            "bd-early",
            json!({"created_at": "2025-01-01T10:00:00+02:00"}),
        ),
        bead(
            "bd-mold",
            json!({"is_template": true, "issue_type": "epic", "priority": 0}),
        ),
        bead(
            "bd-step",
            json!({"priority": 0, "dependencies": [
                {"issue_id": "bd-step", "depends_on_id": "bd-mold", "type": "parent-child"}
            ]}),
        ),
        json!({"id": "bd-nopri", "title": "No priority", "status": "open",
               "issue_type": "task", "created_at": "2025-02-01T00:00:00-05:00"})
        .to_string(),
    ]);
    let preview = preview(&repo, &["--source", "beads"]);
    assert_eq!(
        ids(&preview),
        ["bd-nopri", "bd-early", "bd-late"],
        "{preview}"
    );
    warning_with(&preview, &["bd-nopri", "P0"]);
    warning_with(&preview, &["bd-mold", "template"]);
}

/// Pattern 8: a big tracker is ordered in one pass, blockers before what
/// they block and priorities among the ready.
#[test]
fn issue_46_a_big_beads_tracker_is_ordered_whole() {
    let count = 3000;
    let lines: Vec<String> = (0..count)
        .map(|n| {
            // Every tenth issue waits on the next one, which is of a lower
            // priority (a higher number).
            let dependencies = if n % 10 == 0 && n + 1 < count {
                json!([{"issue_id": format!("bd-{n}"), "depends_on_id": format!("bd-{}", n + 1), "type": "blocks"}])
            } else {
                json!([])
            };
            bead(
                &format!("bd-{n}"),
                json!({"priority": n % 4, "dependencies": dependencies,
                       "created_at": format!("2025-01-01T00:{:02}:{:02}Z", (n / 60) % 60, n % 60)}),
            )
        })
        .collect();
    let repo = beads_repo(&lines);
    let preview = preview(&repo, &["--source", "beads"]);
    let ids = ids(&preview);
    assert_eq!(ids.len(), count, "every issue is listed");
    let at = |id: &str| ids.iter().position(|other| other == id).expect(id);
    for n in (0..count - 1).step_by(10) {
        assert!(
            at(&format!("bd-{}", n + 1)) < at(&format!("bd-{n}")),
            "bd-{n} runs before its blocker"
        );
    }
    // Without waits, priority 0 comes first: the first listed is bd-4
    // (bd-0 waits on bd-1, of priority 1).
    assert_eq!(ids[0], "bd-4", "{:?}", &ids[..5]);
}
