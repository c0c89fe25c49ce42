//! The images a prompt carries, as the session knows them: their kind,
//! size and sha256. Their bytes wait in the runtime's store, under their
//! sha256, until the prompt is done; the record, the prompt log and the
//! journal hold only this.

use serde::{Deserialize, Serialize};

/// An image's kind, as its bytes say (not as a client declared it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageType {
    /// PNG.
    #[serde(rename = "image/png")]
    Png,
    /// JPEG.
    #[serde(rename = "image/jpeg")]
    Jpeg,
    /// GIF.
    #[serde(rename = "image/gif")]
    Gif,
    /// WebP.
    #[serde(rename = "image/webp")]
    Webp,
}

/// Every image kind, in the API's order.
pub const IMAGE_TYPES: [ImageType; 4] = [
    ImageType::Png,
    ImageType::Jpeg,
    ImageType::Gif,
    ImageType::Webp,
];

impl ImageType {
    /// Its media type, as both CLIs and the API name it.
    pub fn media_type(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Gif => "image/gif",
            ImageType::Webp => "image/webp",
        }
    }
}

/// An image a prompt carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// What kind of image.
    pub media_type: ImageType,
    /// Its size, decoded.
    pub bytes: u64,
    /// Its SHA-256, in lowercase hex: where the runtime keeps its bytes.
    pub sha256: String,
}
