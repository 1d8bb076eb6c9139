//! The small disk of the `full` shape: a tmpfs mounted for the repository
//! alone, which the user's acts fill (a ballast file beside the worktree,
//! until a write fails, then a few kilobytes given back) and free. Writes
//! then fail in the middle of whatever runs: the invariants still say that
//! nothing the user had is lost and that the record tells the truth.
//!
//! Mounting needs root. Where `mount -t tmpfs` is refused, the shape is
//! left out of the draw, with a note (and a replayed `shape=full` is
//! played on an ordinary directory, where the disk never fills).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// How large the disk is: the project, its worktrees and a few runs fit.
const SIZE: &str = "24m";
/// What a fill leaves free, so that small writes still go through.
const LEFT: u64 = 24 << 10;

/// A tmpfs mounted at a directory of the scenario's, unmounted when
/// dropped (before the directory itself goes).
pub struct Disk {
    at: PathBuf,
}

fn quiet(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether this machine lets the tests mount a tmpfs, asked once.
pub fn can_mount() -> bool {
    static CAN: OnceLock<bool> = OnceLock::new();
    *CAN.get_or_init(|| {
        let probe = std::env::temp_dir().join(format!("git-ralph-tmpfs-{}", std::process::id()));
        let works = Disk::mount(&probe).is_some();
        let _ = fs::remove_dir(&probe);
        if !works {
            eprintln!("note: mount -t tmpfs does not work here: the shape `full` is not drawn");
        }
        works
    })
}

impl Disk {
    pub fn mount(at: &Path) -> Option<Disk> {
        fs::create_dir_all(at).ok()?;
        let mounted = quiet(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={SIZE}"), "tmpfs"])
                .arg(at),
        );
        mounted.then(|| Disk { at: at.to_owned() })
    }

    fn ballast(&self) -> PathBuf {
        self.at.join("ballast")
    }

    /// Fills the disk but for a few kilobytes.
    pub fn fill(&self) {
        let Ok(mut file) = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.ballast())
        else {
            return;
        };
        let chunk = vec![0u8; 64 << 10];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.flush();
        let size = file.metadata().map_or(0, |meta| meta.len());
        let _ = file.set_len(size.saturating_sub(LEFT));
    }

    pub fn free(&self) {
        let _ = fs::remove_file(self.ballast());
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        let _ = quiet(Command::new("umount").arg("-l").arg(&self.at));
    }
}
