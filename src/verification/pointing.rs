//! How each CLI is pointed at the stand-in: the environment variables and
//! config files that replace its model provider, all inside a throwaway
//! home, so the user's own configuration is never read nor written.
//!
//! These are the CLIs' documented ways of using a custom endpoint; a preset
//! without one (a CLI that only talks to its vendor) cannot be verified.

use std::io;
use std::path::Path;

/// The API key every CLI is given; the stand-in accepts any.
const KEY: &str = "sk-standin-0000";

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
/// local API.
pub fn point(preset: &str, base: &str, home: &Path) -> io::Result<Option<Vec<(String, String)>>> {
    let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    };
    let pointed = match preset {
        "claude" => env(&[
            ("ANTHROPIC_BASE_URL", base),
            ("ANTHROPIC_API_KEY", KEY),
            ("ANTHROPIC_MODEL", "claude-sonnet-4-5"),
            ("ANTHROPIC_SMALL_FAST_MODEL", "claude-haiku-4-5"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            // Two retries of a 429 instead of ten: the same final report,
            // minutes sooner.
            ("CLAUDE_CODE_MAX_RETRIES", "2"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
        ]),
        "codex" => {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home)?;
            std::fs::write(
                codex_home.join("config.toml"),
                format!(
                    "model = \"gpt-5.1-codex\"\nmodel_provider = \"standin\"\ncheck_for_update_on_startup = false\n\n\
                     [model_providers.standin]\nname = \"git-ralph stand-in\"\nbase_url = \"{base}/v1\"\n\
                     wire_api = \"responses\"\nenv_key = \"GIT_RALPH_STANDIN_KEY\"\n"
                ),
            )?;
            let mut pairs = env(&[("GIT_RALPH_STANDIN_KEY", KEY), ("OPENAI_API_KEY", KEY)]);
            pairs.push(("CODEX_HOME".to_owned(), path(&codex_home)));
            pairs
        }
        "gemini" => {
            let settings = home.join(".gemini");
            std::fs::create_dir_all(&settings)?;
            std::fs::write(
                settings.join("settings.json"),
                serde_json::json!({
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                })
                .to_string(),
            )?;
            env(&[
                ("GEMINI_API_KEY", KEY),
                ("GOOGLE_GEMINI_BASE_URL", base),
                ("GOOGLE_GENAI_USE_VERTEXAI", "false"),
            ])
        }
        "opencode" => {
            let config = home.join(".config/opencode");
            std::fs::create_dir_all(&config)?;
            std::fs::write(
                config.join("opencode.json"),
                serde_json::json!({
                    "$schema": "https://opencode.ai/config.json",
                    "model": "anthropic/claude-sonnet-4-5",
                    "small_model": "anthropic/claude-sonnet-4-5",
                    "autoupdate": false,
                    "share": "disabled",
                    "provider": {"anthropic": {"options": {"baseURL": format!("{base}/v1"), "apiKey": KEY}}},
                })
                .to_string(),
            )?;
            env(&[
                ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
                ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
                ("OPENCODE_DISABLE_SHARE", "1"),
                ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
            ])
        }
        "copilot" => env(&[
            ("COPILOT_OFFLINE", "true"),
            ("COPILOT_PROVIDER_BASE_URL", base),
            ("COPILOT_PROVIDER_TYPE", "anthropic"),
            ("COPILOT_PROVIDER_API_KEY", KEY),
            ("COPILOT_MODEL", "claude-sonnet-4.5"),
        ]),
        "aider" => env(&[
            ("ANTHROPIC_API_BASE", base),
            ("ANTHROPIC_API_KEY", KEY),
            ("AIDER_MODEL", "anthropic/claude-sonnet-4-20250514"),
            ("AIDER_CHECK_UPDATE", "false"),
            ("AIDER_ANALYTICS", "false"),
            ("AIDER_SHOW_RELEASE_NOTES", "false"),
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
        ]),
        // Amp and Cursor's CLI talk only to their vendors' services.
        _ => return Ok(None),
    };
    Ok(Some(pointed))
}

/// Whether the CLI offers the model tools (all but Aider do).
pub fn offers_tools(preset: &str) -> bool {
    preset != "aider"
}

fn path(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
