//! The four verification methods a contract (or a role) can name, and the
//! stages of the multi-stage one.

use serde::{Deserialize, Serialize};

/// A verification method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum Method {
    /// The promise token in the agent's final message.
    StringMatch {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// A command's exit code and output.
    External {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        success_exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_contains: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_not_contains: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        working_dir: Option<String>,
    },
    /// Negative patterns on the attempt's diff, then a verifier agent.
    Semantic {
        #[serde(default, alias = "check_for")]
        criteria: Vec<String>,
        #[serde(default)]
        negative_patterns: Vec<String>,
        /// An agent preset to verify with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// Or any command, prompt on stdin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        /// The verifier agent's model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
    /// Ordered stages.
    MultiStage {
        stages: Vec<Stage>,
        #[serde(default = "yes")]
        require_all: bool,
    },
}

/// One stage of a multi-stage verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    #[serde(flatten)]
    pub method: Method,
    /// A failing optional stage only warns.
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

impl Method {
    pub fn name(&self) -> &'static str {
        match self {
            Method::StringMatch { .. } => "string_match",
            Method::External { .. } => "external",
            Method::Semantic { .. } => "semantic",
            Method::MultiStage { .. } => "multi_stage",
        }
    }
}
