//! Instants across the C line: the library counts seconds since the epoch as an `f64`
//! on the queue's clock; the crate hands out and takes `SystemTime`. Durations the
//! library reports in seconds become `Duration`s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the epoch (negative before it: the library then refuses the value
/// with an argument error naming it).
pub(crate) fn to_epoch(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

/// The instant `seconds` after the epoch (before it when negative); a value no
/// `SystemTime` can hold (not finite, too far out) is the epoch itself.
pub(crate) fn from_epoch(seconds: f64) -> SystemTime {
    let shifted = match Duration::try_from_secs_f64(seconds.abs()) {
        Ok(d) if seconds >= 0.0 => UNIX_EPOCH.checked_add(d),
        Ok(d) => UNIX_EPOCH.checked_sub(d),
        Err(_) => None,
    };
    shifted.unwrap_or(UNIX_EPOCH)
}

/// serde for a `SystemTime` field kept as the library's JSON keeps it: epoch seconds.
pub(crate) mod epoch_seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub(crate) fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::to_epoch(*t))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        f64::deserialize(d).map(super::from_epoch)
    }

    /// The same for an `Option<SystemTime>` (absent or null: `None`).
    pub(crate) mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use std::time::SystemTime;

        pub(crate) fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_some(&super::super::to_epoch(*t)),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
            Ok(Option::<f64>::deserialize(d)?.map(super::super::from_epoch))
        }
    }
}

/// A duration the library reports as seconds (an `f64`): negative (two machines'
/// clocks a little apart) or not a number is zero, beyond `Duration::MAX` is that.
pub(crate) fn from_seconds(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// serde for an `Option<Duration>` field kept as the library's JSON keeps it: seconds,
/// or null (`None`).
pub(crate) mod seconds_option {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.map(super::from_seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_clamp() {
        assert_eq!(from_seconds(2.5), Duration::from_millis(2500));
        assert_eq!(from_seconds(-0.002), Duration::ZERO);
        assert_eq!(from_seconds(f64::NAN), Duration::ZERO);
        assert_eq!(from_seconds(f64::INFINITY), Duration::MAX);
    }

    #[test]
    fn epoch_round_trips() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        assert_eq!(to_epoch(t), 1_700_000_000.25);
        assert_eq!(from_epoch(1_700_000_000.25), t);
        assert_eq!(to_epoch(UNIX_EPOCH - Duration::from_secs(1)), -1.0);
        assert_eq!(from_epoch(-1.0), UNIX_EPOCH - Duration::from_secs(1));
        assert_eq!(from_epoch(f64::NAN), UNIX_EPOCH);
        assert_eq!(from_epoch(f64::INFINITY), UNIX_EPOCH);
    }
}
