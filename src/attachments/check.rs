//! What the API takes as a prompt's images:
//! `[{"type": "image", "media_type": "image/png", "data": "<base64>"}]`,
//! at most [`MAX_IMAGES`] of at most [`MAX_IMAGE_BYTES`] each and
//! [`MAX_TOTAL_BYTES`] in all (decoded), each a PNG, JPEG, GIF or WebP by
//! its magic bytes, which must agree with the declared type. Each refusal
//! names the image (by its index) and the rule.

use base64::Engine as _;
use room_machines::session::{Attachment, ImageType, IMAGE_TYPES};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The most images a prompt carries.
pub(crate) const MAX_IMAGES: usize = 20;
/// The largest image, decoded (5 MiB).
pub(crate) const MAX_IMAGE_BYTES: usize = 5 << 20;
/// The most a prompt's images hold together, decoded (20 MiB).
pub(crate) const MAX_TOTAL_BYTES: usize = 20 << 20;

/// Standard base64 with its padding, its last character's unused bits
/// ignored (as the spec's pattern, which cannot see them, takes them).
const STANDARD_LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// An image as the API takes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    #[serde(rename = "type")]
    kind: String,
    media_type: String,
    data: String,
}

/// An image that passed the checks: what the session knows of it, and its
/// bytes for the store.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Its kind, size and sha256.
    pub attachment: Attachment,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// What the session knows of `images`: each one's kind, size and sha256,
/// in order.
pub(crate) fn named(images: &[Checked]) -> Vec<Attachment> {
    images.iter().map(|i| i.attachment.clone()).collect()
}

/// The images of `value` (the body's `attachments`), checked; the first
/// rule broken, in a sentence, otherwise.
pub(crate) fn images(value: Value) -> Result<Vec<Checked>, String> {
    let Value::Array(items) = value else {
        return Err("attachments must be an array of images.".into());
    };
    if items.len() > MAX_IMAGES {
        return Err(format!(
            "attachments holds {} images; a prompt carries at most {MAX_IMAGES}.",
            items.len()
        ));
    }
    let mut total = 0;
    let mut checked = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let image = one(item).map_err(|why| format!("attachments[{i}]: {why}"))?;
        total += image.data.len();
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "attachments hold more than {} MiB of images (decoded) from attachments[{i}] on; \
                 a prompt carries at most {} MiB.",
                MAX_TOTAL_BYTES >> 20,
                MAX_TOTAL_BYTES >> 20
            ));
        }
        checked.push(image);
    }
    Ok(checked)
}

fn one(item: Value) -> Result<Checked, String> {
    let body: Body = serde_json::from_value(item).map_err(|e| {
        format!("{e}; an image is {{\"type\": \"image\", \"media_type\": \"image/png\", \"data\": \"<base64>\"}}.")
    })?;
    if body.kind != "image" {
        return Err(format!("type must be \"image\", not {:?}.", body.kind));
    }
    let declared = IMAGE_TYPES
        .into_iter()
        .find(|t| t.media_type() == body.media_type)
        .ok_or_else(|| {
            format!(
                "media_type must be image/png, image/jpeg, image/gif or image/webp, not {:?}.",
                body.media_type
            )
        })?;
    // Base64 of more than the cap is refused before it is decoded.
    if body.data.len() > MAX_IMAGE_BYTES.div_ceil(3) * 4 {
        return Err(format!(
            "the image is larger than {} MiB (decoded).",
            MAX_IMAGE_BYTES >> 20
        ));
    }
    let data = STANDARD_LENIENT
        .decode(body.data.as_bytes())
        .map_err(|e| format!("data is not standard base64 ({e})."))?;
    if data.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "the image is larger than {} MiB (decoded).",
            MAX_IMAGE_BYTES >> 20
        ));
    }
    let found = sniff(&data).ok_or(
        "the data is not a PNG, JPEG, GIF or WebP image (its first bytes say none of them).",
    )?;
    if found != declared {
        return Err(format!(
            "the data is {}, not the {} declared.",
            found.media_type(),
            declared.media_type()
        ));
    }
    let sha256 = format!("{:x}", Sha256::digest(&data));
    Ok(Checked {
        attachment: Attachment {
            media_type: found,
            bytes: data.len() as u64,
            sha256,
        },
        data,
    })
}

/// The image kind `data`'s first bytes announce.
pub(crate) fn sniff(data: &[u8]) -> Option<ImageType> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageType::Png)
    } else if data.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(ImageType::Jpeg)
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some(ImageType::Gif)
    } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        Some(ImageType::Webp)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The smallest PNG: a 1x1 transparent pixel.
    pub(crate) const PNG: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];

    fn b64(data: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(data)
    }

    fn image(media_type: &str, data: &[u8]) -> Value {
        json!({"type": "image", "media_type": media_type, "data": b64(data)})
    }

    #[test]
    fn an_image_is_known_by_its_bytes_size_and_sha256() {
        let got = images(json!([image("image/png", PNG)])).unwrap();
        assert_eq!(got.len(), 1);
        let a = &got[0].attachment;
        assert_eq!((a.media_type, a.bytes), (ImageType::Png, PNG.len() as u64));
        // `sha256sum` of those bytes.
        assert_eq!(
            a.sha256,
            "2b1da20a14b97d8f01f0a809d9f7d53eeefc59df6312eaa5a0c8b5c1228d1d7f"
        );
        assert_eq!(got[0].data, PNG);
    }

    #[test]
    fn each_kind_is_told_by_its_magic_bytes() {
        let webp = [b"RIFF".as_slice(), &[0; 4], b"WEBPVP8 "].concat();
        let cases: [(&[u8], Option<ImageType>); 6] = [
            (PNG, Some(ImageType::Png)),
            (&[0xff, 0xd8, 0xff, 0xe0], Some(ImageType::Jpeg)),
            (b"GIF89a....", Some(ImageType::Gif)),
            (&webp, Some(ImageType::Webp)),
            (b"<svg xmlns", None),
            (b"", None),
        ];
        for (data, want) in cases {
            assert_eq!(sniff(data), want, "{data:?}");
        }
    }

    #[test]
    fn what_breaks_a_rule_is_refused_with_the_rule_named() {
        let big = [PNG, &vec![0; MAX_IMAGE_BYTES]].concat();
        let cases = [
            (json!({}), "attachments must be an array of images."),
            (
                json!([image("image/jpeg", PNG)]),
                "attachments[0]: the data is image/png, not the image/jpeg declared.",
            ),
            (
                json!([image("image/png", PNG), image("image/png", b"plain text")]),
                "attachments[1]: the data is not a PNG, JPEG, GIF or WebP image (its first bytes say none of them).",
            ),
            (
                json!([image("image/svg+xml", PNG)]),
                "attachments[0]: media_type must be image/png, image/jpeg, image/gif or image/webp, not \"image/svg+xml\".",
            ),
            (
                json!([{"type": "file", "media_type": "image/png", "data": b64(PNG)}]),
                "attachments[0]: type must be \"image\", not \"file\".",
            ),
            (
                json!([{"type": "image", "media_type": "image/png", "data": "not base64!"}]),
                "attachments[0]: data is not standard base64 (Invalid symbol 32, offset 3.).",
            ),
            (
                json!([image("image/png", &big)]),
                "attachments[0]: the image is larger than 5 MiB (decoded).",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(images(value.clone()).unwrap_err(), want, "{value}");
        }
        let many = Value::Array(vec![image("image/png", PNG); MAX_IMAGES + 1]);
        assert_eq!(
            images(many).unwrap_err(),
            "attachments holds 21 images; a prompt carries at most 20."
        );
        let four_mib = [PNG, &vec![0; 4 << 20]].concat();
        let heavy = Value::Array(vec![image("image/png", &four_mib); 6]);
        assert_eq!(
            images(heavy).unwrap_err(),
            "attachments hold more than 20 MiB of images (decoded) from attachments[4] on; a prompt \
             carries at most 20 MiB."
        );
    }
}
