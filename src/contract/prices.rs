//! What tokens cost, for the agents whose CLI reports tokens but no cost
//! (Codex, Gemini CLI, Qwen Code, …): `[prices.<name>]` in `ralph.toml`
//! gives dollars per million tokens, by the model the agent is run with
//! (`--model`), else by the agent's name, else `[prices.default]`. A cost
//! worked out from it is an estimate, and is marked so wherever it is
//! shown; `--max-cost` counts it like any other.
//!
//! ```toml
//! [prices.codex]
//! input = 1.25          # USD per million input tokens
//! output = 10.0         # USD per million output tokens
//! cache_read = 0.125    # cached input tokens; default: input
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Tokens an attempt used, as its agent reported them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// The estimated cost of `tokens` by the first of `names` the table
/// prices, then `default`; `None` when none is priced.
pub fn estimate(table: &BTreeMap<String, Price>, names: &[&str], tokens: Tokens) -> Option<f64> {
    let price = names
        .iter()
        .chain(std::iter::once(&"default"))
        .find_map(|name| table.get(*name))?;
    let per = |count: u64, dollars: f64| count as f64 * dollars / 1_000_000.0;
    Some(
        per(tokens.input, price.input)
            + per(tokens.output, price.output)
            + per(tokens.cache_read, price.cache_read.unwrap_or(price.input))
            + per(tokens.cache_write, price.cache_write.unwrap_or(price.input)),
    )
}

/// The model an agent's arguments name (`--model X`, `--model=X`, `-m X`).
pub fn model_in(args: &[String]) -> Option<&str> {
    args.iter().enumerate().find_map(|(at, arg)| {
        if let Some(model) = arg.strip_prefix("--model=") {
            return Some(model);
        }
        (arg == "--model" || arg == "-m")
            .then(|| args.get(at + 1).map(String::as_str))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_name_priced_sets_the_cost_then_the_default() {
        let table = BTreeMap::from([
            (
                "gpt-5".to_owned(),
                Price {
                    input: 1.0,
                    output: 10.0,
                    cache_read: Some(0.1),
                    cache_write: None,
                },
            ),
            (
                "default".to_owned(),
                Price {
                    input: 2.0,
                    output: 2.0,
                    ..Price::default()
                },
            ),
        ]);
        let tokens = Tokens {
            input: 1_000_000,
            output: 500_000,
            cache_read: 2_000_000,
            cache_write: 0,
        };
        let cost = estimate(&table, &["gpt-5", "codex"], tokens).unwrap();
        assert!((cost - 6.2).abs() < 1e-9, "{cost}");
        let cost = estimate(&table, &["codex"], tokens).unwrap();
        assert!((cost - 7.0).abs() < 1e-9, "{cost}");
        assert_eq!(estimate(&BTreeMap::new(), &["codex"], tokens), None);
    }

    #[test]
    fn the_model_is_read_from_the_arguments() {
        let args = |list: &[&str]| list.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(model_in(&args(&["exec", "--model", "o3"])), Some("o3"));
        assert_eq!(model_in(&args(&["--model=o4"])), Some("o4"));
        assert_eq!(
            model_in(&args(&["-m", "gemini-2.5-pro"])),
            Some("gemini-2.5-pro")
        );
        assert_eq!(model_in(&args(&["exec"])), None);
    }
}
