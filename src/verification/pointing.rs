//! Where a CLI under verification runs: a throwaway home, so the user's own
//! configuration is never read nor written, and in it the environment and
//! config files that point the CLI at the stand-in.
//!
//! Each preset knows its CLI's documented way of using a custom endpoint
//! (see [`StandinSetup`]); a preset without one (a CLI that only talks to
//! its vendor) cannot be verified.

use std::io;
use std::path::Path;

use crate::agent::presets::{self, Pointing, StandinSetup};

/// A throwaway home: `HOME`, the XDG directories and a git identity.
pub fn home_env(home: &Path) -> io::Result<Vec<(String, String)>> {
    let dirs = [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ];
    let mut env = vec![("HOME".to_owned(), path(home))];
    for (name, dir) in dirs {
        std::fs::create_dir_all(home.join(dir))?;
        env.push((name.to_owned(), path(&home.join(dir))));
    }
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = git-ralph verify\n\temail = verify@localhost\n",
    )?;
    for (name, value) in [
        ("GIT_CONFIG_GLOBAL", path(&home.join(".gitconfig"))),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        // Never open a browser, a pager or an editor.
        ("BROWSER", "true".to_owned()),
        ("PAGER", "cat".to_owned()),
        ("CI", "true".to_owned()),
        ("NO_COLOR", "1".to_owned()),
    ] {
        env.push((name.to_owned(), value));
    }
    Ok(env)
}

/// The environment (and config files under `home`) that point `preset` at
/// the stand-in at `base`, or `None` when the CLI cannot be pointed at a
/// local API (see [`StandinSetup::point`]).
pub fn point(preset: &str, base: &str, home: &Path) -> io::Result<Option<Vec<(String, String)>>> {
    match setup(preset) {
        Some(setup) => (setup.point)(&Pointing { base, home }).map(Some),
        None => Ok(None),
    }
}

/// Whether the CLI offers the model tools (all but Aider do).
pub fn offers_tools(preset: &str) -> bool {
    setup(preset).is_none_or(|setup| setup.offers_tools)
}

fn setup(preset: &str) -> Option<StandinSetup> {
    presets::lookup(preset).and_then(|preset| preset.standin)
}

fn path(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
