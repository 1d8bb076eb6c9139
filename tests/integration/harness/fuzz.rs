//! What the `fuzz_*` property tests share: a proptest configuration with a
//! fixed number of cases per test (each test states its count, and the
//! whole set stays within seconds on a small machine), and the generators
//! of awkward text every reader must survive.
//!
//! `GIT_RALPH_FUZZ_SCALE=<n>` multiplies every count, for a longer local
//! search (`GIT_RALPH_FUZZ_SCALE=100 cargo test --test integration fuzz_`).
//! A failure found this way becomes a named regression test: nothing is
//! persisted between runs.

use proptest::prelude::*;
use proptest::test_runner::Config;

/// The configuration of a property test that runs `cases` cases.
pub fn cases(cases: u32) -> Config {
    let scale = std::env::var("GIT_RALPH_FUZZ_SCALE")
        .ok()
        .and_then(|value| value.parse::<u32>().ok())
        .filter(|scale| *scale > 0)
        .unwrap_or(1);
    Config {
        cases: cases.saturating_mul(scale),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

/// Characters that change how a reader sees a line: markers, brackets,
/// pipes, escapes, white space of every kind (the BOM and U+0085
/// included), line ends, and letters of one to four bytes.
const AWKWARD: &[char] = &[
    '-', '*', '+', '_', '.', ')', ':', '|', '\\', '[', ']', '(', '{', '}', '"', ',', '#', '`', '~',
    'x', 'X', 'o', 'P', 'a', '1', '0', '9', ' ', ' ', '\t', '\r', '\n', '\u{a0}', '\u{85}',
    '\u{2003}', '\u{3000}', '\u{feff}', '\u{200b}', 'é', 'ß', 'Σ', '日', '本', '✅', '😀',
    '\u{301}',
];

/// One awkward character.
pub fn awkward_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::sample::select(AWKWARD),
        1 => any::<char>(),
    ]
}

/// Up to `max` awkward characters.
pub fn awkward_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(awkward_char(), 0..=max).prop_map(|chars| chars.into_iter().collect())
}

/// Up to `max` awkward characters, without line breaks.
pub fn awkward_line(max: usize) -> impl Strategy<Value = String> {
    awkward_text(max).prop_map(|text| text.replace(['\n', '\r'], " "))
}

/// Words of one to four bytes per character, as real plans hold them.
pub fn words() -> impl Strategy<Value = String> {
    proptest::sample::select(
        &[
            "Add the parser",
            "Ship it",
            "café",
            "日本語のテキスト",
            "Straße",
            "✅ done",
            "emoji 😀 here",
            "e\u{301}",
            "Total",
            "TODO",
            "",
            " ",
            "a",
        ][..],
    )
    .prop_map(str::to_owned)
}

/// `text` with its bytes cut at `at` (a fraction of its length), wherever
/// that falls: inside a character, a string, a number.
pub fn cut_bytes(text: &[u8], at: f64) -> &[u8] {
    let end = ((text.len() as f64) * at) as usize;
    &text[..end.min(text.len())]
}

/// Every JSON pointer inside `value` (the root aside) except `keep`,
/// depth first.
pub fn json_pointers(value: &serde_json::Value, keep: &[&str]) -> Vec<String> {
    fn walk(value: &serde_json::Value, at: String, keep: &[&str], out: &mut Vec<String>) {
        if !at.is_empty() && !keep.contains(&at.as_str()) {
            out.push(at.clone());
        }
        match value {
            serde_json::Value::Object(map) => {
                for (key, child) in map {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    walk(child, format!("{at}/{key}"), keep, out);
                }
            }
            serde_json::Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    walk(child, format!("{at}/{index}"), keep, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), keep, &mut out);
    out
}

/// `value` with one node per change replaced: each change picks a node by
/// its fraction of [`json_pointers`] (taken afresh, as replacing a node
/// changes the tree below it).
pub fn replace_nodes(
    value: &mut serde_json::Value,
    changes: &[(f64, serde_json::Value)],
    keep: &[&str],
) {
    for (at, replacement) in changes {
        let all = json_pointers(value, keep);
        if all.is_empty() {
            return;
        }
        let pointer = &all[((all.len() as f64) * at) as usize % all.len()];
        if let Some(slot) = value.pointer_mut(pointer) {
            *slot = replacement.clone();
        }
    }
}

/// JSON values of every type, numbers at their limits among them: the
/// wrong type for any field of a file git-ralph reads.
pub fn wrong_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        3 => proptest::sample::select(&[u64::MAX, u64::MAX / 2 + 1, u32::MAX as u64 + 1, 1 << 63][..])
            .prop_map(Value::from),
        1 => proptest::sample::select(&[i64::MIN, -1, 0, 1, 429, 529, 1_750_000_000][..])
            .prop_map(Value::from),
        1 => proptest::sample::select(&[1e308, -1e308, 0.5, -0.0][..]).prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        2 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => awkward_line(24).prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map(
                proptest::sample::select(&["type", "text", "id", "kind", "name", ""][..]),
                inner,
                0..3
            )
            .prop_map(|map| {
                Value::Object(map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}
