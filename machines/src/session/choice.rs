//! The model a turn runs and how hard it works: what the start chose for
//! every turn, and what a message may change from its own turn on.
//!
//! A message's choice is kept on its prompt until its turn starts; from
//! then on the record holds it as the session's choice in force (the
//! start's, where no message changed it). A lingering process that
//! cannot take a change in place (claude's effort is fixed when its
//! process starts) ends, and the turn runs in a new one.

use serde::{Deserialize, Serialize};

/// How hard the model works on a turn, in the API's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// codex's least reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high.
    Xhigh,
    /// claude's most.
    Max,
}

/// Every effort, in the API's order.
pub const EFFORTS: [Effort; 6] = [
    Effort::Minimal,
    Effort::Low,
    Effort::Medium,
    Effort::High,
    Effort::Xhigh,
    Effort::Max,
];

impl Effort {
    /// The wire name, the same in both CLIs.
    pub fn name(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }
}

impl<'de> Deserialize<'de> for Effort {
    /// By its wire name; anything else is refused with the names it may
    /// have (serde's own message would not name the field).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        EFFORTS
            .into_iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "effort must be minimal, low, medium, high, xhigh or max, not {name:?}"
                ))
            })
    }
}

/// A model and an effort, each where chosen.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    /// The model, in its CLI's naming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How hard it works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
}

impl ModelChoice {
    /// Whether it chooses nothing.
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.effort.is_none()
    }

    /// `self`, with what `newer` chooses in place of its own.
    pub fn with(&self, newer: &ModelChoice) -> ModelChoice {
        ModelChoice {
            model: newer.model.clone().or_else(|| self.model.clone()),
            effort: newer.effort.or(self.effort),
        }
    }

    /// What of `newer` differs from `self`: what a process running
    /// `self` must be told to run `newer`.
    pub fn changes_to(&self, newer: &ModelChoice) -> ModelChoice {
        ModelChoice {
            model: newer
                .model
                .clone()
                .filter(|m| self.model.as_ref() != Some(m)),
            effort: newer.effort.filter(|e| self.effort != Some(*e)),
        }
    }
}

impl std::fmt::Debug for ModelChoice {
    /// Only what is chosen, so effects and tables that carry an empty
    /// choice stay short.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ModelChoice");
        if let Some(model) = &self.model {
            d.field("model", model);
        }
        if let Some(effort) = &self.effort {
            d.field("effort", effort);
        }
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efforts_read_and_write_their_wire_names() {
        // The wire names are serde's both ways and the ones the refusals use.
        for e in EFFORTS {
            assert_eq!(serde_json::to_value(e).unwrap(), e.name());
            assert_eq!(
                serde_json::from_value::<Effort>(e.name().into()).unwrap(),
                e
            );
        }
        let refused = serde_json::from_value::<Effort>("extreme".into()).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "effort must be minimal, low, medium, high, xhigh or max, not \"extreme\""
        );
    }

    #[test]
    fn a_newer_choice_wins_where_it_chooses_and_changes_only_what_differs() {
        let start = ModelChoice {
            model: Some("a".into()),
            effort: Some(Effort::Low),
        };
        let newer = ModelChoice {
            model: None,
            effort: Some(Effort::High),
        };
        let now = start.with(&newer);
        assert_eq!(now.model.as_deref(), Some("a"));
        assert_eq!(now.effort, Some(Effort::High));
        assert_eq!(start.changes_to(&now), newer);
        assert!(now.changes_to(&now).is_empty());
    }
}
