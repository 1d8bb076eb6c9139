//! `timeout = 0` in a contract file: refused as `--command-timeout 0` is,
//! since a check given no time at all "times out after 0s" and a hook
//! given none never runs. Every `timeout` key of a contract file counts
//! seconds (a check's, a verification's, a stage's, a hook's), so every
//! one is looked at, wherever it sits, and the refusal names its line.

use std::path::Path;

use toml::de::{DeTable, DeValue};

use super::ContractError;

/// The first `timeout = 0` of `text`, as an error naming its line; `None`
/// for a text without one (or one that is not TOML: parsing it says why).
pub(super) fn find(path: &Path, text: &str) -> Option<ContractError> {
    let table = DeTable::parse(text).ok()?;
    let at = zero_in_table(table.get_ref())?;
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |newline| newline + 1) + 1;
    Some(ContractError::ZeroTimeout {
        path: path.to_owned(),
        line,
        column,
    })
}

/// Where the first zero `timeout` of `table` or the tables in it starts.
fn zero_in_table(table: &DeTable<'_>) -> Option<usize> {
    table.iter().find_map(|(key, value)| {
        if key.get_ref() == "timeout" && is_zero(value.get_ref()) {
            return Some(key.span().start);
        }
        zero_in_value(value.get_ref())
    })
}

fn zero_in_value(value: &DeValue<'_>) -> Option<usize> {
    match value {
        DeValue::Table(table) => zero_in_table(table),
        DeValue::Array(items) => items.iter().find_map(|item| zero_in_value(item.get_ref())),
        _ => None,
    }
}

/// An integer worth 0, however it is written (`0`, `+0`, `0x0`, `0_0`).
fn is_zero(value: &DeValue<'_>) -> bool {
    let Some(integer) = value.as_integer() else {
        return false;
    };
    let digits = integer.as_str().trim_start_matches(['+', '-']);
    let digits = ["0x", "0o", "0b"]
        .iter()
        .find_map(|prefix| digits.strip_prefix(prefix))
        .unwrap_or(digits);
    !digits.is_empty() && digits.chars().all(|c| c == '0' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(text: &str) -> Option<(usize, usize)> {
        match find(Path::new("ralph.toml"), text) {
            Some(ContractError::ZeroTimeout { line, column, .. }) => Some((line, column)),
            _ => None,
        }
    }

    #[test]
    fn every_zero_timeout_is_found_with_its_line() {
        assert_eq!(
            line_of("[[check]]\ncommand = \"x\"\ntimeout = 0\n"),
            Some((3, 1))
        );
        assert_eq!(
            line_of("[hooks.on_story_done]\ncommand = \"d\"\n  timeout = 0x0\n"),
            Some((3, 3))
        );
        assert_eq!(
            line_of("[[verify.stages]]\ntype = \"external\"\ncommand = \"x\"\ntimeout = +0\n"),
            Some((4, 1))
        );
        assert_eq!(
            line_of("check = [{ command = \"x\", timeout = 0 }]\n"),
            Some((1, 27))
        );
    }

    #[test]
    fn other_timeouts_and_zeros_pass() {
        assert_eq!(line_of("[[check]]\ncommand = \"x\"\ntimeout = 10\n"), None);
        assert_eq!(line_of("max_tokens = 0\n"), None);
        assert_eq!(
            line_of("[[check]]\ncommand = \"x\"\ntimeout = \"0\"\n"),
            None
        );
        assert_eq!(line_of("not toml ["), None);
    }
}
