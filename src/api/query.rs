//! Query strings: `name=value` pairs split on `&`, percent-decoded (`+` is a
//! space). Each route names the parameters it takes (routes.rs); any other
//! is a 422 that names it, as an unknown body field is, and a parameter
//! given twice is refused rather than one of its values picked.

use crate::error::Refusal;

/// A request's query, checked against its route's parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

fn invalid(message: String) -> Refusal {
    Refusal::new(422, "invalid_parameter", message)
}

impl Query {
    /// Parses `query` (the part after `?`) for a route taking `known`.
    pub fn parse(query: Option<&str>, known: &[&str]) -> Result<Query, Refusal> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for part in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            let (name, value) = (decode(name)?, decode(value)?);
            if !known.contains(&name.as_str()) {
                let known = if known.is_empty() {
                    "This route takes none.".to_string()
                } else {
                    format!("Known parameters: {}.", known.join(", "))
                };
                return Err(Refusal::new(
                    422,
                    "unknown_parameter",
                    format!("Unknown parameter \"{name}\". {known}"),
                ));
            }
            if pairs.iter().any(|(n, _)| *n == name) {
                return Err(invalid(format!("The parameter {name} is given twice.")));
            }
            pairs.push((name, value));
        }
        Ok(Query { pairs })
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `name` as a seq or count (a whole number), if given.
    pub fn number(&self, name: &str) -> Result<Option<u64>, Refusal> {
        self.get(name)
            .map(|v| {
                whole_number(v).ok_or_else(|| {
                    invalid(format!(
                        "The parameter {name} must be a whole number, not \"{v}\"."
                    ))
                })
            })
            .transpose()
    }

    /// `name` as a page size: `default` when not given, else 1..=`max`.
    pub fn limit(&self, name: &str, default: usize, max: usize) -> Result<usize, Refusal> {
        match self.number(name)? {
            None => Ok(default),
            Some(n) if (1..=max as u64).contains(&n) => Ok(n as usize),
            Some(n) => Err(invalid(format!(
                "The parameter {name} must be from 1 to {max}, not {n}."
            ))),
        }
    }
}

/// `text` as a whole number from 0 to `u64::MAX`: ASCII digits only, as the
/// spec's `integer` is written (`u64`'s parser would also take a leading
/// `+`).
pub(crate) fn whole_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Percent-decodes one name or value; `+` is a space.
fn decode(s: &str) -> Result<String, Refusal> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| invalid(format!("The query has a bad escape in \"{s}\".")))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| invalid(format!("The query \"{s}\" is not UTF-8.")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decodes_and_refuses_what_the_route_does_not_take() {
        let q = Query::parse(Some("workspace=ws%201+a&limit=5&"), &["workspace", "limit"]).unwrap();
        assert_eq!(q.get("workspace"), Some("ws 1 a"));
        assert_eq!(q.limit("limit", 256, 1024).unwrap(), 5);
        assert_eq!(q.limit("other", 256, 1024).unwrap(), 256);
        assert_eq!(Query::parse(None, &[]).unwrap(), Query::default());
        let e = Query::parse(Some("bogus=1"), &["after"]).unwrap_err();
        assert_eq!(
            (e.status, e.code, e.message.as_str()),
            (
                422,
                "unknown_parameter",
                "Unknown parameter \"bogus\". Known parameters: after."
            )
        );
        let e = Query::parse(Some("x"), &[]).unwrap_err();
        assert_eq!(e.message, "Unknown parameter \"x\". This route takes none.");
        let e = Query::parse(Some("after=1&after=2"), &["after"]).unwrap_err();
        assert_eq!(e.message, "The parameter after is given twice.");
        let q = Query::parse(Some("after=x&limit=0"), &["after", "limit"]).unwrap();
        assert_eq!(
            q.number("after").unwrap_err().message,
            "The parameter after must be a whole number, not \"x\"."
        );
        assert_eq!(
            q.limit("limit", 256, 1024).unwrap_err().message,
            "The parameter limit must be from 1 to 1024, not 0."
        );
        let q = Query::parse(Some("after=%2B1&limit=01"), &["after", "limit"]).unwrap();
        assert_eq!(
            q.number("after").unwrap_err().message,
            "The parameter after must be a whole number, not \"+1\"."
        );
        assert_eq!(q.limit("limit", 256, 1024).unwrap(), 1);
        assert_eq!(whole_number("18446744073709551615"), Some(u64::MAX));
        assert_eq!(whole_number("18446744073709551616"), None);
        assert_eq!(whole_number(""), None);
        assert!(Query::parse(Some("after=%zz"), &["after"]).is_err());
        assert!(Query::parse(Some("after=%ff"), &["after"]).is_err());
    }
}
