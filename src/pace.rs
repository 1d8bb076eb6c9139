//! Pacing a run to a subscription's window (`--pace $20/5h`, `--pace '2M
//! tokens/5h'`): no attempt starts that would take the spend of the last
//! window past the budget. What the next attempt will spend is not known
//! before it runs, so it is taken to be what the run's attempts spent on
//! average; the run waits until enough of the window's spend has aged out
//! of it. An attempt starts anyway once the window holds none: waiting
//! longer would change nothing.

use std::fmt;
use std::str::FromStr;

/// What a window allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Allowance {
    Dollars(f64),
    Tokens(u64),
}

/// A budget per window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    pub allowance: Allowance,
    pub window_secs: u64,
}

/// A value of `--pace` that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "'{given}' is not a pace: give a budget and a window, such as $20/5h or '2M tokens/5h' ({why})"
)]
pub struct PaceError {
    given: String,
    why: &'static str,
}

/// What an attempt of the run spent, and when it ended (unix seconds).
#[derive(Debug, Clone, Copy)]
pub struct Spent {
    pub ended_at: u64,
    pub cost_usd: f64,
    pub tokens: u64,
}

impl FromStr for Pace {
    type Err = PaceError;

    fn from_str(given: &str) -> Result<Pace, PaceError> {
        let bad = |why| PaceError {
            given: given.to_owned(),
            why,
        };
        let (budget, window) = given.rsplit_once('/').ok_or_else(|| bad("no '/'"))?;
        let window_secs = crate::config::parse_duration(window)
            .map_err(|_| bad("the window reads like 30s, 90m, 5h or 1d"))?;
        let budget = budget.trim();
        let allowance = if let Some(dollars) = budget.strip_prefix('$') {
            let dollars: f64 = dollars
                .trim()
                .parse()
                .map_err(|_| bad("the dollars are no number"))?;
            Allowance::Dollars(dollars)
        } else {
            let count = budget
                .strip_suffix("tokens")
                .or_else(|| budget.strip_suffix("token"))
                .ok_or_else(|| bad("the budget is $<dollars> or <count> tokens"))?;
            Allowance::Tokens(
                count_of(count.trim())
                    .ok_or_else(|| bad("the tokens are no count such as 500k or 2M"))?,
            )
        };
        let positive = match allowance {
            Allowance::Dollars(dollars) => dollars.is_finite() && dollars > 0.0,
            Allowance::Tokens(tokens) => tokens > 0,
        };
        if !positive || window_secs == 0 {
            return Err(bad("both must be more than zero"));
        }
        Ok(Pace {
            allowance,
            window_secs,
        })
    }
}

impl fmt::Display for Allowance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allowance::Dollars(dollars) => write!(f, "${dollars:.2}"),
            Allowance::Tokens(tokens) => write!(f, "{tokens} tokens"),
        }
    }
}

/// `2000000`, `500k`, `2M`, `1.5M`.
fn count_of(text: &str) -> Option<u64> {
    let (number, scale) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 1e3),
        'm' | 'M' => (&text[..text.len() - 1], 1e6),
        _ => (text, 1.0),
    };
    let value: f64 = number.trim().parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| (value * scale).round() as u64)
}

impl Pace {
    fn amount(&self, spent: &Spent) -> f64 {
        match self.allowance {
            Allowance::Dollars(_) => spent.cost_usd,
            Allowance::Tokens(_) => spent.tokens as f64,
        }
    }

    fn budget(&self) -> f64 {
        match self.allowance {
            Allowance::Dollars(dollars) => dollars,
            Allowance::Tokens(tokens) => tokens as f64,
        }
    }

    /// When the next attempt may start, given what the run's attempts
    /// spent, and why it waits; `None` when it may start now.
    pub fn hold_until(&self, spent: &[Spent], now: u64) -> Option<(u64, String)> {
        let amounts: Vec<f64> = spent.iter().map(|s| self.amount(s)).collect();
        let expected = match amounts.len() {
            0 => 0.0,
            n => amounts.iter().sum::<f64>() / n as f64,
        };
        let since = now.saturating_sub(self.window_secs);
        let mut in_window: Vec<&Spent> = spent.iter().filter(|s| s.ended_at > since).collect();
        in_window.sort_by_key(|s| s.ended_at);
        let used: f64 = in_window.iter().map(|s| self.amount(s)).sum();
        if in_window.is_empty() || used + expected <= self.budget() {
            return None;
        }
        let mut left = used;
        let mut until = now;
        for spent in in_window {
            left -= self.amount(spent);
            until = spent.ended_at + self.window_secs + 1;
            if left + expected <= self.budget() {
                break;
            }
        }
        let shown = match self.allowance {
            Allowance::Dollars(_) => format!("${used:.2}"),
            Allowance::Tokens(_) => format!("{} tokens", used as u64),
        };
        Some((
            until,
            format!(
                "pace: {shown} of {} spent in the last {}s, and the next attempt would pass it; going on in {}s",
                self.allowance,
                self.window_secs,
                until.saturating_sub(now)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_read_as_users_write_them() {
        let pace: Pace = "$20/5h".parse().unwrap();
        assert_eq!(pace.allowance, Allowance::Dollars(20.0));
        assert_eq!(pace.window_secs, 5 * 3600);
        let pace: Pace = "2M tokens/1h30m".parse().unwrap();
        assert_eq!(pace.allowance, Allowance::Tokens(2_000_000));
        assert_eq!(pace.window_secs, 5400);
        assert!("20/5h".parse::<Pace>().is_err());
        assert!("$20/5x".parse::<Pace>().is_err());
        assert!("$0/5h".parse::<Pace>().is_err());
        assert!("$20".parse::<Pace>().is_err());
    }

    #[test]
    fn an_attempt_waits_until_the_window_has_room_for_another() {
        let pace: Pace = "$1/10s".parse().unwrap();
        let at = |ended_at, cost_usd| Spent {
            ended_at,
            cost_usd,
            tokens: 0,
        };
        assert_eq!(pace.hold_until(&[], 100), None);
        // One attempt of $0.40 leaves room for another like it.
        assert_eq!(pace.hold_until(&[at(100, 0.4)], 101), None);
        // Two leave none: wait until the first has aged out.
        let (until, why) = pace.hold_until(&[at(100, 0.4), at(104, 0.4)], 105).unwrap();
        assert_eq!(until, 111);
        assert!(why.contains("$0.80 of $1.00"), "{why}");
        // Out of the window, it counts no more.
        assert_eq!(pace.hold_until(&[at(100, 0.4), at(104, 0.4)], 111), None);
        // An attempt that spends more than the window allows still runs
        // once the window is empty.
        assert_eq!(pace.hold_until(&[at(100, 3.0)], 111), None);
        assert_eq!(pace.hold_until(&[at(100, 3.0)], 105).unwrap().0, 111);
    }
}
