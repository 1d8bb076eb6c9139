//! Which sections of a task file are not work, and why.
//!
//! A title alone never drops open tasks. A section is left out by its shape
//! and its words together:
//!
//! - an **unnumbered** section whose title starts with a bookkeeping phrase
//!   ([`DEFAULT_SKIP`]: Success Criteria, Notes, Completed, Rollback Plan…);
//!   a numbered group (`## 1. Summary page`) is work whatever its words;
//! - a section whose title puts it **out of scope** ([`OUT_OF_SCOPE`]:
//!   `Deferred`, `Out of Scope`, `Future Work`…), numbered or not: the file
//!   says not to do it in this change; so does a clause anywhere in the
//!   title ([`OUT_OF_SCOPE_CLAUSES`]: "(out of scope here)", "not in this
//!   change", "separate change");
//! - a **lifecycle list**: every box is a stage of the change (Planning,
//!   Implementation, Review, Done), at least one of them a stage that ends
//!   it. Such boxes track the change; nobody can "do Done";
//! - a section the user names in `skip` under `[stories]` in `ralph.toml`.
//!
//! The user's `keep` wins over every one of these. A name matches a section
//! by how its title (without its label) or its heading as written starts,
//! or by its label alone (`"3"`, `"phase-2"`). Every skipped section that
//! held boxes is reported with the reason, so nothing is dropped silently.

use super::lines::heading_label;

/// Headings that are not work when they are not numbered, unless
/// `ralph.toml` says otherwise. A heading matches when its title, without
/// its label, starts with one of these words (case does not matter), e.g.
/// "Success Criteria (UPDATED)" or "Notes on consistency". Besides reports
/// and records (criteria, legends, summaries, what is already done),
/// contingencies are not work: a rollback, fallback or mitigation plan is
/// carried out only if something goes wrong.
pub const DEFAULT_SKIP: &[&str] = &[
    "Success Criteria",
    "Validation Checklist",
    "Status Legend",
    "Legend",
    "Summary",
    "Notes",
    "Note",
    "Dependencies",
    "Optional",
    "Completed",
    "Recently Completed",
    "Done",
    "Overview",
    "Analysis Summary",
    "Risk Assessment",
    "Risks",
    "Estimated Timeline",
    "Timeline",
    "Verification Evidence",
    "Definition of Done",
    "Goals",
    "Non-Goals",
    "Open Questions",
    "References",
    // Contingencies: done only if something goes wrong.
    "Rollback Plan",
    "Rollback Procedure",
    "Rollback Procedures",
    "Rollback Strategy",
    "Rollback Steps",
    "Rollback Preparation",
    "Contingency",
    "Contingency Plan",
    "Contingency Plans",
    "Fallback Plan",
    "Backout Plan",
    "Emergency Procedures",
    "Disaster Recovery Plan",
    "Incident Response Plan",
    "Risk Mitigation",
    "Risks and Mitigations",
    "Mitigation Plan",
    "If Something Goes Wrong",
    // The same in Chinese, Japanese and Korean, written without spaces, so
    // they match as the start of a title whatever follows.
    "已完成",
    "近期完成",
    "完了済み",
    "완료",
    "验收标准",
    "驗收標準",
    "成功标准",
    "备注",
    "備註",
    "注意事项",
    "风险与应对",
    "风险和应对",
    "风险评估与应对",
    "應變計畫",
    "应急预案",
    "回滚方案",
    "回滚计划",
    "回滾方案",
];

/// Titles that put a section out of scope for the change, numbered or not:
/// the phrase must be what the title is about (see `is_subject`).
pub const OUT_OF_SCOPE: &[&str] = &[
    "Deferred",
    "Out of Scope",
    "Not in Scope",
    "Future Work",
    "Future Enhancements",
    "Future Improvements",
    "Future Ideas",
    "Won't Do",
    "Won't Have",
    "Postponed",
    "Parking Lot",
    "Icebox",
    "后续优化",
    "後續優化",
    "暂缓",
    "延后",
];

/// Clauses that put a section out of scope wherever its title says them,
/// numbered or not: `## 6. Follow-ons (out of scope here)`, `## 5.
/// Follow-ups (deferred — not in this change)`.
pub const OUT_OF_SCOPE_CLAUSES: &[&str] = &[
    "out of scope",
    "out-of-scope",
    "not in scope",
    "not in this change",
    "not part of this change",
    "outside this change",
    "not in this proposal",
    "separate change",
    "follow-up change",
    "followup change",
    "follow up change",
    "later change",
    "future change",
];

/// Stages of a change's lifecycle, as a status list names them.
const STAGES: &[&str] = &[
    "planning",
    "planned",
    "proposal",
    "proposed",
    "draft",
    "design",
    "designed",
    "spec",
    "specification",
    "approved",
    "approval",
    "implementation",
    "implementing",
    "implemented",
    "development",
    "in progress",
    "review",
    "reviewed",
    "in review",
    "code review",
    "testing",
    "tested",
    "qa",
    "verification",
    "verified",
    "validation",
    "validated",
    "documentation",
    "ready",
    "ready for review",
];

/// Stages that end a change: a list that holds one of these tracks it.
const FINAL_STAGES: &[&str] = &[
    "done",
    "complete",
    "completed",
    "merged",
    "deployed",
    "released",
    "archived",
    "shipped",
    "closed",
    "finished",
    "accepted",
];

/// Why a section is not read as work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// An unnumbered section whose title starts with this phrase of
    /// [`DEFAULT_SKIP`].
    NotWork(String),
    /// Its title starts with this phrase of [`OUT_OF_SCOPE`].
    OutOfScope(String),
    /// Its boxes are the stages of the change's lifecycle.
    Lifecycle,
    /// Its boxes are an index of the sections below it, which hold the
    /// tasks.
    Index,
    /// `skip` under `[stories]` in `ralph.toml` names it so.
    Named(String),
}

impl SkipReason {
    /// The reason in words, for a warning.
    pub fn describe(&self) -> String {
        match self {
            SkipReason::NotWork(phrase) => {
                format!("an unnumbered \"{phrase}\" section records the change rather than asks for work")
            }
            SkipReason::OutOfScope(phrase) => {
                format!("its title (\"{phrase}\") puts it out of scope for this change")
            }
            SkipReason::Lifecycle => {
                "its boxes are the lifecycle stages of the change (such as Planning, Review, Done), not tasks".to_owned()
            }
            SkipReason::Index => {
                "its boxes are an index of the sections below it, whose tasks are read instead".to_owned()
            }
            SkipReason::Named(name) => format!("`skip` under [stories] in ralph.toml names it (\"{name}\")"),
        }
    }

    /// Whether the sections inside one skipped for this reason are skipped
    /// too: a lifecycle list is about its own boxes only.
    pub(super) fn covers_subsections(&self) -> bool {
        !matches!(self, SkipReason::Lifecycle | SkipReason::Index)
    }
}

/// Which headings are not work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionRules {
    /// Sections skipped on top of the built-in rules, by name.
    pub skip: Vec<String>,
    /// Sections that are work even though a built-in rule, or `skip`,
    /// would leave them out, by name.
    pub keep: Vec<String>,
    /// Every section is work: for text whose headings are not the author's
    /// plan of work (an issue's body, a file git-ralph writes itself).
    pub all_work: bool,
}

/// What the rules look at in a section.
pub(super) struct SectionName<'a> {
    /// The heading's text as written, label included.
    pub text: &'a str,
    /// The title without its label.
    pub title: &'a str,
    /// The label's id (`3`, `phase-2`), when the heading has one.
    pub label: Option<&'a str>,
}

impl<'a> SectionName<'a> {
    pub fn new(text: &'a str, label: Option<&'a (String, String)>) -> Self {
        SectionName {
            text,
            title: label.map_or(text, |(_, title)| title.as_str()),
            label: label.map(|(id, _)| id.as_str()),
        }
    }
}

impl SectionRules {
    /// Rules under which every section is work.
    pub fn all_work() -> SectionRules {
        SectionRules {
            all_work: true,
            ..SectionRules::default()
        }
    }

    /// Whether an unnumbered heading title without boxes names a section
    /// that is not work.
    pub fn is_skipped(&self, title: &str) -> bool {
        self.reason(&SectionName::new(title, None), &[]).is_some()
    }

    /// Why the section is not work, or `None` when it is. `boxes` are the
    /// texts of the boxes directly under its heading.
    pub(super) fn reason(&self, name: &SectionName<'_>, boxes: &[String]) -> Option<SkipReason> {
        if self.all_work || self.keep.iter().any(|keep| names(keep, name)) {
            return None;
        }
        if let Some(skip) = self.skip.iter().find(|skip| names(skip, name)) {
            return Some(SkipReason::Named(skip.clone()));
        }
        if let Some(phrase) = OUT_OF_SCOPE
            .iter()
            .find(|phrase| is_subject(name.title, phrase))
        {
            return Some(SkipReason::OutOfScope((*phrase).to_owned()));
        }
        let title = normalize_title(name.title);
        if let Some(clause) = OUT_OF_SCOPE_CLAUSES
            .iter()
            .find(|clause| title.contains(*clause))
        {
            return Some(SkipReason::OutOfScope((*clause).to_owned()));
        }
        if name.label.is_none()
            && let Some(phrase) = starts_with_any(name.title, DEFAULT_SKIP)
        {
            return Some(SkipReason::NotWork(phrase.to_owned()));
        }
        is_lifecycle(boxes).then_some(SkipReason::Lifecycle)
    }

    /// Whether the user's `keep` names the section: it stays work even
    /// inside a skipped one.
    pub(super) fn keeps(&self, name: &SectionName<'_>) -> bool {
        self.keep.iter().any(|keep| names(keep, name))
    }
}

/// Whether a name the user wrote names the section: its label alone, or
/// how its title or its heading as written starts.
fn names(wanted: &str, section: &SectionName<'_>) -> bool {
    let wanted = wanted.trim();
    if let Some((id, title)) = heading_label(wanted)
        && title.is_empty()
    {
        return section
            .label
            .is_some_and(|label| label.eq_ignore_ascii_case(&id));
    }
    section
        .label
        .is_some_and(|label| label.eq_ignore_ascii_case(wanted))
        || starts_with(section.title, wanted)
        || starts_with(section.text, wanted)
}

/// Whether `phrase` is what the title is about: the whole title, or the
/// title's start before a bracket or a separator, or before a plain noun
/// for a list ("Deferred (v2)", "Out of scope: sync", "Future work
/// items"), but not the start of a sentence ("Deferred to the next
/// batch", which is still this plan's work).
fn is_subject(title: &str, phrase: &str) -> bool {
    if !starts_with(title, phrase) {
        return false;
    }
    let title = normalize_title(title);
    let rest = title[normalize_title(phrase).len()..].trim_start();
    let next_word = rest.split(|c: char| !c.is_alphanumeric()).next();
    rest.chars().next().is_none_or(|c| !c.is_alphanumeric())
        || next_word.is_some_and(|word| LIST_NOUNS.contains(&word))
}

/// Words that name what a section lists.
const LIST_NOUNS: &[&str] = &["items", "tasks", "features", "ideas", "work", "list"];

fn starts_with_any<'p>(title: &str, phrases: &[&'p str]) -> Option<&'p str> {
    phrases
        .iter()
        .find(|phrase| starts_with(title, phrase))
        .copied()
}

/// Whether `title` starts with `phrase` as whole words, case and markdown
/// marks aside.
fn starts_with(title: &str, phrase: &str) -> bool {
    let title = normalize_title(title);
    let phrase = normalize_title(phrase);
    !phrase.is_empty()
        && title.starts_with(&phrase)
        && (phrase.ends_with(written_without_spaces)
            || title[phrase.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric()))
}

/// Whether boxes are a lifecycle list: two or more, each the name of a
/// stage, one of them a stage that ends the change.
fn is_lifecycle(boxes: &[String]) -> bool {
    let stages: Vec<String> = boxes.iter().map(|text| stage_name(text)).collect();
    boxes.len() >= 2
        && stages
            .iter()
            .all(|s| STAGES.contains(&s.as_str()) || FINAL_STAGES.contains(&s.as_str()))
        && stages.iter().any(|s| FINAL_STAGES.contains(&s.as_str()))
}

/// A box's text as a stage name: lower case, without markdown marks, a
/// trailing note in brackets or symbols (`Done ✅`, `Review (2025-03-01)`).
fn stage_name(text: &str) -> String {
    let text = text.split(['(', '[', '—', '–', ':']).next().unwrap_or(text);
    let text = normalize_title(text);
    text.trim_end_matches(|c: char| !c.is_alphanumeric())
        .trim()
        .to_owned()
}

/// Whether `c` belongs to a script written without spaces between words
/// (Chinese, Japanese, Korean), where a word can end anywhere.
fn written_without_spaces(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}' // kana
        | '\u{3400}'..='\u{4dbf}' // CJK extension A
        | '\u{4e00}'..='\u{9fff}' // CJK unified ideographs
        | '\u{ac00}'..='\u{d7af}' // Hangul syllables
        | '\u{f900}'..='\u{faff}' // CJK compatibility ideographs
    )
}

/// Lower case, markdown marks and leading symbols (emoji, `✅`) dropped,
/// white space collapsed.
fn normalize_title(title: &str) -> String {
    let cleaned: String = title
        .chars()
        .filter(|c| !matches!(c, '*' | '`' | '_'))
        .collect();
    let trimmed = cleaned.trim_start_matches(|c: char| !c.is_alphanumeric());
    trimmed
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| (*t).to_owned()).collect()
    }

    fn reason(rules: &SectionRules, text: &str, tasks: &[&str]) -> Option<SkipReason> {
        let label = heading_label(text);
        rules.reason(&SectionName::new(text, label.as_ref()), &boxes(tasks))
    }

    #[test]
    fn a_lifecycle_list_names_stages_and_one_that_ends_the_change() {
        assert!(is_lifecycle(&boxes(&[
            "Planning",
            "**Implementation**",
            "Review (2025-03-01)",
            "Done ✅"
        ])));
        assert!(!is_lifecycle(&boxes(&["Planning", "Review"])), "no end");
        assert!(!is_lifecycle(&boxes(&["Done"])), "one box");
        assert!(!is_lifecycle(&boxes(&["Review the status page", "Done"])));
    }

    #[test]
    fn words_skip_only_unnumbered_sections_but_scope_skips_either() {
        let rules = SectionRules::default();
        assert_eq!(
            reason(&rules, "Notes", &[]),
            Some(SkipReason::NotWork("Notes".to_owned()))
        );
        assert_eq!(reason(&rules, "3. Notes on setup", &["a"]), None);
        assert_eq!(
            reason(&rules, "10. Deferred (out of scope)", &["a"]),
            Some(SkipReason::OutOfScope("Deferred".to_owned()))
        );
        assert_eq!(reason(&rules, "Deferred to the next batch", &["a"]), None);
        assert_eq!(
            reason(&rules, "Future work items", &["a"]),
            Some(SkipReason::OutOfScope("Future Work".to_owned()))
        );
        assert_eq!(
            reason(&rules, "Status", &["Planning", "Done"]),
            Some(SkipReason::Lifecycle)
        );
    }

    #[test]
    fn a_name_is_a_title_a_heading_or_a_label() {
        let skip = |name: &str| SectionRules {
            skip: vec![name.to_owned()],
            ..SectionRules::default()
        };
        for name in ["Docs", "2. Docs", "2", "docs"] {
            assert!(reason(&skip(name), "2. Docs", &["a"]).is_some(), "{name}");
        }
        assert!(reason(&skip("2"), "2.1 Parser", &["a"]).is_none());
        assert!(reason(&skip("phase-2"), "Phase 2: Core", &["a"]).is_some());
        let keep = SectionRules {
            keep: vec!["Deferred".to_owned()],
            ..SectionRules::default()
        };
        assert_eq!(reason(&keep, "10. Deferred", &["a"]), None);
        assert!(
            SectionRules::all_work()
                .reason(&SectionName::new("Notes", None), &[])
                .is_none()
        );
    }
}
