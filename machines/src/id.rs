//! The identifier shape shared by loop (automation) IDs and session IDs.

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

#[cfg(test)]
mod tests {
    use super::valid_id;

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
