//! A scripted stand-in for an agent CLI, so the integration tests can drive
//! git-ralph through every outcome an attempt can have (success, refusal,
//! silence, crash, rate limit, runaway output, stray commits) without a model.
//!
//! The script file named by `FAKE_AGENT_SCRIPT` says what to print, which files
//! to touch and how to exit; `tests/FAKE_AGENT.md` documents the language.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The script itself is unusable (missing, unreadable, malformed).
const SCRIPT_ERROR: i32 = 98;
/// A scripted command could not do what it says (no task to tick, git failed…).
const COMMAND_ERROR: i32 = 99;
/// What a shell reports for a process killed by SIGPIPE; used when the reader
/// went away, so the exit stays quiet but recognisable.
const BROKEN_PIPE: i32 = 141;

const MODEL: &str = "scripted-model";
/// Real agents stamp every event; a fixed stamp keeps transcripts comparable.
const TIMESTAMP: &str = "2026-01-01T00:00:00.000Z";

fn main() {
    let code = match run() {
        Ok(code) => code,
        Err(fault) => {
            if !fault.message.is_empty() {
                eprintln!("fake-agent: {}", fault.message);
            }
            fault.code
        }
    };
    std::process::exit(code);
}

struct Fault {
    code: i32,
    message: String,
}

impl Fault {
    fn script(message: impl Into<String>) -> Self {
        Fault {
            code: SCRIPT_ERROR,
            message: message.into(),
        }
    }

    fn command(message: impl Into<String>) -> Self {
        Fault {
            code: COMMAND_ERROR,
            message: message.into(),
        }
    }

    fn output(err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::BrokenPipe {
            Fault {
                code: BROKEN_PIPE,
                message: String::new(),
            }
        } else {
            Fault::command(format!("cannot write to stdout: {err}"))
        }
    }
}

type Result<T> = std::result::Result<T, Fault>;

fn run() -> Result<i32> {
    let started = Instant::now();
    // Read the prompt before anything else, as a real agent would: the caller
    // may block on writing it.
    let mut raw_prompt = Vec::new();
    io::stdin()
        .read_to_end(&mut raw_prompt)
        .map_err(|err| Fault::command(format!("cannot read stdin: {err}")))?;
    let prompt = String::from_utf8_lossy(&raw_prompt).into_owned();

    let script_path = std::env::var_os("FAKE_AGENT_SCRIPT")
        .map(PathBuf::from)
        .ok_or_else(|| Fault::script("FAKE_AGENT_SCRIPT is not set"))?;
    let text = fs::read_to_string(&script_path).map_err(|err| {
        Fault::script(format!(
            "cannot read script {}: {err}",
            script_path.display()
        ))
    })?;
    let script = parse_script(&text)?;

    let env = Invocation::from_env();
    let call = bump_call_counter(&script_path)?;
    if let Some(dir) = std::env::var_os("FAKE_AGENT_RECORD_DIR") {
        record(Path::new(&dir), &env, &prompt)?;
    }

    let Some(section) = script.select(&env, call) else {
        return Ok(0);
    };
    let format = section
        .commands
        .iter()
        .rev()
        .find_map(|(_, command)| match command {
            Command::Format(format) => Some(*format),
            _ => None,
        })
        .or(script.default_format)
        .unwrap_or(Format::Plain);

    let mut out = Emitter::new(format, call);
    out.start(&prompt)?;
    let mut outcome = Outcome::default();
    for (line, command) in &section.commands {
        let flow = execute(command, &env, &mut out, &mut outcome).map_err(|fault| Fault {
            code: fault.code,
            message: if fault.message.is_empty() {
                fault.message
            } else {
                format!("script line {line}: {}", fault.message)
            },
        })?;
        if let Flow::Stop = flow {
            break;
        }
    }
    out.finish(&outcome, started)?;
    Ok(outcome.exit_code())
}

/// What the caller told this attempt through its environment.
struct Invocation {
    change: Option<String>,
    story: Option<String>,
    attempt: Option<String>,
}

impl Invocation {
    fn from_env() -> Self {
        let var = |name| std::env::var(name).ok();
        Invocation {
            change: var("RALPH_CHANGE"),
            story: var("RALPH_STORY"),
            attempt: var("RALPH_ATTEMPT"),
        }
    }

    fn attempt_number(&self) -> Option<u32> {
        self.attempt.as_deref().and_then(|a| a.trim().parse().ok())
    }
}

/// Adds one to the script's call counter. Agents of stories run at once
/// share it, so it is read and written under an exclusive lock.
fn bump_call_counter(script: &Path) -> Result<u64> {
    use std::io::{Read, Seek, Write};
    let mut name = OsString::from(script.as_os_str());
    name.push(".calls");
    let path = PathBuf::from(name);
    let fail = |what: &str, err: io::Error| {
        Fault::script(format!(
            "cannot {what} call counter {}: {err}",
            path.display()
        ))
    };
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|err| fail("open", err))?;
    let mut file = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| fail("lock", errno.into()))?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|err| fail("read", err))?;
    let previous = match text.trim() {
        "" => 0,
        number => number.parse::<u64>().map_err(|_| {
            Fault::script(format!(
                "call counter {} holds {text:?}, not a number",
                path.display()
            ))
        })?,
    };
    let call = previous + 1;
    file.set_len(0).map_err(|err| fail("write", err))?;
    file.rewind().map_err(|err| fail("write", err))?;
    file.write_all(format!("{call}\n").as_bytes())
        .map_err(|err| fail("write", err))?;
    Ok(call)
}

fn record(dir: &Path, env: &Invocation, prompt: &str) -> Result<()> {
    let story = env.story.as_deref().unwrap_or("none");
    let attempt = env.attempt.as_deref().unwrap_or("none");
    let fail = |what: &str, err: io::Error| {
        Fault::script(format!("cannot record {what} in {}: {err}", dir.display()))
    };
    fs::create_dir_all(dir).map_err(|err| fail("anything", err))?;
    fs::write(dir.join(format!("prompt-{story}-{attempt}.txt")), prompt)
        .map_err(|err| fail("the prompt", err))?;
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("calls.log"))
        .map_err(|err| fail("the call", err))?;
    let role = std::env::var("RALPH_ROLE")
        .map(|role| format!("role={role} "))
        .unwrap_or_default();
    // One write of the whole line: agents working at once append to the
    // same log, and a line written in pieces could be cut into by another.
    let line = format!(
        "story={story} attempt={attempt} {role}argv={}\n",
        argv.join(" ")
    );
    log.write_all(line.as_bytes())
        .map_err(|err| fail("the call", err))
}

// ---------------------------------------------------------------------------
// The script language

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Plain,
    Claude,
    Codex,
    Gemini,
}

#[derive(PartialEq, Eq, Debug)]
enum Selector {
    StoryAttempt(String, u32),
    Story(String),
    Call(u64),
    Any,
}

impl Selector {
    /// How specific a matching section is; `None` when it does not match.
    fn rank(&self, env: &Invocation, call: u64) -> Option<u8> {
        match self {
            Selector::StoryAttempt(story, attempt) => (env.story.as_deref()
                == Some(story.as_str())
                && env.attempt_number() == Some(*attempt))
            .then_some(4),
            Selector::Story(story) => (env.story.as_deref() == Some(story.as_str())).then_some(3),
            Selector::Call(k) => (*k == call).then_some(2),
            Selector::Any => Some(1),
        }
    }
}

enum Command {
    Format(Format),
    Say(String),
    Tool(String),
    Promise(String),
    Final(String),
    Usage { input: u64, output: u64, cost: f64 },
    Error(String),
    RateLimit(Option<u64>),
    Write(PathBuf, String),
    Append(PathBuf, String),
    Remove(PathBuf),
    Mkdir(PathBuf),
    Chmod { executable: bool, path: PathBuf },
    Symlink { target: PathBuf, path: PathBuf },
    Tick(String),
    TickStory(Option<String>),
    SetPasses(String, bool),
    Sleep(Duration),
    WaitFor(PathBuf),
    Exit(i32),
    Crash,
    Flood(u64),
    Git(Vec<String>),
    PrintEnv(String),
    Detach(Detached),
}

/// A child that leaves the agent's session and writes a file later.
struct Detached {
    after: Duration,
    pid_file: PathBuf,
    path: PathBuf,
    text: String,
}

struct Section {
    selector: Selector,
    commands: Vec<(usize, Command)>,
}

struct Script {
    default_format: Option<Format>,
    sections: Vec<Section>,
}

impl Script {
    fn select(&self, env: &Invocation, call: u64) -> Option<&Section> {
        self.sections
            .iter()
            .filter_map(|section| section.selector.rank(env, call).map(|rank| (rank, section)))
            .max_by_key(|(rank, _)| *rank)
            .map(|(_, section)| section)
    }
}

fn parse_script(text: &str) -> Result<Script> {
    let mut script = Script {
        default_format: None,
        sections: Vec::new(),
    };
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let located = |message: String| Fault::script(format!("script line {number}: {message}"));
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let selector = parse_selector(inner).map_err(located)?;
            if script.sections.iter().any(|s| s.selector == selector) {
                return Err(located(format!("section [{inner}] appears twice")));
            }
            script.sections.push(Section {
                selector,
                commands: Vec::new(),
            });
            continue;
        }
        let command = parse_command(line).map_err(located)?;
        match script.sections.last_mut() {
            Some(section) => section.commands.push((number, command)),
            None => match command {
                Command::Format(format) => script.default_format = Some(format),
                _ => {
                    return Err(located(
                        "only `format` may come before the first [section] header".into(),
                    ));
                }
            },
        }
    }
    Ok(script)
}

fn parse_selector(inner: &str) -> std::result::Result<Selector, String> {
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Selector::Any);
    }
    let mut story = None;
    let mut attempt = None;
    let mut call = None;
    for pair in inner.split_whitespace() {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` in a section header is not key=value"))?;
        let number = |value: &str| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("`{key}={value}` needs a number from 1 up"))
        };
        match key {
            "story" if story.is_none() && !value.is_empty() => story = Some(value.to_string()),
            "attempt" if attempt.is_none() => {
                let n = number(value)?;
                attempt = Some(u32::try_from(n).map_err(|_| format!("attempt {n} is too big"))?);
            }
            "call" if call.is_none() => call = Some(number(value)?),
            _ => return Err(format!("unexpected `{pair}` in a section header")),
        }
    }
    match (story, attempt, call) {
        (Some(story), Some(attempt), None) => Ok(Selector::StoryAttempt(story, attempt)),
        (Some(story), None, None) => Ok(Selector::Story(story)),
        (None, None, Some(call)) => Ok(Selector::Call(call)),
        _ => Err(format!(
            "[{inner}] is not one of [story=S attempt=N], [story=S], [call=K], [*]"
        )),
    }
}

fn parse_command(line: &str) -> std::result::Result<Command, String> {
    let (word, rest) = split_word(line);
    let text = || unescape(rest);
    let none = |command: Command| {
        if rest.is_empty() {
            Ok(command)
        } else {
            Err(format!("`{word}` takes no argument, got `{rest}`"))
        }
    };
    let required = |what: &str| {
        if rest.is_empty() {
            Err(format!("`{word}` needs {what}"))
        } else {
            Ok(unescape(rest))
        }
    };
    let path_and_text = || {
        let (path, text) = split_word(rest);
        if path.is_empty() {
            Err(format!("`{word}` needs a path"))
        } else {
            Ok((PathBuf::from(unescape(path)), unescape(text)))
        }
    };
    let number = |what: &str| -> std::result::Result<u64, String> {
        rest.parse()
            .map_err(|_| format!("`{word}` needs {what}, got `{rest}`"))
    };
    Ok(match word {
        "format" => Command::Format(match rest {
            "plain" => Format::Plain,
            "claude" => Format::Claude,
            "codex" => Format::Codex,
            "gemini" => Format::Gemini,
            _ => {
                return Err(format!(
                    "unknown format `{rest}` (plain, claude, codex, gemini)"
                ));
            }
        }),
        "say" => Command::Say(text()),
        "tool" => Command::Tool(text()),
        "promise" => Command::Promise(text()),
        "final" => Command::Final(text()),
        "usage" => {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            let parsed = match parts.as_slice() {
                [input, output, cost] => input
                    .parse()
                    .ok()
                    .zip(output.parse().ok())
                    .zip(cost.parse::<f64>().ok().filter(|c| c.is_finite())),
                _ => None,
            };
            let ((input, output), cost) = parsed.ok_or_else(|| {
                format!("`usage` needs <input_tokens> <output_tokens> <cost_usd>, got `{rest}`")
            })?;
            Command::Usage {
                input,
                output,
                cost,
            }
        }
        "error" => Command::Error(required("a message")?),
        "rate-limit" if rest.is_empty() => Command::RateLimit(None),
        "rate-limit" => Command::RateLimit(Some(number("a unix time")?)),
        "write" => {
            let (path, text) = path_and_text()?;
            Command::Write(path, text)
        }
        "append" => {
            let (path, text) = path_and_text()?;
            Command::Append(path, text)
        }
        "rm" => Command::Remove(PathBuf::from(required("a path")?)),
        "mkdir" => Command::Mkdir(PathBuf::from(required("a path")?)),
        "chmod" => {
            let (mode, path) = split_word(rest);
            let executable = match mode {
                "+x" => true,
                "-x" => false,
                _ => return Err(format!("`chmod` needs +x or -x, got `{mode}`")),
            };
            if path.is_empty() {
                return Err("`chmod` needs a path".into());
            }
            Command::Chmod {
                executable,
                path: PathBuf::from(unescape(path)),
            }
        }
        "symlink" => {
            let (target, path) = split_word(rest);
            if path.is_empty() {
                return Err("`symlink` needs <target> <path>".into());
            }
            Command::Symlink {
                target: PathBuf::from(unescape(target)),
                path: PathBuf::from(unescape(path)),
            }
        }
        "tick" => Command::Tick(required("a task prefix")?),
        "tick-story" if rest.is_empty() => Command::TickStory(None),
        "tick-story" if !rest.contains(char::is_whitespace) => {
            Command::TickStory(Some(rest.to_string()))
        }
        "set-passes" => match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [id, "true"] => Command::SetPasses((*id).to_string(), true),
            [id, "false"] => Command::SetPasses((*id).to_string(), false),
            _ => return Err(format!("`set-passes` needs <id> true|false, got `{rest}`")),
        },
        "sleep" => Command::Sleep(
            rest.parse::<f64>()
                .ok()
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                .ok_or_else(|| format!("`sleep` needs seconds, got `{rest}`"))?,
        ),
        "wait-for" => Command::WaitFor(PathBuf::from(required("a path")?)),
        "exit" => Command::Exit(
            rest.parse::<u8>()
                .map(i32::from)
                .map_err(|_| format!("`exit` needs a code from 0 to 255, got `{rest}`"))?,
        ),
        "crash" => none(Command::Crash)?,
        "flood" => Command::Flood(number("a byte count")?),
        "git" => Command::Git(split_args(rest)?),
        "detach" => Command::Detach(parse_detach(rest)?),
        "print-env" if !rest.is_empty() && !rest.contains(char::is_whitespace) => {
            Command::PrintEnv(rest.to_string())
        }
        _ => return Err(format!("cannot understand `{line}`")),
    })
}

/// `detach <secs> <pid-file> <path> <text>`.
fn parse_detach(rest: &str) -> std::result::Result<Detached, String> {
    let usage = || format!("`detach` needs <secs> <pid-file> <path> <text>, got `{rest}`");
    let (secs, rest) = split_word(rest);
    let (pid_file, rest) = split_word(rest);
    let (path, text) = split_word(rest);
    let after = secs
        .parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(usage)?;
    if pid_file.is_empty() || path.is_empty() {
        return Err(usage());
    }
    Ok(Detached {
        after,
        pid_file: PathBuf::from(unescape(pid_file)),
        path: PathBuf::from(unescape(path)),
        text: unescape(text),
    })
}

/// Splits off the first whitespace-delimited word; the rest keeps its inner spacing.
fn split_word(text: &str) -> (&str, &str) {
    match text.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim_start()),
        None => (text, ""),
    }
}

/// Scripts are line-based, so newlines and tabs inside a text need escapes.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Whitespace separates arguments; single or double quotes keep one together.
fn split_args(text: &str) -> std::result::Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut current: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.get_or_insert_with(String::new).push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                current.get_or_insert_with(String::new);
            }
            None if c.is_whitespace() => args.extend(current.take()),
            None => current.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("unclosed quote in `{text}`"));
    }
    args.extend(current);
    Ok(args)
}

// ---------------------------------------------------------------------------
// Running the chosen section

#[derive(Default)]
struct Outcome {
    final_text: Option<String>,
    promise: Option<String>,
    usage: Usage,
    error: Option<AgentError>,
    exit: Option<i32>,
}

#[derive(Default, Clone, Copy)]
struct Usage {
    input: u64,
    output: u64,
    cost: f64,
}

enum AgentError {
    Message(String),
    RateLimit(Option<u64>),
}

impl Outcome {
    /// The last message of the run, as the agent would word it.
    fn final_message(&self) -> Option<String> {
        let promise = self
            .promise
            .as_ref()
            .map(|body| format!("<promise>{body}</promise>"));
        match (&self.final_text, promise) {
            (Some(text), Some(promise)) => Some(format!("{text}\n{promise}")),
            (Some(text), None) => Some(text.clone()),
            (None, promise) => promise,
        }
    }

    fn exit_code(&self) -> i32 {
        match (self.exit, &self.error) {
            (Some(code), _) => code,
            (None, Some(_)) => 1,
            (None, None) => 0,
        }
    }
}

enum Flow {
    Continue,
    Stop,
}

fn execute(
    command: &Command,
    env: &Invocation,
    out: &mut Emitter,
    outcome: &mut Outcome,
) -> Result<Flow> {
    let io_fail = |what: &str, path: &Path, err: io::Error| {
        Fault::command(format!("cannot {what} {}: {err}", path.display()))
    };
    match command {
        Command::Format(_) => {}
        Command::Say(text) => out.say(text)?,
        Command::Tool(text) => out.tool(text)?,
        Command::Promise(body) => outcome.promise = Some(body.clone()),
        Command::Final(text) => outcome.final_text = Some(text.clone()),
        Command::Usage {
            input,
            output,
            cost,
        } => {
            outcome.usage = Usage {
                input: *input,
                output: *output,
                cost: *cost,
            }
        }
        Command::Error(message) => outcome.error = Some(AgentError::Message(message.clone())),
        Command::RateLimit(reset) => outcome.error = Some(AgentError::RateLimit(*reset)),
        Command::Write(path, text) => {
            create_parent(path)?;
            fs::write(path, text).map_err(|err| io_fail("write", path, err))?;
        }
        Command::Append(path, text) => {
            create_parent(path)?;
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(text.as_bytes()))
                .map_err(|err| io_fail("append to", path, err))?;
        }
        Command::Remove(path) => {
            let meta = fs::symlink_metadata(path).map_err(|err| io_fail("remove", path, err))?;
            if meta.is_dir() {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            }
            .map_err(|err| io_fail("remove", path, err))?;
        }
        Command::Mkdir(path) => {
            fs::create_dir_all(path).map_err(|err| io_fail("create directory", path, err))?
        }
        Command::Chmod { executable, path } => chmod(path, *executable)?,
        Command::Symlink { target, path } => {
            create_parent(path)?;
            std::os::unix::fs::symlink(target, path)
                .map_err(|err| io_fail("create symlink", path, err))?;
        }
        Command::Tick(prefix) => tick(&tasks_path(env)?, prefix)?,
        Command::TickStory(id) => {
            let id = match id {
                Some(id) => id.as_str(),
                None => env
                    .story
                    .as_deref()
                    .ok_or_else(|| Fault::command("tick-story without an id needs RALPH_STORY"))?,
            };
            tick_story(&tasks_path(env)?, id)?;
        }
        Command::SetPasses(id, passes) => set_passes(id, *passes)?,
        Command::Sleep(duration) => std::thread::sleep(*duration),
        Command::WaitFor(path) => wait_for(path)?,
        Command::Exit(code) => {
            outcome.exit = Some(*code);
            return Ok(Flow::Stop);
        }
        Command::Crash => std::process::abort(),
        Command::Flood(bytes) => out.flood(*bytes)?,
        Command::Git(args) => git(args)?,
        Command::Detach(detached) => detach(detached)?,
        Command::PrintEnv(name) => {
            let value = std::env::var_os(name)
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_else(|| "<unset>".to_string());
            out.say(&value)?;
        }
    }
    Ok(Flow::Continue)
}

/// Waits until `path` exists, so that a test decides when an attempt goes
/// on; two minutes at most.
fn wait_for(path: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        if std::time::Instant::now() > deadline {
            return Err(Fault::command(format!(
                "`wait-for`: {} never appeared",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Starts `setsid sh`, which leaves the agent's session and process group
/// at once (the fake agent never leads a group, so `setsid` does not fork
/// and the pid is the child's), its output nowhere; it writes `text` to
/// `path` after `after`. Its pid is appended to `pid_file`, a line of its
/// own, before the agent goes on.
fn detach(detached: &Detached) -> Result<()> {
    let child = std::process::Command::new("setsid")
        .args(["sh", "-c", "sleep \"$1\"; printf %s \"$2\" > \"$3\"", "sh"])
        .arg(detached.after.as_secs_f64().to_string())
        .arg(&detached.text)
        .arg(&detached.path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| Fault::command(format!("`detach`: cannot start setsid: {err}")))?;
    create_parent(&detached.pid_file)?;
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&detached.pid_file)
        .and_then(|mut file| writeln!(file, "{}", child.id()))
        .map_err(|err| {
            Fault::command(format!(
                "cannot write {}: {err}",
                detached.pid_file.display()
            ))
        })?;
    Ok(())
}

fn create_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs::create_dir_all(parent)
            .map_err(|err| Fault::command(format!("cannot create {}: {err}", parent.display()))),
        _ => Ok(()),
    }
}

fn chmod(path: &Path, executable: bool) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |err: io::Error| Fault::command(format!("cannot chmod {}: {err}", path.display()));
    let mut permissions = fs::metadata(path).map_err(fail)?.permissions();
    let mode = permissions.mode();
    permissions.set_mode(if executable {
        mode | 0o111
    } else {
        mode & !0o111
    });
    fs::set_permissions(path, permissions).map_err(fail)
}

fn git(args: &[String]) -> Result<()> {
    // git's own stdout would corrupt a JSON event stream, so it goes to stderr.
    let status = std::process::Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(io::stderr()))
        .status()
        .map_err(|err| Fault::command(format!("cannot run git: {err}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Fault::command(format!(
            "`git {}` failed ({status})",
            args.join(" ")
        )))
    }
}

// ---------------------------------------------------------------------------
// Tracking files

fn tasks_path(env: &Invocation) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("FAKE_AGENT_TASKS") {
        return Ok(PathBuf::from(path));
    }
    let change = env
        .change
        .as_deref()
        .ok_or_else(|| Fault::command("neither FAKE_AGENT_TASKS nor RALPH_CHANGE is set"))?;
    Ok(Path::new("openspec/changes").join(change).join("tasks.md"))
}

/// A task line as OpenSpec counts them: `^\s*[-*]\s*\[([\sxX])\]\s*(.*)`.
struct Checkbox {
    /// Byte range of the character inside the brackets.
    mark: std::ops::Range<usize>,
    ticked: bool,
    /// Byte offset where the task text starts.
    text: usize,
}

fn checkbox(line: &str) -> Option<Checkbox> {
    let skip_space = |from: usize| {
        line[from..]
            .char_indices()
            .find(|(_, c)| !c.is_whitespace())
            .map_or(line.len(), |(i, _)| from + i)
    };
    let bullet = skip_space(0);
    if !line[bullet..].starts_with(['-', '*']) {
        return None;
    }
    let open = skip_space(bullet + 1);
    if !line[open..].starts_with('[') {
        return None;
    }
    let mark_start = open + 1;
    let mark_char = line[mark_start..].chars().next()?;
    if !(mark_char.is_whitespace() || mark_char == 'x' || mark_char == 'X') {
        return None;
    }
    let mark_end = mark_start + mark_char.len_utf8();
    if !line[mark_end..].starts_with(']') {
        return None;
    }
    Some(Checkbox {
        mark: mark_start..mark_end,
        ticked: !mark_char.is_whitespace(),
        text: skip_space(mark_end + 1),
    })
}

/// Lines with their endings, so that a rewrite leaves every other byte alone.
fn read_lines(path: &Path) -> Result<Vec<String>> {
    let text = fs::read_to_string(path).map_err(|err| {
        Fault::command(format!("cannot read tasks file {}: {err}", path.display()))
    })?;
    Ok(text.split_inclusive('\n').map(str::to_string).collect())
}

fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
    fs::write(path, lines.concat())
        .map_err(|err| Fault::command(format!("cannot write tasks file {}: {err}", path.display())))
}

fn tick_line(line: &mut String, mark: std::ops::Range<usize>) {
    line.replace_range(mark, "x");
}

fn tick(path: &Path, prefix: &str) -> Result<()> {
    let mut lines = read_lines(path)?;
    let found = lines.iter().enumerate().find_map(|(i, line)| {
        let body = line.trim_end_matches(['\n', '\r']);
        checkbox(body)
            .filter(|b| !b.ticked && body[b.text..].starts_with(prefix))
            .map(|b| (i, b.mark))
    });
    let (index, mark) = found.ok_or_else(|| {
        Fault::command(format!(
            "no unticked task starting with `{prefix}` in {}",
            path.display()
        ))
    })?;
    tick_line(&mut lines[index], mark);
    write_lines(path, &lines)
}

/// The story a `## ` heading opens: `## 2. Farewell` opens story `2`.
fn heading_story(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("## ")?;
    let (token, _) = split_word(rest.trim_start());
    Some(token.trim_end_matches(['.', ':']))
}

fn tick_story(path: &Path, id: &str) -> Result<()> {
    let mut lines = read_lines(path)?;
    let mut current = Some("0".to_string());
    let mut seen = id == "0";
    for line in &mut lines {
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(story) = heading_story(body) {
            seen |= story == id;
            current = Some(story.to_string());
            continue;
        }
        if current.as_deref() != Some(id) {
            continue;
        }
        if let Some(b) = checkbox(body).filter(|b| !b.ticked) {
            tick_line(line, b.mark);
        }
    }
    if !seen {
        return Err(Fault::command(format!(
            "no `## {id}.` heading in {}",
            path.display()
        )));
    }
    write_lines(path, &lines)
}

fn set_passes(id: &str, passes: bool) -> Result<()> {
    let path =
        std::env::var_os("FAKE_AGENT_PRD").map_or_else(|| PathBuf::from("prd.json"), PathBuf::from);
    let fail = |message: String| Fault::command(format!("{}: {message}", path.display()));
    let text = fs::read_to_string(&path).map_err(|err| fail(format!("cannot read: {err}")))?;
    let mut prd: Value =
        serde_json::from_str(&text).map_err(|err| fail(format!("not JSON: {err}")))?;
    let stories = prd
        .get_mut("userStories")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| fail("no `userStories` array".into()))?;
    let story = stories
        .iter_mut()
        .find(|story| match story.get("id") {
            Some(Value::String(s)) => s == id,
            Some(Value::Number(n)) => n.to_string() == id,
            _ => false,
        })
        .and_then(Value::as_object_mut)
        .ok_or_else(|| fail(format!("no user story with id `{id}`")))?;
    story.insert("passes".into(), Value::Bool(passes));
    let mut pretty =
        serde_json::to_string_pretty(&prd).map_err(|err| fail(format!("cannot encode: {err}")))?;
    pretty.push('\n');
    fs::write(&path, pretty).map_err(|err| fail(format!("cannot write: {err}")))
}

// ---------------------------------------------------------------------------
// Output dialects

struct Emitter {
    format: Format,
    session: String,
    /// Feeds the ids of messages, tool calls and events.
    serial: u64,
    /// Assistant messages so far, which the claude dialect reports as turns.
    turns: u64,
    tool_calls: u64,
    /// The text of the last message, which is what an agent reports as its
    /// result when no final message was scripted.
    last_text: Option<String>,
}

impl Emitter {
    fn new(format: Format, call: u64) -> Self {
        Emitter {
            format,
            session: fake_uuid(0x5e55_0000_0000 + call),
            serial: 0,
            turns: 0,
            tool_calls: 0,
            last_text: None,
        }
    }

    fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .map_err(Fault::output)
    }

    fn line(&mut self, text: &str) -> Result<()> {
        self.write_raw(format!("{text}\n").as_bytes())
    }

    fn event(&mut self, mut event: Value) -> Result<()> {
        if self.format == Format::Claude
            && let Some(object) = event.as_object_mut()
        {
            let uuid = fake_uuid(self.next_serial());
            object.insert("session_id".into(), json!(self.session));
            object.insert("uuid".into(), json!(uuid));
        }
        self.line(&event.to_string())
    }

    fn start(&mut self, prompt: &str) -> Result<()> {
        let cwd = std::env::current_dir()
            .map(|dir| dir.display().to_string())
            .unwrap_or_default();
        match self.format {
            Format::Plain => Ok(()),
            Format::Claude => self.event(json!({
                "type": "system",
                "subtype": "init",
                "cwd": cwd,
                "tools": ["Bash", "Edit", "Read", "Write"],
                "mcp_servers": [],
                "model": MODEL,
                "permissionMode": "bypassPermissions",
                "apiKeySource": "none",
            })),
            Format::Codex => {
                let thread = self.session.clone();
                self.event(json!({"type": "thread.started", "thread_id": thread}))?;
                self.event(json!({"type": "turn.started"}))
            }
            Format::Gemini => {
                let session = self.session.clone();
                self.event(json!({
                    "type": "init",
                    "timestamp": TIMESTAMP,
                    "session_id": session,
                    "model": MODEL,
                }))?;
                self.event(json!({
                    "type": "message",
                    "timestamp": TIMESTAMP,
                    "role": "user",
                    "content": prompt,
                }))
            }
        }
    }

    fn say(&mut self, text: &str) -> Result<()> {
        self.last_text = Some(text.to_string());
        self.turns += 1;
        match self.format {
            Format::Plain => self.line(text),
            Format::Claude => {
                let message = self.claude_message(json!([{"type": "text", "text": text}]));
                self.event(json!({
                    "type": "assistant",
                    "message": message,
                    "parent_tool_use_id": null,
                }))
            }
            Format::Codex => {
                let id = format!("item_{}", self.next_serial());
                self.event(json!({
                    "type": "item.completed",
                    "item": {"id": id, "type": "agent_message", "text": text},
                }))
            }
            Format::Gemini => self.event(json!({
                "type": "message",
                "timestamp": TIMESTAMP,
                "role": "assistant",
                "content": text,
                "delta": true,
            })),
        }
    }

    fn claude_message(&mut self, content: Value) -> Value {
        json!({
            "id": format!("msg_{}", self.next_serial()),
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        })
    }

    fn tool(&mut self, output: &str) -> Result<()> {
        self.tool_calls += 1;
        let command = "cat scripted-output.txt";
        match self.format {
            Format::Plain => self.line(output),
            Format::Claude => {
                self.turns += 1;
                let id = format!("toolu_{}", self.next_serial());
                let message = self.claude_message(json!([{
                    "type": "tool_use",
                    "id": id,
                    "name": "Bash",
                    "input": {"command": command, "description": "Show the scripted output"},
                }]));
                self.event(json!({
                    "type": "assistant",
                    "message": message,
                    "parent_tool_use_id": null,
                }))?;
                self.event(json!({
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{
                            "tool_use_id": id,
                            "type": "tool_result",
                            "content": output,
                            "is_error": false,
                        }],
                    },
                    "parent_tool_use_id": null,
                    "tool_use_result": {
                        "stdout": output,
                        "stderr": "",
                        "interrupted": false,
                        "isImage": false,
                    },
                }))
            }
            Format::Codex => {
                let id = format!("item_{}", self.next_serial());
                let command = format!("/bin/bash -lc '{command}'");
                self.event(json!({
                    "type": "item.started",
                    "item": {
                        "id": id,
                        "type": "command_execution",
                        "command": command,
                        "aggregated_output": "",
                        "exit_code": null,
                        "status": "in_progress",
                    },
                }))?;
                self.event(json!({
                    "type": "item.completed",
                    "item": {
                        "id": id,
                        "type": "command_execution",
                        "command": command,
                        "aggregated_output": output,
                        "exit_code": 0,
                        "status": "completed",
                    },
                }))
            }
            Format::Gemini => {
                let id = format!("run_shell_command_{}", self.next_serial());
                self.event(json!({
                    "type": "tool_use",
                    "timestamp": TIMESTAMP,
                    "tool_name": "run_shell_command",
                    "tool_id": id,
                    "parameters": {"command": command, "description": "Show the scripted output"},
                }))?;
                self.event(json!({
                    "type": "tool_result",
                    "timestamp": TIMESTAMP,
                    "tool_id": id,
                    "status": "success",
                    "output": output,
                }))
            }
        }
    }

    /// Junk for output-limit tests: 100-byte lines, written in 64 KiB chunks
    /// so that gigabytes cost no memory.
    fn flood(&mut self, bytes: u64) -> Result<()> {
        const LINE: usize = 100;
        const CHUNK: usize = 64 * 1024;
        let line: Vec<u8> = b"flood "
            .iter()
            .copied()
            .cycle()
            .take(LINE - 1)
            .chain(std::iter::once(b'\n'))
            .collect();
        // One chunk plus a line of slack, so a chunk can start at any column.
        let pattern: Vec<u8> = line.repeat(CHUNK / LINE + 2);
        let mut stdout = io::stdout().lock();
        let mut written: u64 = 0;
        while written < bytes {
            let column = usize::try_from(written % LINE as u64).unwrap_or(0);
            let left = usize::try_from(bytes - written).unwrap_or(CHUNK);
            let len = left.min(CHUNK);
            stdout
                .write_all(&pattern[column..column + len])
                .map_err(Fault::output)?;
            written += len as u64;
        }
        stdout.flush().map_err(Fault::output)
    }

    fn finish(&mut self, outcome: &Outcome, started: Instant) -> Result<()> {
        let final_message = outcome.final_message();
        if let Some(text) = &final_message {
            self.say(text)?;
        }
        let result_text = final_message
            .or_else(|| self.last_text.clone())
            .unwrap_or_default();
        let error = outcome.error.as_ref().map(|error| self.error_text(error));
        let usage = outcome.usage;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match self.format {
            Format::Plain => {
                if let Some(error) = error {
                    eprintln!("{error}");
                }
                Ok(())
            }
            Format::Claude => self.claude_result(outcome, result_text, error, duration_ms),
            Format::Codex => match error {
                Some(message) => {
                    self.event(json!({"type": "error", "message": message}))?;
                    self.event(json!({"type": "turn.failed", "error": {"message": message}}))
                }
                None => self.event(json!({
                    "type": "turn.completed",
                    "usage": {
                        "input_tokens": usage.input,
                        "cached_input_tokens": 0,
                        "output_tokens": usage.output,
                        "reasoning_output_tokens": 0,
                    },
                })),
            },
            Format::Gemini => {
                let stats = json!({
                    "total_tokens": usage.input + usage.output,
                    "input_tokens": usage.input,
                    "output_tokens": usage.output,
                    "cached": 0,
                    "input": usage.input,
                    "duration_ms": duration_ms,
                    "tool_calls": self.tool_calls,
                    "models": {MODEL: {
                        "total_tokens": usage.input + usage.output,
                        "input_tokens": usage.input,
                        "output_tokens": usage.output,
                        "cached": 0,
                        "input": usage.input,
                    }},
                });
                match error {
                    Some(message) => self.event(json!({
                        "type": "result",
                        "timestamp": TIMESTAMP,
                        "status": "error",
                        "error": {"type": "unknown", "message": message},
                        "stats": stats,
                    })),
                    None => self.event(json!({
                        "type": "result",
                        "timestamp": TIMESTAMP,
                        "status": "success",
                        "stats": stats,
                    })),
                }
            }
        }
    }

    /// How each dialect words an API failure.
    fn error_text(&self, error: &AgentError) -> String {
        let reset = |reset: &Option<u64>| reset.map(|r| format!("|{r}")).unwrap_or_default();
        match (self.format, error) {
            (_, AgentError::Message(message)) => message.clone(),
            (Format::Claude, AgentError::RateLimit(r)) => {
                format!("Claude AI usage limit reached{}", reset(r))
            }
            (Format::Plain, AgentError::RateLimit(r)) => {
                format!("usage limit reached{}", reset(r))
            }
            (Format::Codex, AgentError::RateLimit(r)) => {
                format!("429 Too Many Requests: usage limit reached{}", reset(r))
            }
            (Format::Gemini, AgentError::RateLimit(r)) => {
                let inner = json!({"error": {
                    "code": 429,
                    "message": format!("usage limit reached{}", reset(r)),
                    "status": "RESOURCE_EXHAUSTED",
                }});
                format!("[API Error: {inner}]")
            }
        }
    }

    fn claude_result(
        &mut self,
        outcome: &Outcome,
        result_text: String,
        error: Option<String>,
        duration_ms: u64,
    ) -> Result<()> {
        let usage = outcome.usage;
        let status = match &outcome.error {
            Some(AgentError::RateLimit(_)) => json!(429),
            Some(AgentError::Message(_)) => json!(400),
            None => Value::Null,
        };
        let result = match &error {
            Some(message) => {
                // The real CLI reports an API failure as a synthetic message first.
                self.turns += 1;
                let mut message_event =
                    self.claude_message(json!([{"type": "text", "text": message}]));
                message_event["model"] = json!("<synthetic>");
                self.event(json!({
                    "type": "assistant",
                    "message": message_event,
                    "parent_tool_use_id": null,
                    "error": if status == json!(429) { "rate_limit" } else { "unknown" },
                }))?;
                message.clone()
            }
            None => result_text,
        };
        self.event(json!({
            "type": "result",
            // The real CLI says `success` even when `is_error` is true.
            "subtype": "success",
            "is_error": error.is_some(),
            "api_error_status": status,
            "duration_ms": duration_ms,
            "duration_api_ms": 0,
            "num_turns": self.turns.max(1),
            "result": result,
            "stop_reason": if error.is_some() { "stop_sequence" } else { "end_turn" },
            "total_cost_usd": usage.cost,
            "usage": {
                "input_tokens": usage.input,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": usage.output,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {MODEL: {
                "inputTokens": usage.input,
                "outputTokens": usage.output,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "webSearchRequests": 0,
                "costUSD": usage.cost,
            }},
            "permission_denials": [],
        }))
    }
}

fn fake_uuid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{:012x}", n & 0xffff_ffff_ffff)
}
