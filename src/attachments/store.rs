//! Where a session's images wait until the prompts that carry them are
//! done: `<state_dir>/sessions/<id>.images/<sha256>`, one file per distinct
//! image (0600, in a 0700 folder), each written whole and fsync'd before
//! the message that brought it is answered, as its prompt's log line is.
//! The record, the prompt log and the journal name an image by its sha256
//! only.

use std::io::Read;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use room_machines::session::Attachment;

use super::check::Checked;
use crate::store::{write_private, DIR_MODE};

/// One session's images.
#[derive(Debug, Clone)]
pub(crate) struct ImageStore {
    dir: PathBuf,
}

impl ImageStore {
    /// Session `id`'s images, beside its record in `records`.
    pub(crate) fn of(records: &Path, id: &str) -> ImageStore {
        ImageStore {
            dir: records.join(format!("{id}.images")),
        }
    }

    /// Keeps `images` durably; one already kept is not written again.
    pub(crate) fn put(&self, images: &[Checked]) -> std::io::Result<()> {
        if images.is_empty() {
            return Ok(());
        }
        if !self.dir.is_dir() {
            std::fs::DirBuilder::new()
                .mode(DIR_MODE)
                .create(&self.dir)?;
            // The folder's own name is durable once its parent is synced.
            if let Some(parent) = self.dir.parent() {
                std::fs::File::open(parent)?.sync_all()?;
            }
        }
        for image in images {
            let path = self.dir.join(&image.attachment.sha256);
            if !path.exists() {
                write_private(&path, &image.data)?;
            }
        }
        Ok(())
    }

    /// The bytes of `attachment`, which must be as long as it says.
    pub(crate) fn read(&self, attachment: &Attachment) -> std::io::Result<Vec<u8>> {
        let name = checked_name(&attachment.sha256)?;
        let mut data = Vec::new();
        std::fs::File::open(self.dir.join(name))?
            .take(attachment.bytes.saturating_add(1))
            .read_to_end(&mut data)?;
        if data.len() as u64 != attachment.bytes {
            return Err(std::io::Error::other(format!(
                "it holds {} bytes, not {}",
                data.len(),
                attachment.bytes
            )));
        }
        Ok(data)
    }

    /// Removes every image none of `keep` names (and what a crash left
    /// mid-write), and the folder once it is empty.
    pub(crate) fn prune<'a>(&self, keep: impl IntoIterator<Item = &'a Attachment>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let keep: Vec<&str> = keep.into_iter().map(|a| a.sha256.as_str()).collect();
        for entry in entries.flatten() {
            let name = entry.file_name();
            if keep.contains(&name.to_string_lossy().as_ref()) {
                continue;
            }
            if let Err(e) = std::fs::remove_file(entry.path()) {
                log::warn!("cannot remove {}: {e}", entry.path().display());
            }
        }
        // Fails while something is left, which is what is wanted.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A sha256 as a file name: 64 lowercase hex digits, nothing else.
fn checked_name(sha256: &str) -> std::io::Result<&str> {
    let hex = sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if hex {
        Ok(sha256)
    } else {
        Err(std::io::Error::other(format!(
            "{sha256:.80} is not a sha256"
        )))
    }
}
