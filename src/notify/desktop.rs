//! A desktop notification through the platform's notifier: `osascript` on
//! macOS, `notify-send` elsewhere, run by the one supervisor. A machine
//! without one (a server, CI) is skipped quietly: there is nobody to see.

use super::{DELIVERY_TIMEOUT, Undelivered};
use crate::process::{self, ExitStatusKind, Limits, Spec};

/// How much of the notifier's output is kept to say why it failed.
const OUTPUT_TAIL_BYTES: usize = 1024;

/// Show `title` and `body`; nothing when the platform has no notifier.
pub(super) async fn show(title: &str, body: &str) -> Result<(), Undelivered> {
    let Some(spec) = notifier(title, body) else {
        return Ok(());
    };
    let failed = |why: String| Undelivered {
        channel: format!("the desktop notification ({})", spec.program),
        why,
    };
    let limits = Limits::timeout(DELIVERY_TIMEOUT);
    let (exit, _, stderr) = process::run_split(&spec, limits, OUTPUT_TAIL_BYTES)
        .await
        .map_err(|err| failed(err.to_string()))?;
    match exit {
        ExitStatusKind::Exited(0) => Ok(()),
        exit => {
            let said = stderr.text();
            let said = said.lines().map(str::trim).rfind(|l| !l.is_empty());
            Err(failed(match said {
                Some(said) => format!("{exit} ({said})"),
                None => exit.to_string(),
            }))
        }
    }
}

/// The platform's notifier, when it is installed.
fn notifier(title: &str, body: &str) -> Option<Spec> {
    let (program, args) = if cfg!(target_os = "macos") {
        let script = format!(
            "display notification {} with title {}",
            apple_string(body),
            apple_string(title)
        );
        ("osascript", vec!["-e".to_owned(), script])
    } else {
        (
            "notify-send",
            vec![
                "--app-name=git-ralph".to_owned(),
                title.to_owned(),
                body.to_owned(),
            ],
        )
    };
    process::is_runnable(program).then(|| Spec {
        program: program.to_owned(),
        args,
        cwd: std::env::temp_dir(),
        ..Spec::default()
    })
}

/// An AppleScript string literal.
fn apple_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applescript_strings_are_quoted() {
        assert_eq!(apple_string(r#"say "hi" \o/"#), r#""say \"hi\" \\o/""#);
    }
}
