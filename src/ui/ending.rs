//! How a run's ending reads: the notices on the way (a loop being stopped,
//! work set aside) and what finish, abort or the end of a loop did, on
//! stderr, so that stdout stays clean for `--json`.

use super::{note, warn};
use crate::git::ObjectId;
use crate::run::ending::{
    Aborted, AfterLoop, CloseOffer, EndChoice, Finished, HandedOff, Kept, LeftStopped, Notice,
    Onlooker, Question,
};

/// The terminal as the onlooker of an ending: notices are printed as they
/// come, and the question is asked with a menu when there is a terminal.
pub struct Console;

impl Onlooker for Console {
    fn notice(&mut self, notice: Notice) {
        match notice {
            Notice::StoppingLoop { pid } => {
                note(&format!("stopping the running loop (pid {pid})…"))
            }
            Notice::StoppedOrphanAgent => {
                warn("stopped an agent that a killed loop had left running")
            }
            Notice::SetAside { refname } => warn(&format!(
                "work beyond the last checkpoint was set aside at {refname} (see it with 'git show {refname}')"
            )),
            Notice::Unrecorded {
                refname,
                checkpoint,
                carried,
            } => warn(&unrecorded(&refname, &checkpoint, carried)),
            Notice::NotCarried { paths } => warn(&format!(
                "the commits made on the branch after the loop was killed do not merge onto the last checkpoint its record holds (in {}): they are kept with the loop's own",
                paths.join(", ")
            )),
            Notice::Pushing { branch, remote } => note(&format!("pushing {branch} to {remote}…")),
            Notice::PutBack { said } => warn(&format!("before its loop stopped, the agent {said}")),
            Notice::LeftLock { was, kept_at } => warn(&left_lock(&was, &kept_at)),
            Notice::TookOverLock { pid, change } => warn(&format!(
                "took over the lock of a loop that is no longer running (pid {pid}, change '{change}')"
            )),
        }
    }

    fn ask(&mut self, question: &Question) -> Option<EndChoice> {
        super::ask_finish(question)
    }
}

/// What `finish` did.
pub fn finished(finished: &Finished) {
    match finished {
        Finished::Kept(kept) => {
            note(&format!(
                "kept: {} holds one commit per finished story ({} of {} done).{}{}",
                kept.branch,
                kept.stories_done,
                kept.stories_total,
                removed(kept.worktree_removed.as_deref(), true),
                resume(kept)
            ));
            offer_to_close(kept.close.as_ref());
        }
        Finished::CleanedUp(done) => {
            let whose = match &done.worktree_removed {
                Some(_) => "the run's work is in your worktree as uncommitted changes".to_owned(),
                None => format!(
                    "back on {} with all the work as uncommitted changes",
                    done.original
                ),
            };
            let gone = deleted(
                &done.branch,
                &done.tip,
                &done.tip_ref,
                &done.worktree_removed,
                false,
            );
            note(&format!("cleaned up: {whose}; {gone}"));
            note(&format!(
                "receipts: {}; each checkpoint's trailers are kept in {}.",
                done.receipts,
                done.receipts_file.display()
            ));
            offer_to_close(done.close.as_ref());
        }
        Finished::AlreadyKept { change, branch } => {
            note(&format!("the run '{change}' is already kept on {branch}"));
        }
    }
}

/// How to take up a run kept before its stories were all done.
fn resume(kept: &Kept) -> String {
    let change = &kept.change;
    match (kept.retries_to_resume, kept.resumable) {
        (Some(retries), _) => format!(
            "\nresume it with more retries:\n  git ralph start {change} --max-retries {retries}"
        ),
        (None, true) => format!("\nresume it:\n  git ralph start {change}"),
        (None, false) => String::new(),
    }
}

/// The beads issues the run finished, and the one command that closes
/// them: git-ralph leaves that to the user.
fn offer_to_close(offer: Option<&CloseOffer>) {
    let Some(offer) = offer else {
        return;
    };
    let count = offer.ids.len();
    let ids: Vec<String> = offer.ids.iter().map(|id| shell_word(id)).collect();
    note(&format!(
        "the run finished {count} beads issue{}; git-ralph leaves them open. To close {} in beads:\n  bd close {} --reason {}",
        if count == 1 { "" } else { "s" },
        if count == 1 { "it" } else { "them" },
        ids.join(" "),
        shell_word(&format!("Done on {}", offer.branch))
    ));
}

/// `word` as a shell reads it back: as it is when it is plain, else in
/// single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':'));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// What `finish --push` or `--pr` did. The pull request's address also
/// goes alone on stdout when `url_on_stdout`, for scripts to take.
pub fn handed_off(done: &HandedOff, url_on_stdout: bool) {
    finished(&done.kept);
    note(&format!(
        "pushed {} to {} at {}.",
        done.pushed.branch,
        done.pushed.remote,
        done.pushed.commit.to_hex_with_len(10)
    ));
    if let Some(review) = &done.review {
        let what = review.forge.review_name();
        let draft = match (review.made_draft, review.draft) {
            (true, _) => "; it is a draft now",
            (false, true) => "; it is a draft",
            (false, false) => "",
        };
        if review.created {
            let as_draft = if review.draft { " as a draft" } else { "" };
            note(&format!("opened the {what}{as_draft}: {}", review.url));
        } else {
            note(&format!(
                "updated the {what} already open for {} (its description is rewritten{draft}): {}",
                done.pushed.branch, review.url
            ));
        }
        if url_on_stdout {
            super::out(&review.url);
        }
    }
}

/// The run's own worktree, removed, in a sentence; with `yours_untouched`,
/// that the user's was left alone (not so after a cleanup, which wrote the
/// run's work into it).
fn removed(worktree: Option<&std::path::Path>, yours_untouched: bool) -> String {
    match worktree {
        Some(path) if yours_untouched => format!(
            " The run's worktree at {} is removed; yours was not touched.",
            path.display()
        ),
        Some(path) => format!(" The run's worktree at {} is removed.", path.display()),
        None => String::new(),
    }
}

/// The run's branch gone, where its tip is kept, and the run's worktree
/// gone with it when it had one.
fn deleted(
    branch: &str,
    tip: &ObjectId,
    tip_ref: &str,
    worktree: &Option<std::path::PathBuf>,
    yours_untouched: bool,
) -> String {
    format!(
        "{branch} was deleted (its tip {} is kept at {tip_ref}).{}",
        tip.to_hex_with_len(10),
        removed(worktree.as_deref(), yours_untouched)
    )
}

/// What `abort` did.
pub fn aborted(aborted: &Aborted) {
    let whose = match (&aborted.worktree_removed, &aborted.set_aside) {
        (Some(_), _) => "your worktree is exactly as it was".to_owned(),
        (None, None) => format!("back on {} exactly as before the run", aborted.original),
        (None, Some(_)) => format!(
            "back on {} as it was before the run, what was uncommitted on {} set aside",
            aborted.original, aborted.branch
        ),
    };
    let gone = deleted(
        &aborted.branch,
        &aborted.tip,
        &aborted.tip_ref,
        &aborted.worktree_removed,
        true,
    );
    note(&format!("aborted: {whose}; {gone}"));
    if let Some(kept) = &aborted.set_aside {
        let refname = &kept.refname;
        let stages;
        let staged = if kept.conflicted {
            stages = format!(
                " (the index was conflicted: its stages are ours {refname}^1, base {refname}^2, theirs {refname}^3)"
            );
            &stages
        } else if kept.index_kept {
            " (its parent holds what was staged)"
        } else {
            ""
        };
        warn(&format!(
            "what was left uncommitted on {} is kept at {refname}{staged}: see it with 'git diff {} {refname}', take the files back with 'git restore --source={refname} --worktree -- .'",
            aborted.branch,
            aborted.tip.to_hex_with_len(10),
        ));
    }
    if let Some(checkpoint) = &aborted.commits_after {
        warn(&format!(
            "the commits made on {} after the run's last checkpoint are kept at {}: see them with 'git log {}..{}'",
            aborted.branch,
            aborted.tip_ref,
            checkpoint.to_hex_with_len(10),
            aborted.tip_ref,
        ));
    }
}

/// What became of a run whose loop ended on its own.
pub fn after_loop(after: &AfterLoop) {
    match after {
        AfterLoop::Finished(done) => finished(done),
        // Stdout may carry the run's JSON lines.
        AfterLoop::HandedOff(done) => handed_off(done, false),
        AfterLoop::Aborted(done) => aborted(done),
        AfterLoop::LeftStopped(left) => left_stopped(left),
    }
}

/// The ways on from a run left stopped.
fn left_stopped(left: &LeftStopped) {
    let LeftStopped {
        change,
        branch,
        original,
        ..
    } = left;
    let mut text = match &left.worktree {
        None => format!(
            "the run stays on {branch}. Finish it with:\n  git ralph finish {change} --cleanup   # back to {original}, all work uncommitted\n  git ralph finish {change} --keep      # stay on {branch}\n  git ralph abort {change}              # back to exactly where you started"
        ),
        Some(path) => format!(
            "the run stays on {branch}, in its worktree at {}. Finish it with:\n  git ralph finish {change} --cleanup   # its work into your worktree, uncommitted\n  git ralph finish {change} --keep      # {branch} stays, its worktree goes\n  git ralph abort {change}              # {branch} and its worktree go; yours is untouched",
            path.display()
        ),
    };
    if let Some(retries) = left.retries_to_resume {
        text.push_str(&format!(
            "\nor resume it with more retries:\n  git ralph start {change} --max-retries {retries}"
        ));
    } else if !left.completed {
        text.push_str(&format!("\nor resume it:\n  git ralph start {change}"));
    }
    note(&text);
}

/// A lock file a killed loop left, moved aside.
pub fn left_lock(was: &std::path::Path, kept_at: &std::path::Path) -> String {
    format!(
        "a loop that is no longer running left {}, which no process holds: it is moved aside to {}",
        was.display(),
        kept_at.display()
    )
}

/// The commits a killed loop made past its record, kept at `refname`, and
/// the user's `carried` commits after the kill, in words.
fn unrecorded(refname: &str, checkpoint: &str, carried: usize) -> String {
    let kept = format!(
        "the killed loop had committed past the last checkpoint its record holds: those commits are kept at {refname} (see them with 'git log {checkpoint}..{refname}')"
    );
    match carried {
        0 => format!("{kept}, and the branch is back at {checkpoint}"),
        1 => format!(
            "{kept}; the branch is back at {checkpoint} with the commit made after the kill carried onto it"
        ),
        n => format!(
            "{kept}; the branch is back at {checkpoint} with the {n} commits made after the kill carried onto it"
        ),
    }
}
