//! Issue 28: the contract files (`ralph.toml` at the root and in a
//! change's directory) on generated input: the documented example cut at
//! every byte, its values given other types, unknown keys, awkward text,
//! bytes that are not UTF-8. Every file is a contract or an error that
//! names the file and the line and says where the format is documented.

use std::path::Path;

use git_ralph::contract::{Contract, ContractError, FORMAT_EXAMPLE};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

use crate::harness::fuzz::{awkward_text, cases, replace_nodes, wrong_json};

/// The documented example, with a value of multi-byte text so that cuts
/// fall inside characters too.
fn example() -> String {
    FORMAT_EXAMPLE.replace("name = \"tests\"", "name = \"tests ✅ 日本\"")
}

/// What must hold of reading `bytes` as the contract file at `file`.
fn check_contract(
    read: Result<Contract, ContractError>,
    bytes: &[u8],
    file: &str,
) -> Result<(), TestCaseError> {
    let error = match read {
        Ok(_) => return Ok(()),
        Err(error) => error,
    };
    let message = error.to_string();
    prop_assert!(message.contains(file), "the file is named: {message}");
    prop_assert!(error.hint().is_some(), "what to do is said: {message}");
    match &error {
        ContractError::Invalid { .. } => {
            prop_assert!(message.contains("line"), "the line is named: {message}");
        }
        ContractError::NotUtf8 { line, column, .. } => {
            let bad = std::str::from_utf8(bytes).expect_err("not UTF-8");
            let valid = &bytes[..bad.valid_up_to()];
            let expected = 1 + valid.iter().filter(|b| **b == b'\n').count();
            prop_assert_eq!(*line, expected, "{}", message);
            prop_assert!(
                message.contains(&format!("{file}:{line}:{column}:")),
                "{}",
                message
            );
        }
        other => prop_assert!(false, "{other}"),
    }
    Ok(())
}

/// Writes `bytes` as the root contract (or the change's) and assembles
/// the contract of a run from it.
fn assemble(root: &Path, in_change: bool, bytes: &[u8]) -> Result<Contract, ContractError> {
    let change_dir = root.join("openspec/changes/fuzz");
    std::fs::create_dir_all(&change_dir).expect("change dir");
    let (file, other) = if in_change {
        (change_dir.join("ralph.toml"), root.join("ralph.toml"))
    } else {
        (root.join("ralph.toml"), change_dir.join("ralph.toml"))
    };
    let _ = std::fs::remove_file(other);
    std::fs::write(&file, bytes).expect("written");
    Contract::assemble(root, Some(&change_dir), &[], &["true".to_owned()], None)
}

/// 1,802 cases, one per cut of the 1,801-byte example: the example cut at
/// every byte, as the root's and as a change's file in turn, is a contract
/// or an error naming the file and the line.
#[test]
fn fuzz_contract_cut_at_every_byte() {
    let example = example();
    let tmp = tempfile::tempdir().expect("temp dir");
    for at in 0..=example.len() {
        let bytes = &example.as_bytes()[..at];
        let in_change = at % 2 == 1;
        let file = if in_change {
            "openspec/changes/fuzz/ralph.toml"
        } else {
            "ralph.toml"
        };
        let read = assemble(tmp.path(), in_change, bytes);
        if let Err(failure) = check_contract(read, bytes, file) {
            panic!("cut at {at}: {failure}");
        }
    }
}

/// `value` as TOML. TOML has no null and no integer past `i64::MAX`: a
/// null becomes the text `null`, such a number a float.
fn to_toml(value: &Value) -> Option<String> {
    fn tomlable(value: &mut Value) {
        match value {
            Value::Null => *value = Value::from("null"),
            Value::Number(number) if number.is_u64() && number.as_i64().is_none() => {
                *value = Value::from(number.as_f64().unwrap_or(f64::MAX));
            }
            Value::Array(items) => items.iter_mut().for_each(tomlable),
            Value::Object(map) => map.values_mut().for_each(tomlable),
            _ => {}
        }
    }
    let mut value = value.clone();
    tomlable(&mut value);
    toml::to_string(&value).ok()
}

/// Latin-1 letters, a lone lead and a lone continuation byte, a surrogate.
const BAD_BYTES: &[&[u8]] = &[b"\xff", b"\xe9", b"\xc3", b"\x80", b"\xed\xa0\x80"];

proptest! {
    #![proptest_config(cases(384))]

    /// 384 cases: the example with up to four values of another type (an
    /// unknown key among them when a key is replaced by a table).
    #[test]
    fn fuzz_contract_wrong_types(
        changes in proptest::collection::vec((0.0..1.0f64, wrong_json()), 1..5),
        extra in proptest::option::of(proptest::sample::select(&["unknown", "checks", "story", "verify"][..])),
    ) {
        let table: toml::Table = toml::from_str(&example()).expect("the example parses");
        let mut value = serde_json::to_value(&table).expect("as JSON");
        replace_nodes(&mut value, &changes, &[]);
        if let (Some(key), Value::Object(map)) = (extra, &mut value) {
            map.insert(key.to_owned(), Value::from(1));
        }
        let text = to_toml(&value);
        prop_assume!(text.is_some());
        let text = text.expect("checked");
        check_contract(Contract::parse(Path::new("ralph.toml"), &text), text.as_bytes(), "ralph.toml")?;
    }

    /// 512 cases: awkward text as a contract file.
    #[test]
    fn fuzz_contract_awkward_text(text in awkward_text(120)) {
        check_contract(Contract::parse(Path::new("ralph.toml"), &text), text.as_bytes(), "ralph.toml")?;
    }

    /// 128 cases: bytes that are not UTF-8 spliced into the example, in
    /// the root's or the change's file: an error naming the file, the line
    /// and the column.
    #[test]
    fn fuzz_contract_not_utf8(
        at in 0.0..=1.0f64,
        bad in proptest::sample::select(BAD_BYTES),
        in_change in any::<bool>(),
    ) {
        let example = example();
        let mut at = (example.len() as f64 * at) as usize;
        while !example.is_char_boundary(at) {
            at -= 1;
        }
        let mut bytes = example.as_bytes()[..at].to_vec();
        bytes.extend_from_slice(bad);
        bytes.extend_from_slice(&example.as_bytes()[at..]);
        let tmp = tempfile::tempdir().expect("temp dir");
        let file = if in_change { "openspec/changes/fuzz/ralph.toml" } else { "ralph.toml" };
        let read = assemble(tmp.path(), in_change, &bytes);
        prop_assert!(matches!(read, Err(ContractError::NotUtf8 { .. })), "{:?}", read);
        check_contract(read, &bytes, file)?;
    }
}
