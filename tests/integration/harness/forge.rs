//! Scripted forge CLIs, `gh` and `glab`, for the hand-off's tests: they
//! record every call and answer as the real ones do, offline.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use super::TestRepo;

/// The address the scripted forge CLIs give the pull request.
pub const PR_URL: &str = "https://github.example/o/greet/pull/7";
pub const MR_URL: &str = "https://gitlab.example.com/group/greet/-/merge_requests/3";

/// A scripted `gh` (and `glab`): each call's arguments (NUL-separated) and
/// standard input are recorded as `call-<n>.args` and `call-<n>.stdin`;
/// `pr list` answers with what `pr create` opened (a draft once `pr ready
/// --undo` made it one); `workflow run` (a workflow's next run) answers
/// nothing. `FAKE_FORGE_MODE=auth` makes every call fail as a CLI that is
/// not logged in does.
const FAKE_FORGE: &str = r#"#!/bin/sh
dir="$FAKE_FORGE_DIR"
n=$(( $(cat "$dir/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$dir/count"
printf '%s\0' "$(basename "$0")" "$@" > "$dir/call-$n.args"
cat > "$dir/call-$n.stdin"
if [ "$FAKE_FORGE_MODE" = auth ]; then
  echo "To get started with GitHub CLI, please run:  gh auth login" >&2
  exit 4
fi
case "$(basename "$0") $1 $2" in
  "gh pr list") cat "$dir/open.json" 2>/dev/null || echo "[]" ;;
  "gh pr create")
    draft=false; case " $* " in *" --draft "*) draft=true ;; esac
    echo '[{"number":7,"url":"https://github.example/o/greet/pull/7","isDraft":'$draft'}]' > "$dir/open.json"
    echo "https://github.example/o/greet/pull/7" ;;
  "gh pr edit") echo "https://github.example/o/greet/pull/7" ;;
  "gh workflow run") ;;
  "gh pr ready")
    echo '[{"number":7,"url":"https://github.example/o/greet/pull/7","isDraft":true}]' > "$dir/open.json" ;;
  "glab mr list") cat "$dir/open.json" 2>/dev/null || echo "[]" ;;
  "glab mr create")
    draft=false; case " $* " in *" --draft "*) draft=true ;; esac
    echo '[{"iid":3,"web_url":"https://gitlab.example.com/group/greet/-/merge_requests/3","draft":'$draft'}]' > "$dir/open.json"
    printf '\nCreating merge request for ralph/greet into main in group/greet\n\n!3 Greet (ralph/greet)\n https://gitlab.example.com/group/greet/-/merge_requests/3\n\n' ;;
  "glab mr update")
    case " $* " in *" --draft "*)
      echo '[{"iid":3,"web_url":"https://gitlab.example.com/group/greet/-/merge_requests/3","draft":true}]' > "$dir/open.json" ;;
    esac
    echo "- Updating merge request !3" ;;
  *) echo "unexpected call: $*" >&2; exit 1 ;;
esac
"#;

/// The scripted forge CLIs, their directory on PATH and their records.
pub struct FakeForge {
    pub bin: PathBuf,
    pub records: PathBuf,
}

/// One recorded call: the program and its arguments, and its stdin.
#[derive(Debug)]
pub struct Call {
    pub args: Vec<String>,
    pub stdin: String,
}

impl FakeForge {
    pub fn new(repo: &TestRepo) -> FakeForge {
        let bin = repo.dir.path().join("forge-bin");
        let records = repo.dir.path().join("forge-calls");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&records).unwrap();
        for name in ["gh", "glab"] {
            let path = bin.join(name);
            fs::write(&path, FAKE_FORGE).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        FakeForge { bin, records }
    }

    /// `cmd` with the forge CLIs first on PATH.
    pub fn on_path(&self, cmd: &mut Command) {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", self.bin.display()))
            .env("FAKE_FORGE_DIR", &self.records);
    }

    pub fn calls(&self) -> Vec<Call> {
        let count: usize = fs::read_to_string(self.records.join("count"))
            .map(|text| text.trim().parse().unwrap())
            .unwrap_or(0);
        (1..=count)
            .map(|n| Call {
                args: fs::read_to_string(self.records.join(format!("call-{n}.args")))
                    .unwrap()
                    .split_terminator('\0')
                    .map(str::to_string)
                    .collect(),
                stdin: fs::read_to_string(self.records.join(format!("call-{n}.stdin")))
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// The calls as `program subcommand verb`.
    pub fn verbs(&self) -> Vec<String> {
        self.calls()
            .iter()
            .map(|call| call.args[..3].join(" "))
            .collect()
    }
}
