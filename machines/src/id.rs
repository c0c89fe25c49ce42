//! The identifier shapes: the one shared by loop (automation) IDs and
//! session IDs, and what a harness's own (native) session ID may be.

/// The longest native session ID taken from a harness (both CLIs print
/// UUIDs, 36 bytes).
pub const NATIVE_ID_MAX: usize = 128;

/// True when `s` has the 36-character UUID shape `8-4-4-4-12` of hex digits
/// (either case), the shape the website gives every loop ID.
pub fn valid_id(s: &str) -> bool {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    if s.len() != 36 {
        return false;
    }
    let mut parts = s.split('-');
    for len in GROUPS {
        match parts.next() {
            Some(p) if p.len() == len && p.bytes().all(|b| b.is_ascii_hexdigit()) => {}
            _ => return false,
        }
    }
    parts.next().is_none()
}

/// Whether `id`, which a harness printed, can be its native session ID:
/// it is recorded, journalled and passed back as an argument on every
/// later turn, so one that is empty, long, starts with `-` (an option) or
/// holds more than ASCII letters, digits, `-` and `_` is not taken.
pub fn plausible_native_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= NATIVE_ID_MAX
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::{plausible_native_id, valid_id};

    #[test]
    fn only_an_id_shaped_native_id_is_taken() {
        assert!(plausible_native_id("5b7e3a1c-8c1d-4f0e-9a57-2d6c1f0e9b21"));
        assert!(plausible_native_id("019a2f3c_7d1e"));
        assert!(plausible_native_id(&"a".repeat(128)));
        for bad in ["", "-x", "a b", "a\nb", "../x", "é", &"a".repeat(129)] {
            assert!(!plausible_native_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn accepts_uuid_shapes_only() {
        assert!(valid_id("0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"));
        assert!(valid_id("0F8E2C1A-3B4D-4E5F-8A9B-0C1D2E3F4A5B"));
        for bad in [
            "",
            "0f8e2c1a",
            "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5g",
            "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b0",
            "../../etc/passwd-3b4d-4e5f-8a9b-0c1d2",
            "0f8e2c1a3b4d-4e5f-8a9b-0c1d2e3f4a5b-",
            "0f8e2c1a-3b4d-4e5f-8a9b0-c1d2e3f4a5b",
        ] {
            assert!(!valid_id(bad), "{bad:?} should be refused");
        }
    }
}
