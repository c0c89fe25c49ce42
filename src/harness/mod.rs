//! claude and codex adapters: argv, native ID, turn output.
