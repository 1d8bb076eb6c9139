//! The judge, gate by gate and in order, on evidence built by hand.

use super::*;
use crate::contract::{Contract, Method};
use crate::run::mode::{Failed, Standard};

/// A claim every gate accepts, with all its evidence gathered.
fn claim() -> Evidence {
    Evidence {
        story_id: "1".into(),
        agent: AgentEnding {
            exit: ExitStatusKind::Exited(0),
            conclusion: Conclusion::Complete,
            question: None,
            other_promise: None,
            timeout: Duration::from_secs(60),
            idle: Some(Duration::from_secs(900)),
        },
        tracking_file: "tasks.md".into(),
        marked: Marked::Done,
        changes: Changes::default(),
        verification: Some(Verification::Pass {
            warnings: Vec::new(),
        }),
        checks: Some(vec![check("test", true)]),
    }
}

/// The loop's rules with the default contract: a promise, no verifier.
fn loop_rules() -> Rules {
    Rules {
        story: Contract::default().rules_for("1", &[]),
        require_change: false,
        standard: Standard::Story {
            questions: false,
            failed: Failed::Reverted,
        },
    }
}

fn single_pass() -> Rules {
    Rules {
        standard: Standard::SinglePass,
        ..loop_rules()
    }
}

fn prompt_mode() -> Rules {
    Rules {
        standard: Standard::Story {
            questions: false,
            failed: Failed::BuiltOn,
        },
        ..loop_rules()
    }
}

fn check(name: &str, passed: bool) -> CheckOutcome {
    CheckOutcome {
        name: name.into(),
        passed,
        exit_code: Some(if passed { 0 } else { 1 }),
        timed_out: false,
        why: (!passed).then(|| "exit 1".into()),
        output_tail: format!("{name} said so"),
        stopped: false,
    }
}

fn ended(exit: ExitStatusKind, conclusion: Conclusion) -> Evidence {
    let mut evidence = claim();
    evidence.agent.exit = exit;
    evidence.agent.conclusion = conclusion;
    evidence
}

fn silent() -> Evidence {
    ended(ExitStatusKind::Exited(0), Conclusion::NoSignal)
}

fn asked() -> Evidence {
    let mut evidence = silent();
    evidence.agent.question = Some("Shall I go on?".into());
    evidence
}

fn verdict(evidence: &Evidence, rules: &Rules) -> Verdict {
    match judge(evidence, rules) {
        Judgement::Verdict(verdict) => verdict,
        Judgement::Needs(need) => panic!("the judge still needs {need:?}"),
    }
}

/// The outcome and reason of a verdict that is not an acceptance.
fn failure(verdict: &Verdict) -> (AttemptOutcome, &str) {
    let failure = verdict.failure().expect("a failure");
    (failure.outcome, failure.reason.as_str())
}

fn rejected(reason: &str) -> Verdict {
    Verdict::Failed(Failure::rejected(reason))
}

/// A claim whose changes carry `flag` and break the contract with `violation`.
fn changed(flag: Option<Flag>, violation: Option<&str>) -> Evidence {
    Evidence {
        changes: Changes {
            flag,
            violation: violation.map(Into::into),
            ..Changes::default()
        },
        ..claim()
    }
}

/// `rules` with the run's --require-change on.
fn requiring_a_change(rules: Rules) -> Rules {
    Rules {
        require_change: true,
        ..rules
    }
}

#[test]
fn the_first_gate_that_fails_decides() {
    // Every gate fails; repaired one by one in order, each next gate names
    // the reason.
    let mut evidence = ended(
        ExitStatusKind::Exited(1),
        Conclusion::AgentError {
            message: "crashed".into(),
        },
    );
    evidence.marked = Marked::NotDone;
    evidence.changes = Changes {
        flag: Some(Flag::TickOnly),
        violation: Some("the attempt edited the contract file ralph.toml".into()),
        ..Changes::default()
    };
    evidence.verification = Some(Verification::Fail {
        stage: "external".into(),
        reason: "exit 2".into(),
        output_tail: None,
        warnings: Vec::new(),
    });
    evidence.checks = Some(vec![check("test", false)]);
    let rules = requiring_a_change(loop_rules());
    let mut reasons = Vec::new();
    let repairs: [fn(&mut Evidence); 6] = [
        |e| e.agent.conclusion = Conclusion::Complete,
        |e| e.marked = Marked::Done,
        |e| e.changes.violation = None,
        |e| e.changes.flag = None,
        |e| {
            e.verification = Some(Verification::Pass {
                warnings: Vec::new(),
            })
        },
        |e| e.checks = Some(Vec::new()),
    ];
    for repair in repairs {
        reasons.push(failure(&verdict(&evidence, &rules)).1.to_owned());
        repair(&mut evidence);
    }
    assert_eq!(
        reasons,
        [
            "the agent failed: crashed",
            "story 1 is not marked done in tasks.md",
            "the attempt edited the contract file ralph.toml",
            "no change besides ticking boxes in tasks.md",
            "verification failed at external: exit 2",
            "checks failed: test (exit 1)",
        ]
    );
    assert_eq!(verdict(&evidence, &rules), Verdict::Accepted { flag: None });
}

#[test]
fn verification_and_checks_are_asked_for_only_after_the_gates_before_them() {
    let rules = loop_rules();
    let mut evidence = claim();
    evidence.verification = None;
    evidence.checks = None;
    assert_eq!(
        judge(&evidence, &rules),
        Judgement::Needs(Need::Verification)
    );

    // A gate before verification fails: nothing expensive is asked for.
    for cheap_failure in [
        ended(ExitStatusKind::Stopped, Conclusion::NoSignal),
        silent(),
        Evidence {
            marked: Marked::NotDone,
            ..claim()
        },
        changed(None, Some("protected")),
    ] {
        let evidence = Evidence {
            verification: None,
            checks: None,
            ..cheap_failure
        };
        assert!(
            matches!(judge(&evidence, &rules), Judgement::Verdict(_)),
            "{:?}",
            judge(&evidence, &rules)
        );
    }

    // Verification passed: the checks are next.
    evidence.verification = claim().verification;
    assert_eq!(judge(&evidence, &rules), Judgement::Needs(Need::Checks));
    // Verification failed: the checks never run.
    evidence.verification = Some(Verification::Fail {
        stage: "string_match".into(),
        reason: "no promise".into(),
        output_tail: None,
        warnings: Vec::new(),
    });
    assert!(matches!(
        judge(&evidence, &rules),
        Judgement::Verdict(Verdict::Failed(_))
    ));
    // Once both are in, there is a verdict.
    evidence.verification = claim().verification;
    evidence.checks = Some(Vec::new());
    assert_eq!(
        judge(&evidence, &rules),
        Judgement::Verdict(Verdict::Accepted { flag: None })
    );
}

#[test]
fn endings_that_are_never_a_completion() {
    let mut timed_out = ended(ExitStatusKind::TimedOut, Conclusion::Complete);
    timed_out.agent.timeout = Duration::from_secs(90);
    let cases = [
        (
            ended(ExitStatusKind::Stopped, Conclusion::Complete),
            AttemptOutcome::Interrupted,
            "stopped by the user",
        ),
        (
            timed_out,
            AttemptOutcome::TimedOut,
            "the agent ran past its time limit (90s) and was stopped",
        ),
        (
            ended(ExitStatusKind::Idle, Conclusion::Complete),
            AttemptOutcome::TimedOut,
            "idle for 15m: the agent printed nothing for that long and was stopped",
        ),
        (
            ended(
                ExitStatusKind::Exited(0),
                Conclusion::Failed {
                    reason: "the API is gone".into(),
                },
            ),
            AttemptOutcome::Failed,
            "the API is gone",
        ),
        (
            ended(
                ExitStatusKind::Signaled(9),
                Conclusion::AgentError {
                    message: "killed".into(),
                },
            ),
            AttemptOutcome::AgentError,
            "the agent failed: killed",
        ),
    ];
    for (evidence, outcome, reason) in cases {
        let verdict = verdict(&evidence, &loop_rules());
        assert!(matches!(verdict, Verdict::Failed(_)), "{verdict:?}");
        assert_eq!(failure(&verdict), (outcome, reason));
    }
}

#[test]
fn silence_fails_only_when_the_contract_relies_on_the_promise() {
    let promise_needed = loop_rules();
    let no_promise = Rules {
        story: StoryRules {
            promise: None,
            ..loop_rules().story
        },
        ..loop_rules()
    };
    let verifier = Rules {
        story: StoryRules {
            verify: Some(Method::StringMatch { token: None }),
            ..loop_rules().story
        },
        ..loop_rules()
    };
    assert_eq!(
        verdict(&silent(), &promise_needed),
        Verdict::Failed(Failure::new(
            AttemptOutcome::NoSignal,
            "the agent ended without a promise"
        ))
    );
    assert_eq!(
        verdict(&asked(), &promise_needed),
        Verdict::Failed(Failure::new(
            AttemptOutcome::NoSignal,
            "the agent asked instead of working: Shall I go on?"
        ))
    );
    for rules in [no_promise, verifier] {
        for evidence in [silent(), asked()] {
            assert_eq!(verdict(&evidence, &rules), Verdict::Accepted { flag: None });
        }
    }
}

#[test]
fn a_question_parks_the_story_when_questions_reach_a_person() {
    let questions = Rules {
        standard: Standard::Story {
            questions: true,
            failed: Failed::Reverted,
        },
        ..loop_rules()
    };
    assert_eq!(
        verdict(&asked(), &questions),
        Verdict::Failed(Failure::new(
            AttemptOutcome::Question,
            "the agent asked a question: Shall I go on?"
        ))
    );
    // Silence is still silence.
    assert_eq!(
        failure(&verdict(&silent(), &questions)).0,
        AttemptOutcome::NoSignal
    );
}

#[test]
fn the_story_must_be_marked_done_in_its_file() {
    // How the story reads after the attempt → verdict
    let cases = [
        (
            Marked::Unreadable("line 3 is not valid".into()),
            rejected("tasks.md could not be read after the attempt: line 3 is not valid"),
        ),
        (
            Marked::NotDone,
            rejected("story 1 is not marked done in tasks.md"),
        ),
        (Marked::Untracked, Verdict::Accepted { flag: None }),
    ];
    for (marked, expected) in cases {
        let evidence = Evidence {
            marked: marked.clone(),
            ..claim()
        };
        assert_eq!(verdict(&evidence, &loop_rules()), expected, "{marked:?}");
    }
}

#[test]
fn a_protected_path_refuses_the_claim() {
    let evidence = changed(
        None,
        Some("the attempt changed ci.yml, which the contract protects"),
    );
    assert_eq!(
        verdict(&evidence, &loop_rules()),
        rejected("the attempt changed ci.yml, which the contract protects")
    );
}

#[test]
fn a_tick_only_claim_is_refused_only_when_a_change_is_required() {
    let tick_only = changed(Some(Flag::TickOnly), None);
    let refused = rejected("no change besides ticking boxes in tasks.md");
    let flagged = Verdict::Accepted {
        flag: Some(Flag::TickOnly),
    };
    // (the run's --require-change, the story's contract) → verdict
    let cases = [
        (false, None, &flagged),
        (true, None, &refused),
        (true, Some(false), &flagged),
        (false, Some(true), &refused),
    ];
    for (run, story, expected) in cases {
        let rules = Rules {
            require_change: run,
            story: StoryRules {
                require_change: story,
                ..loop_rules().story
            },
            ..loop_rules()
        };
        assert_eq!(&verdict(&tick_only, &rules), expected, "{run} {story:?}");
    }
    // Changing nothing at all is flagged, never refused.
    let nothing = changed(Some(Flag::NoChange), None);
    assert_eq!(
        verdict(&nothing, &requiring_a_change(loop_rules())),
        Verdict::Accepted {
            flag: Some(Flag::NoChange)
        }
    );
}

#[test]
fn a_failed_verification_names_its_stage_and_output() {
    let evidence = Evidence {
        verification: Some(Verification::Fail {
            stage: "stage 2 (external)".into(),
            reason: "exit code 1".into(),
            output_tail: Some("1 test failed".into()),
            warnings: vec!["ignored".into()],
        }),
        ..claim()
    };
    assert_eq!(
        verdict(&evidence, &loop_rules()),
        Verdict::Failed(Failure {
            outcome: AttemptOutcome::Rejected,
            reason: "verification failed at stage 2 (external): exit code 1".into(),
            checks: vec![("stage 2 (external)".into(), "1 test failed".into())],
        })
    );
}

#[test]
fn failed_checks_are_named_all_at_once() {
    let evidence = Evidence {
        checks: Some(vec![
            check("lint", false),
            check("build", true),
            check("test", false),
        ]),
        ..claim()
    };
    assert_eq!(
        verdict(&evidence, &loop_rules()),
        Verdict::Failed(Failure {
            outcome: AttemptOutcome::Rejected,
            reason: "checks failed: lint (exit 1), test (exit 1)".into(),
            checks: vec![
                ("lint".into(), "lint said so".into()),
                ("test".into(), "test said so".into()),
            ],
        })
    );
    assert_eq!(failed_checks(&[check("lint", true)]), None);
    assert_eq!(failed_checks(&[]), None);
}

#[test]
fn an_accepted_claim_carries_its_flag() {
    for flag in [None, Some(Flag::TickOnly), Some(Flag::NoChange)] {
        assert_eq!(
            verdict(&changed(flag, None), &loop_rules()),
            Verdict::Accepted { flag }
        );
    }
}

#[test]
fn a_single_pass_names_what_happened_and_keeps_the_work() {
    let rules = single_pass();
    let kept = |outcome, reason: &str| Verdict::KeptDespite(Failure::new(outcome, reason));
    // Silence fails even when the contract does not rely on the promise.
    let no_promise = Rules {
        story: StoryRules {
            promise: None,
            ..single_pass().story
        },
        ..single_pass()
    };
    assert_eq!(
        verdict(&silent(), &no_promise),
        kept(
            AttemptOutcome::NoSignal,
            "the agent ended without a promise"
        )
    );
    assert_eq!(
        verdict(&asked(), &rules),
        kept(
            AttemptOutcome::NoSignal,
            "the agent asked instead of working: Shall I go on?"
        )
    );
    assert_eq!(
        verdict(
            &ended(ExitStatusKind::Stopped, Conclusion::Complete),
            &rules
        ),
        kept(AttemptOutcome::Interrupted, "stopped by the user")
    );
    // An unmarked story merely failed; nothing was refused.
    let unmarked = Evidence {
        marked: Marked::NotDone,
        ..claim()
    };
    assert_eq!(
        verdict(&unmarked, &rules),
        kept(
            AttemptOutcome::Failed,
            "story 1 is not marked done in tasks.md"
        )
    );
    // Nothing else is intercepted, and nothing expensive is asked for.
    let unguarded = Evidence {
        verification: None,
        checks: None,
        ..changed(Some(Flag::TickOnly), Some("protected"))
    };
    assert_eq!(
        verdict(&unguarded, &requiring_a_change(single_pass())),
        Verdict::Accepted {
            flag: Some(Flag::TickOnly)
        }
    );
}

#[test]
fn prompt_mode_builds_on_a_failed_iteration_but_not_on_a_stop() {
    let rules = prompt_mode();
    let refused = Evidence {
        checks: Some(vec![check("test", false)]),
        ..claim()
    };
    let verdict_refused = verdict(&refused, &rules);
    assert!(
        matches!(verdict_refused, Verdict::KeptDespite(_)),
        "{verdict_refused:?}"
    );
    assert_eq!(
        failure(&verdict_refused),
        (AttemptOutcome::Rejected, "checks failed: test (exit 1)")
    );
    assert_eq!(
        verdict(&silent(), &rules),
        Verdict::KeptDespite(Failure::new(
            AttemptOutcome::NoSignal,
            "the agent ended without a promise"
        ))
    );
    assert_eq!(
        verdict(
            &ended(ExitStatusKind::Stopped, Conclusion::NoSignal),
            &rules
        ),
        Verdict::Failed(Failure::new(
            AttemptOutcome::Interrupted,
            "stopped by the user"
        ))
    );
    let revert_failed = Rules {
        standard: Standard::Story {
            questions: false,
            failed: Failed::Reverted,
        },
        ..prompt_mode()
    };
    assert!(matches!(
        verdict(&refused, &revert_failed),
        Verdict::Failed(_)
    ));
}

#[test]
fn an_interrupted_attempt_in_the_loop_is_set_aside() {
    let stopped = ended(ExitStatusKind::Stopped, Conclusion::Complete);
    assert_eq!(
        verdict(&stopped, &loop_rules()),
        Verdict::Failed(Failure::new(
            AttemptOutcome::Interrupted,
            "stopped by the user"
        ))
    );
}

#[test]
fn a_check_stopped_by_the_user_interrupts_the_attempt_in_every_mode_but_a_single_pass() {
    let stopped = CheckOutcome {
        stopped: true,
        ..check("test", false)
    };
    let evidence = Evidence {
        checks: Some(vec![check("lint", true), stopped]),
        ..claim()
    };
    for rules in [loop_rules(), prompt_mode()] {
        let Verdict::Failed(failure) = verdict(&evidence, &rules) else {
            panic!("a stopped check is never a completion");
        };
        assert_eq!(failure.outcome, AttemptOutcome::Interrupted);
        assert_eq!(failure.reason, "stopped by the user while check test ran");
    }
}

#[path = "judge_guard_tests.rs"]
mod guards;
