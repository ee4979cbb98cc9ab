//! The task workflow of board.yaml: states, named transitions, which states are
//! claimable, terminal and successful.

use indexmap::IndexMap;
use serde::Deserialize;

/// `from:` of a transition: a list of states, or `"*"` for every non-terminal state.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum FromStates {
    Any(String),
    List(Vec<String>),
}

/// Who may run a transition on a claimed task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// Only the claimant (others need --force, which is logged).
    #[default]
    Claimant,
    /// Anyone, e.g. a reviewer approving someone else's work (the claimant too: a board
    /// that allows self-review says so on `approve`).
    Any,
    /// Anyone but the claimant and whoever moved the task into the state it leaves (its
    /// submitter): review means someone else. A human's `--force` overrides, logged.
    Reviewer,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Transition {
    pub from: FromStates,
    pub to: String,
    #[serde(default)]
    pub by: By,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Workflow {
    pub initial: String,
    pub claimable: Vec<String>,
    pub terminal: Vec<String>,
    pub success: Vec<String>,
    pub states: Vec<String>,
    pub transitions: IndexMap<String, Transition>,
}

/// The name of the transition that `tavern claim` runs.
pub const CLAIM: &str = "claim";

impl Workflow {
    /// Problems with the workflow itself, for `tavern check` and for loading board.yaml.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let known = |s: &str| self.states.iter().any(|k| k == s);
        if !known(&self.initial) {
            out.push(format!(
                "workflow.initial '{}' is not in workflow.states",
                self.initial
            ));
        }
        for (what, list) in [
            ("claimable", &self.claimable),
            ("terminal", &self.terminal),
            ("success", &self.success),
        ] {
            for s in list {
                if !known(s) {
                    out.push(format!(
                        "workflow.{what} names '{s}', which is not in workflow.states"
                    ));
                }
            }
        }
        for (name, t) in &self.transitions {
            if !known(&t.to) {
                out.push(format!(
                    "transition '{name}' leads to '{}', which is not in workflow.states",
                    t.to
                ));
            }
            match &t.from {
                FromStates::Any(s) if s != "*" => out.push(format!(
                    "transition '{name}': from must be a list of states or \"*\", not '{s}'"
                )),
                FromStates::List(list) => {
                    for s in list {
                        if !known(s) {
                            out.push(format!("transition '{name}' starts from '{s}', which is not in workflow.states"));
                        }
                    }
                }
                FromStates::Any(_) => {}
            }
        }
        if !self.transitions.contains_key(CLAIM) {
            out.push(format!(
                "workflow has no '{CLAIM}' transition, so no task can be claimed"
            ));
        }
        out
    }

    pub fn is_state(&self, s: &str) -> bool {
        self.states.iter().any(|k| k == s)
    }

    pub fn is_terminal(&self, s: &str) -> bool {
        self.terminal.iter().any(|k| k == s)
    }

    pub fn is_success(&self, s: &str) -> bool {
        self.success.iter().any(|k| k == s)
    }

    pub fn is_claimable(&self, s: &str) -> bool {
        self.claimable.iter().any(|k| k == s)
    }

    pub fn transition(&self, name: &str) -> Option<&Transition> {
        self.transitions.get(name)
    }

    /// Can transition `t` start from `state`?
    pub fn allows_from(&self, t: &Transition, state: &str) -> bool {
        match &t.from {
            FromStates::Any(_) => !self.is_terminal(state),
            FromStates::List(list) => list.iter().any(|s| s == state),
        }
    }

    /// The transitions that may start from `state`, in board.yaml order.
    pub fn allowed_from(&self, state: &str) -> Vec<&str> {
        self.transitions
            .iter()
            .filter(|(_, t)| self.allows_from(t, state))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The first transition (in board.yaml order) from `state` to `target`, for `move`.
    pub fn transition_to(&self, state: &str, target: &str) -> Option<&str> {
        self.transitions
            .iter()
            .find(|(_, t)| t.to == target && self.allows_from(t, state))
            .map(|(n, _)| n.as_str())
    }
}
