//! The settings' parts: how the source and --on-finish are stored, which
//! promise tokens pass, and which layer wins.

use super::*;

#[test]
fn the_source_round_trips_through_state_json_as_its_name() {
    for (source, name) in [
        (None, "\"auto\""),
        (Some(SourceKind::OpenSpec), "\"openspec\""),
        (Some(SourceKind::Prompt), "\"prompt\""),
        (Some(SourceKind::Github), "\"github\""),
        (Some(SourceKind::Beads), "\"beads\""),
    ] {
        #[derive(Serialize, Deserialize)]
        struct Wrap(#[serde(with = "source_setting")] Option<SourceKind>);
        let json = serde_json::to_string(&Wrap(source)).unwrap();
        assert_eq!(json, name);
        let back: Wrap = serde_json::from_str(&json).unwrap();
        assert_eq!(back.0, source);
    }
}

#[test]
fn on_finish_is_stored_by_name() {
    assert_eq!(
        serde_json::to_string(&OnFinish::Cleanup).unwrap(),
        "\"cleanup\""
    );
    assert_eq!(OnFinish::parse("keep"), Some(OnFinish::Keep));
    assert_eq!(OnFinish::parse("later"), None);
}

#[test]
fn promise_tokens_are_words() {
    assert!(validate_promise("AUTH_DONE-2").is_ok());
    assert!(validate_promise("none").is_ok());
    assert!(validate_promise("").is_err());
    assert!(validate_promise("two words").is_err());
}

#[test]
fn a_flag_beats_the_stored_value_which_beats_config() {
    let never = || -> Result<Option<u32>, ConfigError> { panic!("config not needed") };
    assert_eq!(layer(Some(1), Some(2), never, 3).unwrap(), 1);
    assert_eq!(layer(None, Some(2), never, 3).unwrap(), 2);
    assert_eq!(layer(None, None, || Ok(Some(4)), 3).unwrap(), 4);
    assert_eq!(layer(None, None, || Ok(None), 3).unwrap(), 3);
}
