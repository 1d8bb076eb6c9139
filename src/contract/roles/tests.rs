use super::*;
use crate::contract::Contract;
use std::path::Path;

fn contract(text: &str) -> Contract {
    Contract::parse(Path::new("ralph.toml"), text).expect("a contract")
}

#[test]
fn the_defaults_of_each_role() {
    let coder = resolve(Role::Coder, None, None, None).unwrap().unwrap();
    assert_eq!(coder.promise, "IMPLEMENTATION_COMPLETE");
    assert_eq!(coder.max_iterations, 15);
    // external with no command: nothing to run, the contract decides.
    assert_eq!(coder.verification, None);
    let reviewer = resolve(Role::Reviewer, None, None, None).unwrap().unwrap();
    assert_eq!(
        (reviewer.promise.as_str(), reviewer.max_iterations),
        ("REVIEW_PASSED", 5)
    );
    let tester = resolve(Role::Tester, None, None, None).unwrap().unwrap();
    assert_eq!(
        (tester.promise.as_str(), tester.max_iterations),
        ("TESTS_PASSED", 10)
    );
    let qa = resolve(Role::Qa, None, None, None).unwrap().unwrap();
    assert_eq!((qa.promise.as_str(), qa.max_iterations), ("QA_PASSED", 5));
}

#[test]
fn a_story_over_the_role_over_the_defaults_and_the_command_line_over_all() {
    let file = contract(
        "[roles]\npipeline = [\"coder\", \"reviewer\"]\n[roles.reviewer]\nagent = \"codex\"\nmax_iterations = 3\npromise = \"OK\"\n\
         [story.\"2\".roles.reviewer]\npromise = \"LGTM\"\n[story.\"3\".roles.reviewer]\nenabled = false\n",
    );
    assert_eq!(file.pipeline(), Some(vec![Role::Coder, Role::Reviewer]));
    let plain = file
        .pipeline_for("1", &[Role::Coder, Role::Reviewer], &BTreeMap::new())
        .unwrap();
    assert_eq!(plain[1].promise, "OK");
    assert_eq!(plain[1].max_iterations, 3);
    assert_eq!(plain[1].agent.as_deref(), Some("codex"));
    let two = file
        .pipeline_for("2", &[Role::Coder, Role::Reviewer], &BTreeMap::new())
        .unwrap();
    assert_eq!(two[1].promise, "LGTM");
    assert_eq!(two[1].max_iterations, 3);
    let three = file
        .pipeline_for("3", &[Role::Coder, Role::Reviewer], &BTreeMap::new())
        .unwrap();
    assert_eq!(
        three.iter().map(|r| r.role).collect::<Vec<_>>(),
        [Role::Coder]
    );
    let cli = BTreeMap::from([(
        Role::Reviewer,
        RoleAgent {
            agent_command: Some("my-reviewer".into()),
            ..RoleAgent::default()
        },
    )]);
    let overridden = file
        .pipeline_for("1", &[Role::Coder, Role::Reviewer], &cli)
        .unwrap();
    assert_eq!(overridden[1].agent, None);
    assert_eq!(overridden[1].agent_command.as_deref(), Some("my-reviewer"));
}

#[test]
fn a_verification_with_something_to_run_is_the_roles_own() {
    let file = contract(
        "[roles.tester.verification]\nmethod = \"external\"\ncommand = \"cargo test\"\n\
         [roles.reviewer]\nverification = \"semantic\"\n\
         [roles.qa.verification]\nmethod = \"semantic\"\ncheck_for = [\"it greets\"]\nagent = \"claude\"\nmodel = \"opus\"\n",
    );
    let pipeline = file
        .pipeline_for("1", &Role::ALL, &BTreeMap::new())
        .unwrap();
    assert!(
        matches!(&pipeline[2].verification, Some(Method::External { command, .. }) if command == "cargo test")
    );
    assert_eq!(
        pipeline[1].verification, None,
        "semantic with nothing to run"
    );
    assert!(matches!(
        &pipeline[3].verification,
        Some(Method::Semantic { criteria, model, .. }) if criteria == &["it greets"] && model.as_deref() == Some("opus")
    ));
}

#[test]
fn a_later_file_refines_the_roles_of_an_earlier_one() {
    let mut root = contract("roles = [\"coder\", \"reviewer\"]\n");
    root.merge(contract("[roles.reviewer]\nmax_iterations = 2\n"));
    assert_eq!(root.pipeline(), Some(vec![Role::Coder, Role::Reviewer]));
    let pipeline = root
        .pipeline_for("1", &[Role::Coder, Role::Reviewer], &BTreeMap::new())
        .unwrap();
    assert_eq!(pipeline[1].max_iterations, 2);
}

#[test]
fn bad_settings_are_named() {
    let file = contract("[roles.reviewer]\nverification = \"vibes\"\n");
    assert_eq!(
        file.pipeline_for("1", &[Role::Reviewer], &BTreeMap::new()),
        Err(RoleError::UnknownMethod {
            role: Role::Reviewer,
            name: "vibes".into()
        })
    );
    assert!(Contract::parse(Path::new("ralph.toml"), "roles = [\"architect\"]\n").is_err());
    assert_eq!("QA".parse::<Role>(), Ok(Role::Qa));
    assert!("boss".parse::<Role>().is_err());
    assert_eq!(
        in_order(&[Role::Qa, Role::Coder, Role::Qa]),
        [Role::Coder, Role::Qa]
    );
}
