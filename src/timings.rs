//! Where a command's time goes, phase by phase. With `RALPH_TIMINGS` set to
//! a file, each git-ralph process appends to that file, as it ends, a table
//! of the phases it went through: how many times each ran, for how long in
//! all, and the longest; a phase started inside another is shown below it.
//! Without the variable a phase costs one check of a flag set once.
//!
//! This is a measuring tool for people (`RALPH_TIMINGS=/tmp/t git ralph
//! start …`, then read `/tmp/t`) and for the run benchmark; nothing in the
//! product reads the table back. It knows nothing of runs or repositories:
//! the phases are named by whoever opens them.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The environment variable naming the file the table is appended to.
pub const VAR: &str = "RALPH_TIMINGS";

struct Table {
    file: PathBuf,
    started: Instant,
    /// In the order each phase was first seen.
    rows: Vec<Row>,
}

struct Row {
    /// The names of the phases it ran within, then its own.
    path: Vec<&'static str>,
    count: u32,
    total: Duration,
    longest: Duration,
}

static TABLE: OnceLock<Option<Mutex<Table>>> = OnceLock::new();

thread_local! {
    /// The phases open on this thread, outermost first.
    static OPEN: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

fn table() -> Option<&'static Mutex<Table>> {
    TABLE
        .get_or_init(|| {
            let file = std::env::var_os(VAR).filter(|value| !value.is_empty())?;
            Some(Mutex::new(Table {
                file: PathBuf::from(file),
                started: Instant::now(),
                rows: Vec::new(),
            }))
        })
        .as_ref()
}

/// Start the process's clock, when timings are asked for.
pub fn start() {
    table();
}

/// A phase, timed from now until it is dropped.
#[must_use = "a phase is timed until it is dropped"]
pub struct Phase {
    started: Option<(Instant, Vec<&'static str>)>,
}

/// Open the phase `name`, within whatever phase this thread has open.
pub fn phase(name: &'static str) -> Phase {
    if table().is_none() {
        return Phase { started: None };
    }
    let path = OPEN.with(|open| {
        let mut open = open.borrow_mut();
        open.push(name);
        open.clone()
    });
    Phase {
        started: Some((Instant::now(), path)),
    }
}

/// Open the phase `name` at the top level, never with others inside it:
/// for async code, which may resume on another thread than it began on.
pub fn top_phase(name: &'static str) -> Phase {
    Phase {
        started: table().map(|_| (Instant::now(), vec![name])),
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        let Some((started, path)) = self.started.take() else {
            return;
        };
        let elapsed = started.elapsed();
        // Phases end in the reverse of the order they began; a top-level
        // one was never open on this thread's list.
        OPEN.with(|open| {
            let mut open = open.borrow_mut();
            if open.len() >= path.len() && open[path.len() - 1] == path[path.len() - 1] {
                open.truncate(path.len() - 1);
            }
        });
        if let Some(table) = table() {
            let mut table = table.lock().unwrap_or_else(|p| p.into_inner());
            table.add(path, elapsed);
        }
    }
}

impl Table {
    fn add(&mut self, path: Vec<&'static str>, elapsed: Duration) {
        match self.rows.iter_mut().find(|row| row.path == path) {
            Some(row) => {
                row.count += 1;
                row.total += elapsed;
                row.longest = row.longest.max(elapsed);
            }
            None => self.rows.push(Row {
                path,
                count: 1,
                total: elapsed,
                longest: elapsed,
            }),
        }
    }

    /// The table as text: phases under the ones they ran within, and what
    /// no top-level phase accounts for.
    fn render(&self, command: &str) -> String {
        let wall = self.started.elapsed();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut out = format!(
            "# {command} (pid {}): {:.1} ms\n{:<40} {:>6} {:>10} {:>10}\n",
            std::process::id(),
            ms(wall),
            "phase",
            "count",
            "total ms",
            "max ms"
        );
        let mut order: Vec<&Row> = Vec::with_capacity(self.rows.len());
        for row in self.rows.iter().filter(|row| row.path.len() == 1) {
            push_with_children(&self.rows, row, &mut order);
        }
        for row in order {
            let name = format!(
                "{}{}",
                "  ".repeat(row.path.len() - 1),
                row.path[row.path.len() - 1]
            );
            let _ = writeln!(
                out,
                "{name:<40} {:>6} {:>10.1} {:>10.1}",
                row.count,
                ms(row.total),
                ms(row.longest)
            );
        }
        let top: Duration = self
            .rows
            .iter()
            .filter(|row| row.path.len() == 1)
            .map(|row| row.total)
            .sum();
        let _ = writeln!(
            out,
            "{:<40} {:>6} {:>10.1}\n",
            "(no phase)",
            "",
            ms(wall.saturating_sub(top))
        );
        out
    }
}

/// `row`, then the rows directly within it, each followed by its own.
fn push_with_children<'a>(rows: &'a [Row], row: &'a Row, order: &mut Vec<&'a Row>) {
    order.push(row);
    for child in rows
        .iter()
        .filter(|child| child.path.len() == row.path.len() + 1 && child.path.starts_with(&row.path))
    {
        push_with_children(rows, child, order);
    }
}

/// Append the table of this process to the file `RALPH_TIMINGS` names;
/// nothing when it is unset. `command` heads the table.
pub fn report(command: &str) {
    let Some(table) = table() else { return };
    let text = table
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .render(command);
    let file = table.lock().unwrap_or_else(|p| p.into_inner()).file.clone();
    // A measuring aid: a file that cannot be written loses the table, not
    // the command.
    if let Ok(mut out) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        let _ = out.write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_phases_are_shown_below_their_parent_and_summed() {
        let mut table = Table {
            file: PathBuf::new(),
            started: Instant::now(),
            rows: Vec::new(),
        };
        let ms = Duration::from_millis;
        table.add(vec!["checkpoint", "scan"], ms(30));
        table.add(vec!["checkpoint"], ms(50));
        table.add(vec!["agent"], ms(10));
        table.add(vec!["checkpoint", "scan"], ms(20));
        table.add(vec!["checkpoint"], ms(40));
        let text = table.render("git-ralph start x");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# git-ralph start x (pid "));
        let row = |at: usize| lines[at].split_whitespace().collect::<Vec<_>>();
        assert_eq!(row(2), ["checkpoint", "2", "90.0", "50.0"]);
        assert_eq!(row(3), ["scan", "2", "50.0", "30.0"]);
        assert!(lines[3].starts_with("  scan"));
        assert_eq!(row(4), ["agent", "1", "10.0", "10.0"]);
        assert!(lines[5].starts_with("(no phase)"));
    }
}
