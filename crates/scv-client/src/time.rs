//! Unix seconds as UTC dates, for people (`scv sessions export`) and for
//! protocols that want RFC 3339 (ACP's `updatedAt`). Days become a civil
//! date by Howard Hinnant's `civil_from_days`.

/// `(year, month, day, hour, minute, second)` of unix seconds, in UTC.
fn civil(seconds: u64) -> (i64, i64, i64, u64, u64, u64) {
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Seconds since the epoch now (0 if the clock is before it).
pub fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYY-MM-DD HH:MM UTC`.
pub fn utc(seconds: u64) -> String {
    let (year, month, day, hour, minute, _) = civil(seconds);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339).
pub fn rfc3339(seconds: u64) -> String {
    let (year, month, day, hour, minute, second) = civil(seconds);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_796_083_200 + 3_723), "2026-12-01 01:02 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(rfc3339(1_796_083_200 + 3_723), "2026-12-01T01:02:03Z");
    }
}
