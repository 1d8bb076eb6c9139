//! `--push-each`: after each checkpoint the run's branch goes to the
//! remote with its record and refs, so that a machine that dies (a CI job
//! at its time limit, a closed laptop) leaves a run another can take up
//! with `start --from`. A push that fails is a warning: the run goes on
//! here, and the next checkpoint pushes again.

use super::context::Run;

pub(super) async fn push_checkpoint(run: &mut Run) {
    if !run.state.settings().push_each {
        return;
    }
    let change = run.settings.change().clone();
    let run_dir = run.run_dir.clone();
    let original = run.state.original().head.clone();
    let branch = change.branch_short();
    let pushed = run
        .with_repo(move |repo| {
            crate::run::ending::handoff::push_run(repo, &change, &run_dir, &original)
        })
        .await;
    if let Err(err) = pushed {
        run.warn(format!(
            "could not push {branch} with the run's record: {err}; the run goes on here"
        ));
    }
}
