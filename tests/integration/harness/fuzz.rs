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
