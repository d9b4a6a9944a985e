//! UTC calendar time from Unix seconds, without a date-time dependency: run ids
//! and install markers need only a timestamp, not time zones.

/// Unix time now, milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

/// `ms` from now on the monotonic clock, if the clock can say it (a value
/// near u64::MAX cannot be added to an `Instant`).
pub fn in_ms(ms: u64) -> Option<std::time::Instant> {
    std::time::Instant::now().checked_add(std::time::Duration::from_millis(ms))
}

/// [`in_ms`], or a year from now when `ms` is beyond what the clock can add.
pub fn in_ms_or_far(ms: u64) -> std::time::Instant {
    in_ms(ms).or_else(|| in_ms(365 * 24 * 3_600_000)).unwrap_or_else(std::time::Instant::now)
}

/// A UTC time broken into its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl Utc {
    /// Unix seconds → proleptic Gregorian UTC (Howard Hinnant's public-domain
    /// civil-from-days algorithm).
    pub fn from_unix(secs: u64) -> Utc {
        let days = (secs / 86_400) as i64;
        let rem = (secs % 86_400) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Utc { year, month, day, hour: rem / 3600, minute: rem / 60 % 60, second: rem % 60 }
    }

    /// Back to Unix seconds (the inverse of [`Utc::from_unix`], Hinnant's days-from-civil):
    /// a log line's calendar time placed on the history's clock. None before 1970.
    pub fn to_unix(&self) -> Option<u64> {
        let y = self.year - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        let secs = days * 86_400 + i64::from(self.hour * 3600 + self.minute * 60 + self.second);
        u64::try_from(secs).ok()
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `YYYYMMDDTHHMMSS`, for names.
    pub fn compact(&self) -> String {
        format!("{:04}{:02}{:02}T{:02}{:02}{:02}", self.year, self.month, self.day, self.hour, self.minute, self.second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(Utc::from_unix(0).compact(), "19700101T000000");
        assert_eq!(Utc::from_unix(951_782_400).compact(), "20000229T000000");
        assert_eq!(Utc::from_unix(1_787_400_000 + 3_723).rfc3339(), "2026-08-22T13:02:03Z");
        for secs in [0, 951_782_400, 1_787_403_723, 1_796_677_346] {
            assert_eq!(Utc::from_unix(secs).to_unix(), Some(secs));
        }
    }
}
