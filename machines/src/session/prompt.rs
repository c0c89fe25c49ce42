//! An accepted prompt and its text.

use serde::{Deserialize, Serialize};

use super::attachment::Attachment;
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
    /// The images it carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

/// A message as the app sent it: its text, what it chose for its turn and
/// the turns after it, and the images it carries. Written as its text
/// alone when it has nothing else, as every message was before, so
/// recorded timelines replay either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPrompt {
    /// What the app sent.
    pub text: String,
    /// The model and effort it chose.
    pub choice: ModelChoice,
    /// The images it carries.
    pub attachments: Vec<Attachment>,
}

impl NewPrompt {
    /// A message of text alone.
    pub fn text(text: String) -> NewPrompt {
        NewPrompt {
            text,
            choice: ModelChoice::default(),
            attachments: Vec::new(),
        }
    }
}

impl From<String> for NewPrompt {
    fn from(text: String) -> NewPrompt {
        NewPrompt::text(text)
    }
}

impl From<&str> for NewPrompt {
    fn from(text: &str) -> NewPrompt {
        NewPrompt::text(text.into())
    }
}

/// [`NewPrompt`] as JSON: a string, or its text beside its choice.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum NewPromptJson {
    Text(String),
    Full {
        text: String,
        #[serde(flatten)]
        choice: ModelChoice,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
}

impl Serialize for NewPrompt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.choice.is_empty() && self.attachments.is_empty() {
            true => NewPromptJson::Text(self.text.clone()),
            false => NewPromptJson::Full {
                text: self.text.clone(),
                choice: self.choice.clone(),
                attachments: self.attachments.clone(),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for NewPrompt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NewPrompt, D::Error> {
        Ok(match NewPromptJson::deserialize(d)? {
            NewPromptJson::Text(text) => NewPrompt::text(text),
            NewPromptJson::Full {
                text,
                choice,
                attachments,
            } => NewPrompt {
                text,
                choice,
                attachments,
            },
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
