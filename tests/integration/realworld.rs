//! Task files people wrote in public repositories, scored against what a
//! careful reader expects of them (`tests/fixtures/realworld/expected.json`,
//! whose fields its README explains). Each item is laid out in a temporary
//! repository the way a user would have it and previewed exactly as
//! `start --dry-run` would; the score is printed, and any item read
//! differently from its expectation fails the test.

use std::path::{Path, PathBuf};

use serde_json::Value;

use git_ralph::preview::{Preview, PreviewOptions, StoryPreview, StoryStatus, preview};
use git_ralph::stories::{WarningKind, checklist};

/// How an item was read differently from its expectation, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Misread(String);

impl std::fmt::Display for Misread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Misread {
    fn from(why: &str) -> Self {
        Misread(why.to_owned())
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/realworld")
}

/// Lower case, `*` and `` ` `` dropped, white space collapsed.
fn norm(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '*' | '`'))
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn contains(haystack: &str, needle: &str) -> bool {
    norm(haystack).contains(&norm(needle))
}

/// A string, or a list meaning "any of these".
fn any_of(spec: &Value) -> Vec<&str> {
    match spec {
        Value::String(text) => vec![text.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// NUM: an integer, `{"one_of": [...]}` or `{"min", "max"}`.
fn num_ok(spec: &Value, n: usize) -> bool {
    let n = n as u64;
    match spec {
        Value::Number(number) => number.as_u64() == Some(n),
        Value::Object(map) => {
            if let Some(Value::Array(options)) = map.get("one_of") {
                return options.iter().any(|o| o.as_u64() == Some(n));
            }
            let min = map.get("min").and_then(Value::as_u64).unwrap_or(0);
            let max = map.get("max").and_then(Value::as_u64).unwrap_or(u64::MAX);
            (min..=max).contains(&n)
        }
        _ => false,
    }
}

/// The number an id carries: its last run of digits and dots.
fn id_number(id: &str) -> &str {
    let end = id.rfind(|c: char| c.is_ascii_digit()).map_or(0, |i| i + 1);
    let start = id[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    id[start..end].trim_matches('.')
}

/// Whether an id carries a heading's label: its number (`phase-1` carries
/// `1`), or the label itself when it has letters (`1a`, `P0`).
fn carries_label(id: &str, label: &str) -> bool {
    let last = id
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '.'))
        .next()
        .unwrap_or(id);
    id_number(id) == label || last.eq_ignore_ascii_case(label)
}

fn is_done(story: &StoryPreview) -> bool {
    story.status == StoryStatus::Done
}

fn story_matches(expected: &Value, got: &StoryPreview, prd: bool) -> Result<(), Misread> {
    let mut problems = Vec::new();
    if let Some(spec) = expected.get("title_contains") {
        let options = any_of(spec);
        if !options.iter().any(|t| contains(&got.title, t)) {
            problems.push(format!("title {:?} lacks {options:?}", got.title));
        }
    }
    if let Some(spec) = expected.get("id")
        && spec.as_str() != Some(got.id.as_str())
    {
        problems.push(format!("id {:?} is not {spec}", got.id));
    }
    if let Some(label) = expected.get("label").and_then(Value::as_str)
        && !carries_label(&got.id, label)
    {
        problems.push(format!("id {:?} does not carry label {label}", got.id));
    }
    if !prd
        && let Some(spec) = expected.get("tasks")
        && !num_ok(spec, got.tasks)
    {
        problems.push(format!("{} tasks, expected {spec}", got.tasks));
    }
    match expected.get("done") {
        Some(Value::Bool(done)) if *done != is_done(got) => {
            problems.push(format!("done is {}, expected {done}", is_done(got)));
        }
        Some(spec @ (Value::Number(_) | Value::Object(_))) if !num_ok(spec, got.done) => {
            problems.push(format!("{} done, expected {spec}", got.done));
        }
        _ => {}
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Misread(format!(
            "story {:?}: {}",
            got.id,
            problems.join("; ")
        )))
    }
}

fn optional(expected: &Value) -> bool {
    expected.get("optional").and_then(Value::as_bool) == Some(true)
}

fn match_ordered(expected: &[Value], got: &[&StoryPreview], prd: bool) -> Result<(), Misread> {
    let mut at = 0;
    for story in expected {
        let matched = got
            .get(at)
            .map(|g| story_matches(story, g, prd))
            .unwrap_or_else(|| Err(Misread::from("no story left")));
        match matched {
            Ok(()) => at += 1,
            Err(_) if optional(story) => {}
            Err(why) => return Err(Misread(format!("expected {story}: {why}"))),
        }
    }
    if at == got.len() {
        Ok(())
    } else {
        let extra: Vec<&str> = got[at..].iter().map(|s| s.title.as_str()).collect();
        Err(Misread(format!("unexpected stories: {extra:?}")))
    }
}

fn match_unordered(expected: &[Value], got: &[&StoryPreview], prd: bool) -> Result<(), Misread> {
    for story in got {
        let twin = expected
            .iter()
            .find(|e| e.get("id").and_then(Value::as_str) == Some(story.id.as_str()))
            .ok_or_else(|| Misread(format!("unexpected story {:?}", story.id)))?;
        story_matches(twin, story, prd)?;
    }
    for story in expected.iter().filter(|e| !optional(e)) {
        let id = story.get("id").and_then(Value::as_str);
        if !got.iter().any(|g| Some(g.id.as_str()) == id) {
            return Err(Misread(format!("missing story {story}")));
        }
    }
    Ok(())
}

/// Each TEXT of `specs` (a string, or a list meaning "any of these") must
/// occur in `text`, the part of the reading called `what`.
fn texts_in(specs: Option<&Value>, text: &str, what: &str) -> Result<(), Misread> {
    let Some(Value::Array(specs)) = specs else {
        return Ok(());
    };
    for spec in specs {
        let options = any_of(spec);
        if !options.iter().any(|wanted| contains(text, wanted)) {
            return Err(Misread(format!("{what} lacks {options:?}")));
        }
    }
    Ok(())
}

fn prompt_checks(specs: Option<&Value>, prompt: &str) -> Result<(), Misread> {
    texts_in(specs, prompt, "the prompt")
}

/// A refusal says what was found: `refusal_contains` names the words.
fn refusal_checks(specs: Option<&Value>, message: &str) -> Result<(), Misread> {
    texts_in(specs, message, &format!("the refusal {message:?}"))
}

/// The item laid out in a fresh repository: (repo, change, prd, tasks).
struct Layout {
    repo: tempfile::TempDir,
    change: String,
    prd: Option<PathBuf>,
    tasks: Option<PathBuf>,
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn lay_out(key: &str) -> Layout {
    let repo = tempfile::tempdir().expect("temp dir");
    let (kind, name) = key.split_once('/').expect("kind/name");
    let root = fixtures();
    match kind {
        "openspec" => {
            let change = name.rsplit("__").next().expect("change").to_owned();
            let dir = repo.path().join("openspec/changes").join(&change);
            copy_tree(&root.join(key), &dir);
            // The fixture keeps the repository's openspec/project.md beside
            // the change; a repository has it at the top of openspec/.
            if dir.join("project.md").is_file() {
                std::fs::rename(
                    dir.join("project.md"),
                    repo.path().join("openspec/project.md"),
                )
                .expect("move project.md");
            }
            Layout {
                repo,
                change,
                prd: None,
                tasks: None,
            }
        }
        "prd" => {
            std::fs::copy(
                root.join(format!("{key}.json")),
                repo.path().join("prd.json"),
            )
            .expect("copy prd");
            Layout {
                repo,
                change: "realworld".to_owned(),
                prd: Some(PathBuf::from("prd.json")),
                tasks: None,
            }
        }
        _ => {
            std::fs::copy(root.join(format!("{key}.md")), repo.path().join("PLAN.md"))
                .expect("copy checklist");
            Layout {
                repo,
                change: "realworld".to_owned(),
                prd: None,
                tasks: Some(PathBuf::from("PLAN.md")),
            }
        }
    }
}

impl Layout {
    fn tracking_file(&self) -> PathBuf {
        match (&self.prd, &self.tasks) {
            (Some(prd), _) => self.repo.path().join(prd),
            (_, Some(tasks)) => self.repo.path().join(tasks),
            _ => self
                .repo
                .path()
                .join("openspec/changes")
                .join(&self.change)
                .join("tasks.md"),
        }
    }

    fn preview(&self) -> Result<Preview, Misread> {
        preview(
            self.repo.path(),
            &self.change,
            None,
            self.prd.as_deref(),
            self.tasks.as_deref(),
            PreviewOptions::default(),
        )
        .map_err(|error| Misread(error.to_string()))
    }

    /// Removes every done mark from the story file.
    fn untick(&self) {
        let path = self.tracking_file();
        let text = std::fs::read_to_string(&path).expect("read story file");
        let unticked = if self.prd.is_some() {
            let mut value: Value = serde_json::from_str(&text).expect("json");
            let stories = match &mut value {
                Value::Array(stories) => stories,
                // The first list of objects holds the stories, whatever its key.
                Value::Object(map) => map
                    .values_mut()
                    .filter_map(Value::as_array_mut)
                    .find(|list| list.first().is_some_and(Value::is_object))
                    .expect("a list of stories"),
                _ => panic!("odd prd"),
            };
            for story in stories.iter_mut().filter_map(Value::as_object_mut) {
                story.insert("passes".to_owned(), Value::Bool(false));
                if story.contains_key("status") {
                    story.insert("status".to_owned(), Value::String("open".to_owned()));
                }
            }
            serde_json::to_string_pretty(&value).expect("json")
        } else {
            let lines = text.split('\n').count();
            (1..=lines).fold(text, |text, line| checklist::untick(&text, line))
        };
        std::fs::write(path, unticked).expect("write variant");
    }
}

/// No agent would start: every story is done.
fn nothing_to_do(preview: &Preview) -> bool {
    preview.all_done && preview.prompt.is_none()
}

/// The reading names open work it leaves out (a section out of scope, a
/// story set aside): finding nothing to do is then a refusal that says
/// why.
fn open_work_set_aside(preview: &Preview) -> bool {
    preview.warnings.iter().any(|warning| {
        warning.message.contains("open task") || warning.kind == WarningKind::SetAside
    })
}

/// Scores one item; `Err` says what was read differently.
fn score(key: &str, expected: &Value) -> Result<(), Misread> {
    let kind = expected["kind"].as_str().expect("kind");
    let prd = kind == "prd";
    let expect = expected["expect"].as_str().expect("expect");
    let all_done = expected.get("all_done").and_then(Value::as_bool) == Some(true);
    let variant_refusal_ok =
        expected.get("variant_refusal_ok").and_then(Value::as_bool) == Some(true);
    let layout = lay_out(key);
    let main = layout.preview();
    if let Err(refusal) = &main {
        refusal_checks(expected.get("refusal_contains"), &refusal.0)?;
    }
    let accept_all_done = expected.get("accept_all_done").and_then(Value::as_bool) == Some(true);
    if expect == "refuse" {
        return match main {
            Err(_) => Ok(()),
            Ok(main) if accept_all_done && nothing_to_do(&main) => Ok(()),
            Ok(_) => Err(Misread::from("read stories where a refusal was expected")),
        };
    }
    if expect == "refuse_or_stories"
        && main.as_ref().map_or(true, |main| {
            nothing_to_do(main) && open_work_set_aside(main)
        })
    {
        return Ok(());
    }
    let (structure, prompt) = if all_done {
        if let Ok(main) = &main
            && (main.prompt.is_some() || !main.all_done)
        {
            return Err(Misread::from(
                "every task is done, yet an agent would start",
            ));
        }
        layout.untick();
        let variant = match layout.preview() {
            Ok(variant) => variant,
            Err(_) if variant_refusal_ok => return Ok(()),
            Err(e) => return Err(Misread(format!("unticked variant: {e}"))),
        };
        let prompt = variant
            .prompt
            .clone()
            .ok_or("the unticked variant has no first prompt")?;
        let structure = match main {
            Ok(main) if !main.stories.is_empty() => main,
            _ => variant,
        };
        (structure, prompt)
    } else {
        let main = main?;
        let prompt = main.prompt.clone().ok_or("no first prompt")?;
        (main, prompt)
    };
    let stories: Vec<&StoryPreview> = structure
        .stories
        .iter()
        .filter(|s| prd || s.tasks > 0)
        .collect();

    if let Some(spec) = expected.get("n_stories")
        && !num_ok(spec, stories.len())
    {
        return Err(Misread(format!(
            "{} stories, expected {spec}",
            stories.len()
        )));
    }
    if !prd {
        let total: usize = stories.iter().map(|s| s.tasks).sum();
        let done: usize = stories.iter().map(|s| s.done).sum();
        if let Some(spec) = expected.get("total_tasks")
            && !num_ok(spec, total)
        {
            return Err(Misread(format!("{total} tasks in all, expected {spec}")));
        }
        if let Some(spec) = expected.get("total_done")
            && !num_ok(spec, done)
        {
            return Err(Misread(format!(
                "{done} tasks done in all, expected {spec}"
            )));
        }
    }
    if let Some(Value::Array(names)) = expected.get("not_stories") {
        for name in names.iter().filter_map(Value::as_str) {
            if let Some(story) = stories.iter().find(|s| contains(&s.title, name)) {
                return Err(Misread(format!(
                    "{:?} is not work, yet it is story {:?}",
                    name, story.id
                )));
            }
        }
    }
    if let Some(Value::Array(must)) = expected.get("must_include") {
        for story in must {
            if !stories.iter().any(|g| story_matches(story, g, prd).is_ok()) {
                return Err(Misread(format!("no story matches {story}")));
            }
        }
    }
    if !all_done && let Some(first) = expected.get("first_prompted_story") {
        let next = stories
            .iter()
            .find(|s| s.status == StoryStatus::Next)
            .ok_or("no story is prompted first")?;
        let titles = first.get("title_contains").map(any_of).unwrap_or_default();
        let ids = first.get("id").map(any_of).unwrap_or_default();
        let ok = titles.iter().any(|t| contains(&next.title, t)) || ids.contains(&next.id.as_str());
        if !ok {
            return Err(Misread(format!(
                "the first prompt is for {:?} ({:?}), expected {first}",
                next.id, next.title
            )));
        }
    }
    prompt_checks(expected.get("prompt_contains"), &prompt)?;
    let Some(Value::Array(alternatives)) = expected.get("alternatives") else {
        return Ok(());
    };
    let unordered = expected.get("unordered").and_then(Value::as_bool) == Some(true);
    let mut reasons = Vec::new();
    for alternative in alternatives {
        let wanted = alternative["stories"].as_array().expect("stories");
        let matched = if unordered {
            match_unordered(wanted, &stories, prd)
        } else {
            match_ordered(wanted, &stories, prd)
        }
        .and_then(|()| prompt_checks(alternative.get("prompt_contains"), &prompt));
        match matched {
            Ok(()) => return Ok(()),
            Err(why) => reasons.push(format!("{}: {why}", alternative["name"])),
        }
    }
    Err(Misread(format!(
        "no alternative matches — {}",
        reasons.join(" | ")
    )))
}

#[test]
fn issue_11_realworld_task_files_are_read_as_people_expect() {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).expect("expected.json");
    let expected: serde_json::Map<String, Value> = serde_json::from_str(&text).expect("json");
    let mut passed = 0;
    let mut failures = Vec::new();
    let items: Vec<(&String, &Value)> = expected
        .iter()
        .filter(|(key, _)| !key.starts_with('_'))
        .collect();
    for (key, entry) in &items {
        match score(key, entry) {
            Ok(()) => passed += 1,
            Err(why) => failures.push(format!("{key}: {why}")),
        }
    }
    for failure in &failures {
        println!("FAIL {failure}");
    }
    println!(
        "realworld score: {passed} of {} items read as expected",
        items.len()
    );
    assert_eq!(items.len(), 106, "the sample has 106 items");
    assert!(
        failures.is_empty(),
        "{} item(s) read wrongly",
        failures.len()
    );
}

/// A change to an expectation.
type Edit = Box<dyn Fn(&mut Value)>;

/// The scorer itself must be able to say no: each of these edits to a
/// passing item's expectation has to fail it.
#[test]
fn issue_11_realworld_scorer_rejects_wrong_expectations() {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).expect("expected.json");
    let expected: serde_json::Map<String, Value> = serde_json::from_str(&text).expect("json");
    let key = "openspec/Fission-AI__OpenSpec__2025-11-06-add-shell-completions";
    let good = expected[key].clone();
    assert_eq!(score(key, &good), Ok(()));
    let edits: Vec<(&str, Edit)> = vec![
        (
            "label",
            Box::new(|v| v["alternatives"][0]["stories"][0]["label"] = "2".into()),
        ),
        (
            "tasks",
            Box::new(|v| v["alternatives"][0]["stories"][1]["tasks"] = 8.into()),
        ),
        (
            "done",
            Box::new(|v| v["alternatives"][0]["stories"][3]["done"] = 18.into()),
        ),
        (
            "title",
            Box::new(|v| v["alternatives"][0]["stories"][2]["title_contains"] = "Zsh".into()),
        ),
        (
            "missing story",
            Box::new(|v| {
                v["alternatives"][0]["stories"]
                    .as_array_mut()
                    .expect("list")
                    .pop();
            }),
        ),
        (
            "not_stories",
            Box::new(|v| v["not_stories"] = serde_json::json!(["Zsh Completion"])),
        ),
        (
            "first",
            Box::new(|v| {
                v["first_prompted_story"] = serde_json::json!({"title_contains": ["Phase 5"]})
            }),
        ),
        (
            "prompt",
            Box::new(|v| v["prompt_contains"] = serde_json::json!(["no such text anywhere"])),
        ),
        ("total", Box::new(|v| v["total_done"] = 50.into())),
        ("refuse", Box::new(|v| v["expect"] = "refuse".into())),
    ];
    for (name, edit) in edits {
        let mut wrong = good.clone();
        edit(&mut wrong);
        assert!(
            score(key, &wrong).is_err(),
            "the scorer accepted a wrong {name}"
        );
    }
    let refused = "openspec/129s__NeoSHUSchedulingHelper__2025-12-08-2025-add-enrollment-functions";
    let mut said = expected[refused].clone();
    said["refusal_contains"] = serde_json::json!(["no checkbox"]);
    assert_eq!(score(refused, &said), Ok(()));
    said["refusal_contains"] = serde_json::json!(["every one of the tasks is done"]);
    assert!(
        score(refused, &said).is_err(),
        "the scorer accepted a refusal that does not say what it should"
    );
    let finished = "checklist/RATIU5__shadr__fix_plan";
    let mut strict = expected[finished].clone();
    assert_eq!(score(finished, &strict), Ok(()));
    strict["variant_refusal_ok"] = false.into();
    assert!(
        score(finished, &strict).is_err(),
        "the scorer accepted a refused variant where none may be refused"
    );
    let prd = "prd/subsy__ralph-tui__tasks-prd";
    let mut wrong = expected[prd].clone();
    wrong["alternatives"][0]["stories"][0]["done"] = false.into();
    assert!(
        score(prd, &wrong).is_err(),
        "the scorer accepted a wrong prd done flag"
    );
}
