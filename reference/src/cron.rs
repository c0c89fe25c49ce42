//! Standard 5-field cron schedules (`minute hour day-of-month month
//! day-of-week`), evaluated in UTC, and the calendar arithmetic they need.
//!
//! Each field takes `*`, a number, a range `a-b`, a step `*/n`, `a-b/n` or
//! `a/n` (from `a` to the field's end), and comma lists of those. Months
//! take `JAN`…`DEC`, days of the week `SUN`…`SAT` (either case); day 7 is
//! Sunday as well as 0. As in Vixie cron, when both day fields are
//! restricted (neither starts with `*`), a day matches if either matches.
//!
//! Hand-written rather than a crate: the grammar is small, the one query the
//! loop runner needs is `next_after`, and the tests below pin the semantics.

use std::fmt;

/// Milliseconds in a minute, cron's finest step.
pub const MINUTE_MS: u64 = 60_000;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// The day-of-month field was `*…` (unrestricted).
    days_star: bool,
    /// The day-of-week field was `*…` (unrestricted).
    weekdays_star: bool,
    text: String,
}

/// Why a schedule did not parse; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronError(pub String);

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CronError {}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    // 7 is accepted and folded onto 0 (Sunday).
    Field {
        name: "day of week",
        min: 0,
        max: 7,
        names: &WEEKDAYS,
    },
];

impl Field {
    fn value(&self, s: &str) -> Result<u32, CronError> {
        let upper = s.to_ascii_uppercase();
        if let Some(i) = self.names.iter().position(|n| *n == upper) {
            // Month names count from 1 (the field's minimum), weekday names from 0.
            return Ok(i as u32 + self.min);
        }
        let n: u32 = s
            .parse()
            .map_err(|_| CronError(format!("{s:?} is not a valid {}.", self.name)))?;
        if n < self.min || n > self.max {
            return Err(CronError(format!(
                "{n} is out of range for the {} ({}-{}).",
                self.name, self.min, self.max
            )));
        }
        Ok(n)
    }

    /// The set of values of one field as a bit mask.
    fn parse(&self, text: &str) -> Result<u64, CronError> {
        let mut mask = 0u64;
        for part in text.split(',') {
            let (range, step) = match part.split_once('/') {
                Some((r, s)) => {
                    let step: u32 = s.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                        CronError(format!("{s:?} is not a valid step for the {}.", self.name))
                    })?;
                    (r, step)
                }
                None => (part, 1),
            };
            let (lo, hi) = if range == "*" {
                (self.min, self.max)
            } else if let Some((a, b)) = range.split_once('-') {
                (self.value(a)?, self.value(b)?)
            } else {
                let a = self.value(range)?;
                // `a/n` runs to the field's end; a bare `a` is just `a`.
                (a, if part.contains('/') { self.max } else { a })
            };
            if lo > hi {
                return Err(CronError(format!(
                    "{range:?} is an empty range for the {}.",
                    self.name
                )));
            }
            for v in (lo..=hi).step_by(step as usize) {
                mask |= 1 << v;
            }
        }
        Ok(mask)
    }
}

impl Cron {
    /// Parses a 5-field schedule.
    pub fn parse(text: &str) -> Result<Cron, CronError> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(CronError(format!(
                "A schedule has 5 fields (minute hour day-of-month month day-of-week); {text:?} has {}.",
                parts.len()
            )));
        }
        let mut masks = [0u64; 5];
        for (i, (field, part)) in FIELDS.iter().zip(&parts).enumerate() {
            masks[i] = field.parse(part)?;
        }
        // Sunday is 0 and 7.
        if masks[4] & (1 << 7) != 0 {
            masks[4] = (masks[4] | 1) & !(1 << 7);
        }
        Ok(Cron {
            minutes: masks[0],
            hours: masks[1],
            days: masks[2],
            months: masks[3],
            weekdays: masks[4],
            days_star: parts[2].starts_with('*'),
            weekdays_star: parts[4].starts_with('*'),
            text: parts.join(" "),
        })
    }

    /// The schedule as given (fields separated by single spaces).
    pub fn text(&self) -> &str {
        &self.text
    }

    fn day_matches(&self, date: Date) -> bool {
        let dom = self.days & (1 << date.day) != 0;
        let dow = self.weekdays & (1 << date.weekday()) != 0;
        match (self.days_star, self.weekdays_star) {
            (false, false) => dom || dow,
            _ => dom && dow,
        }
    }

    /// The first minute strictly after `after_ms` (Unix ms, UTC) that the
    /// schedule matches, as Unix ms; `None` if none comes within 8 years (a
    /// day that never exists, such as 30 February).
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        let mut t = (after_ms / MINUTE_MS + 1) * MINUTE_MS;
        let limit = t + 8 * 366 * 24 * 60 * MINUTE_MS;
        while t < limit {
            let days = t / (24 * 60 * MINUTE_MS);
            let date = Date::from_days(days as i64);
            let minute_of_day = (t / MINUTE_MS) % (24 * 60);
            let (hour, minute) = (minute_of_day / 60, minute_of_day % 60);
            if self.months & (1 << date.month) == 0 {
                // The first day of the next month.
                let (y, m) = if date.month == 12 {
                    (date.year + 1, 1)
                } else {
                    (date.year, date.month + 1)
                };
                t = Date::new(y, m, 1).days() as u64 * 24 * 60 * MINUTE_MS;
            } else if !self.day_matches(date) {
                t = (days + 1) * 24 * 60 * MINUTE_MS;
            } else if self.hours & (1 << hour) == 0 {
                t = (t / (60 * MINUTE_MS) + 1) * 60 * MINUTE_MS;
            } else if self.minutes & (1 << minute) == 0 {
                t += MINUTE_MS;
            } else {
                return Some(t);
            }
        }
        None
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A proleptic Gregorian date (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date {
    /// The year.
    pub year: i64,
    /// 1-12.
    pub month: u32,
    /// 1-31.
    pub day: u32,
}

impl Date {
    /// A date from its parts (not checked).
    pub fn new(year: i64, month: u32, day: u32) -> Date {
        Date { year, month, day }
    }

    /// The date `days` days after 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`).
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Date { year, month, day }
    }

    /// Days since 1970-01-01 (`days_from_civil`).
    pub fn days(self) -> i64 {
        let y = self.year - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// 0 = Sunday … 6 = Saturday.
    pub fn weekday(self) -> u32 {
        // 1970-01-01 was a Thursday.
        (self.days() + 4).rem_euclid(7) as u32
    }

    /// Whether the date exists (30 February does not).
    pub fn is_valid(self) -> bool {
        (1..=12).contains(&self.month) && self.day >= 1 && Date::from_days(self.days()) == self
    }
}

/// Unix ms of `date` at `hour:minute:second` UTC.
pub fn unix_ms(date: Date, hour: u32, minute: u32, second: u32) -> u64 {
    let secs = date.days() * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    secs.max(0) as u64 * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i64, mo: u32, d: u32, h: u32, mi: u32) -> u64 {
        unix_ms(Date::new(y, mo, d), h, mi, 0)
    }

    fn next(s: &str, from: u64) -> u64 {
        Cron::parse(s).unwrap().next_after(from).unwrap()
    }

    #[test]
    fn calendar_round_trips() {
        assert_eq!(Date::from_days(0), Date::new(1970, 1, 1));
        assert_eq!(Date::new(2000, 3, 1).days(), 11_017);
        assert_eq!(Date::new(2026, 10, 31).weekday(), 6); // a Saturday
        for d in [-800_000, -1, 0, 59, 10_957, 20_000, 2_000_000] {
            assert_eq!(Date::from_days(d).days(), d);
        }
        assert!(Date::new(2024, 2, 29).is_valid());
        assert!(!Date::new(2025, 2, 29).is_valid());
        assert!(!Date::new(2025, 13, 1).is_valid());
    }

    #[test]
    fn every_minute_fires_on_the_next_minute_boundary() {
        let t = at(2026, 10, 31, 0, 38) + 39_000;
        assert_eq!(next("* * * * *", t), at(2026, 10, 31, 0, 39));
        // Strictly after: a boundary itself moves on to the next one.
        assert_eq!(
            next("* * * * *", at(2026, 10, 31, 0, 39)),
            at(2026, 10, 31, 0, 40)
        );
    }

    #[test]
    fn steps_ranges_lists_and_names() {
        let t = at(2026, 10, 31, 23, 58);
        assert_eq!(next("*/15 * * * *", t), at(2026, 11, 1, 0, 0));
        assert_eq!(next("5-10/5 * * * *", t), at(2026, 11, 1, 0, 5));
        assert_eq!(
            next("7/20 * * * *", at(2026, 1, 1, 0, 8)),
            at(2026, 1, 1, 0, 27)
        );
        assert_eq!(
            next("0 9,17 * * *", at(2026, 1, 1, 12, 0)),
            at(2026, 1, 1, 17, 0)
        );
        assert_eq!(next("0 0 1 jan *", t), at(2027, 1, 1, 0, 0));
        assert_eq!(next("30 4 * * MON-FRI", t), at(2026, 11, 2, 4, 30)); // Monday
        assert_eq!(next("0 0 * * 7", t), at(2026, 11, 1, 0, 0)); // Sunday as 7
        assert_eq!(next("0 0 * * 0", t), at(2026, 11, 1, 0, 0));
    }

    #[test]
    fn both_day_fields_restricted_match_either() {
        // The 13th, or any Friday: from Saturday 31 Oct 2026, Friday 6 Nov comes first.
        let t = at(2026, 10, 31, 0, 0);
        assert_eq!(next("0 0 13 * 5", t), at(2026, 11, 6, 0, 0));
        // With day-of-week `*`, only the 13th.
        assert_eq!(next("0 0 13 * *", t), at(2026, 11, 13, 0, 0));
        // A `*/n` day field counts as unrestricted: both must match.
        assert_eq!(next("0 0 */2 * 5", t), at(2026, 11, 13, 0, 0));
    }

    #[test]
    fn leap_days_and_impossible_days() {
        assert_eq!(
            next("0 0 29 2 *", at(2026, 3, 1, 0, 0)),
            at(2028, 2, 29, 0, 0)
        );
        assert_eq!(Cron::parse("0 0 30 2 *").unwrap().next_after(0), None);
    }

    #[test]
    fn bad_schedules_name_what_is_wrong() {
        let err = |s: &str| Cron::parse(s).unwrap_err().to_string();
        assert!(err("* * * *").contains("has 4"));
        assert!(err("60 * * * *").contains("out of range for the minute"));
        assert!(err("* 24 * * *").contains("hour"));
        assert!(err("* * 0 * *").contains("day of month"));
        assert!(err("* * * 13 *").contains("month"));
        assert!(err("* * * * 8").contains("day of week"));
        assert!(err("*/0 * * * *").contains("step"));
        assert!(err("5-1 * * * *").contains("empty range"));
        assert!(err("x * * * *").contains("not a valid minute"));
        assert!(err("* * * FOO *").contains("month"));
        assert_eq!(Cron::parse(" *  * * * * ").unwrap().text(), "* * * * *");
    }
}
