use super::*;

#[test]
fn a_full_contract_parses_and_merges_per_story() {
    let text = r#"
promise = "AUTH_IMPLEMENTED"
protected = ["tests/**"]
max_cost = 2.5
[[check]]
name = "unit"
command = "true"
[verify]
method = "multi_stage"
[[verify.stages]]
method = "external"
command = "true"
[[verify.stages]]
method = "semantic"
required = false
negative_patterns = ["TODO"]
[story."2"]
acceptance_criteria = ["says bye"]
max_tokens = 10
[[story."2".check]]
command = "test -s bye.txt"
"#;
    let contract = Contract::parse(Path::new("ralph.toml"), text).unwrap();
    let rules = contract.rules_for("2", &["from prd".into()]);
    assert_eq!(rules.promise.as_deref(), Some("AUTH_IMPLEMENTED"));
    assert_eq!(rules.checks.len(), 2);
    assert_eq!(rules.acceptance_criteria, vec!["from prd", "says bye"]);
    assert_eq!(rules.max_tokens, Some(10));
    let Some(Method::MultiStage {
        stages,
        require_all,
    }) = &rules.verify
    else {
        panic!("multi_stage expected");
    };
    assert!(require_all);
    assert!(stages[0].required && !stages[1].required);
    assert_eq!(contract.rules_for("1", &[]).checks.len(), 1);
}

#[test]
fn errors_name_the_line_the_key_and_the_expected_type() {
    let err = Contract::parse(
        Path::new("ralph.toml"),
        "max_cost = 1.0\n[[check]]\ncommand = \"x\"\ntimeout = \"soon\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("line 4"), "{err}");
    assert!(
        err.contains("timeout") || err.contains("u64") || err.contains("integer"),
        "{err}"
    );
    let err = Contract::parse(Path::new("ralph.toml"), "promis = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("promis"), "{err}");
}

#[test]
fn promise_none_turns_string_matching_off() {
    let contract = Contract {
        promise: Some("none".into()),
        ..Contract::default()
    };
    assert_eq!(contract.rules_for("1", &[]).promise, None);
    assert_eq!(
        Contract::default().rules_for("1", &[]).promise.as_deref(),
        Some("COMPLETE")
    );
}

#[test]
fn protected_paths_and_contract_files_are_violations() {
    let contract = Contract {
        protected: vec!["tests/**".into(), "Cargo.lock".into(), "spec/".into()],
        files: vec!["ralph.toml".into()],
        ..Contract::default()
    };
    let rules = contract.rules_for("1", &[]);
    assert!(contract.violation(&rules, &["src/a.rs".into()]).is_none());
    assert!(
        contract
            .violation(&rules, &["tests/unit/a.rs".into()])
            .is_some()
    );
    assert!(contract.violation(&rules, &["Cargo.lock".into()]).is_some());
    assert!(contract.violation(&rules, &["spec/x.md".into()]).is_some());
    let why = contract.violation(&rules, &["ralph.toml".into()]).unwrap();
    assert!(why.contains("contract file"), "{why}");
}

#[test]
fn stories_table_is_read_joined_and_strict() {
    let dir = tempfile::tempdir().unwrap();
    let change = dir.path().join("openspec/changes/x");
    std::fs::create_dir_all(&change).unwrap();
    std::fs::write(
        dir.path().join("ralph.toml"),
        "[stories]\nskip = [\"Rollout\"]\n",
    )
    .unwrap();
    std::fs::write(
        change.join("ralph.toml"),
        "[stories]\nkeep = [\"Optional\"]\n",
    )
    .unwrap();
    let settings = stories_settings(dir.path(), Some(&change)).unwrap();
    assert_eq!(settings.skip, ["Rollout"]);
    assert_eq!(settings.keep, ["Optional"]);
    let contract = Contract::assemble(dir.path(), Some(&change), &[], &[], None).unwrap();
    assert_eq!(contract.stories, settings);

    for bad in ["[stories]\nskips = [\"x\"]\n", "[stories]\nskip = \"x\"\n"] {
        let err = Contract::parse(Path::new("ralph.toml"), bad).unwrap_err();
        assert!(err.to_string().contains("ralph.toml"), "{err}");
    }
}
