//! An accepted prompt and its text.

use serde::{Deserialize, Serialize};

use super::choice::ModelChoice;
use super::values::PromptId;

/// One accepted prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// Its number.
    pub id: PromptId,
    /// What the app sent.
    pub text: Text,
    /// The model and effort it chose for its turn and the turns after it.
    #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
    pub choice: ModelChoice,
}

/// A message as the app sent it: its text, and what it chose for its turn
/// and the turns after it. Written as its text alone when it chose
/// nothing, as every message was before a message could choose, so
/// recorded timelines replay either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPrompt {
    /// What the app sent.
    pub text: String,
    /// The model and effort it chose.
    pub choice: ModelChoice,
}

/// [`NewPrompt`] as JSON: a string, or its text beside its choice.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum NewPromptJson {
    Text(String),
    Choosing {
        text: String,
        #[serde(flatten)]
        choice: ModelChoice,
    },
}

impl Serialize for NewPrompt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.choice.is_empty() {
            true => NewPromptJson::Text(self.text.clone()),
            false => NewPromptJson::Choosing {
                text: self.text.clone(),
                choice: self.choice.clone(),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for NewPrompt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NewPrompt, D::Error> {
        Ok(match NewPromptJson::deserialize(d)? {
            NewPromptJson::Text(text) => NewPrompt {
                text,
                choice: ModelChoice::default(),
            },
            NewPromptJson::Choosing { text, choice } => NewPrompt { text, choice },
        })
    }
}

/// A prompt's text, shared rather than copied: the runtime snapshots a
/// session before every app command, and a queue of thousands of prompts
/// then costs a count per prompt, not a copy of each text.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Text(std::sync::Arc<str>);

impl Text {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(s.into())
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(s.into())
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        String::deserialize(d).map(Text::from)
    }
}
