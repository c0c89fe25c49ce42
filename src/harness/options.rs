//! What the app chooses for a session's harness: the model, how hard it
//! works (effort), and instructions added to its system prompt. One
//! vocabulary in the API; each adapter says it in its CLI's own words
//! (claude: `--model`, `--effort`, `--append-system-prompt`; codex:
//! `thread/start`'s `model` and `developerInstructions`, `turn/start`'s
//! `effort`). The checks here are the API's: what no CLI could be given
//! is refused before a session exists.

pub use room_machines::session::Effort;

/// The longest model name, in characters.
pub const MODEL_MAX: usize = 128;

/// The longest instructions, in characters: at most 64 KiB in UTF-8, so
/// they fit one argument of claude's command line (128 KiB), and a limit
/// the OpenAPI schema can state exactly.
pub const INSTRUCTIONS_MAX: usize = 16 << 10;

/// A session's options, as its start holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options<'a> {
    /// The model the CLI runs, in its own naming.
    pub model: Option<&'a str>,
    /// How hard it works.
    pub effort: Option<Effort>,
    /// Text added to its system prompt.
    pub instructions: Option<&'a str>,
}

/// A model name any CLI can be given as one argument: 1 to [`MODEL_MAX`]
/// characters of letters, digits and `. _ : / @ -`, not starting with `-`
/// (it would be read as an option).
pub fn check_model(model: &str) -> Result<(), String> {
    let shape = (1..=MODEL_MAX).contains(&model.chars().count())
        && !model.starts_with('-')
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/@-".contains(c));
    if shape {
        Ok(())
    } else {
        Err(format!(
            "model must be 1 to {MODEL_MAX} characters of letters, digits and . _ : / @ -, not starting with -."
        ))
    }
}

/// Instructions a CLI can take: some text, at most [`INSTRUCTIONS_MAX`]
/// characters, no NUL byte (a C string ends at one).
pub fn check_instructions(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("instructions must not be empty or only whitespace.".into());
    }
    let chars = text.chars().count();
    if chars > INSTRUCTIONS_MAX {
        return Err(format!(
            "instructions must be at most {INSTRUCTIONS_MAX} characters; these have {chars}."
        ));
    }
    if text.contains('\0') {
        return Err("instructions must not contain a NUL byte (\\u0000).".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_are_one_argument_and_never_an_option() {
        for ok in [
            "claude-haiku-4-5",
            "opus",
            "gpt-5.1-codex",
            "anthropic/claude:latest@2025",
            &"m".repeat(MODEL_MAX),
        ] {
            assert_eq!(check_model(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "-p",
            "--model",
            "has space",
            "semi;colon",
            "ünïcode",
            &"m".repeat(MODEL_MAX + 1),
        ] {
            assert_eq!(
                check_model(bad),
                Err("model must be 1 to 128 characters of letters, digits and . _ : / @ -, not starting with -.".into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn instructions_are_text_within_the_cap() {
        assert_eq!(check_instructions("Answer in French."), Ok(()));
        // Characters, not bytes: the widest fit 64 KiB.
        assert_eq!(check_instructions(&"😀".repeat(INSTRUCTIONS_MAX)), Ok(()));
        assert_eq!("😀".repeat(INSTRUCTIONS_MAX).len(), 64 << 10);
        assert_eq!(
            check_instructions(&"x".repeat(INSTRUCTIONS_MAX + 1)),
            Err("instructions must be at most 16384 characters; these have 16385.".into())
        );
        assert_eq!(
            check_instructions(" \n"),
            Err("instructions must not be empty or only whitespace.".into())
        );
        assert_eq!(
            check_instructions("a\0b"),
            Err("instructions must not contain a NUL byte (\\u0000).".into())
        );
    }
}
