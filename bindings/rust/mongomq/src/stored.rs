//! `StoredEvent`: one event as peek and the dead-letter list show it (the library's
//! JSON, parsed), with the base64 decoding of binary events; `DeadPage`, a page of dead
//! letters.

use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize};

/// One stored event, as [`Queue::peek`](crate::Queue::peek) and
/// [`Queue::dead_list`](crate::Queue::dead_list) show it without claiming. Each field
/// is `None` when the stored document lacks it or holds another type (a document
/// mongomq did not write is shown, not trusted). Serialized back with serde_json, the
/// times are epoch seconds as in the library's JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The event's sequence number.
    #[serde(default)]
    pub seq: Option<i64>,
    /// Its group.
    #[serde(default)]
    pub group: Option<String>,
    /// The priority it was published with.
    #[serde(default)]
    pub priority: Option<i64>,
    /// Deliveries so far (dead letters; events the library counted).
    #[serde(default)]
    pub attempts: Option<i64>,
    /// When it was published (queue clock).
    #[serde(default, with = "crate::time::epoch_seconds::option")]
    pub published_at: Option<SystemTime>,
    /// Not delivered before this time (scheduled events; queue clock).
    #[serde(default, with = "crate::time::epoch_seconds::option")]
    pub not_before: Option<SystemTime>,
    /// When it went to the dead letters (queue clock).
    #[serde(default, with = "crate::time::epoch_seconds::option")]
    pub dead_at: Option<SystemTime>,
    /// The event's bytes, exactly as published.
    #[serde(default, deserialize_with = "event_bytes")]
    pub event: Option<Vec<u8>>,
}

/// A page of the dead letters ([`Queue::dead_page`](crate::Queue::dead_page)), parsed
/// from `mq_dead_list_with`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadPage {
    /// The page's letters, oldest seq first.
    pub letters: Vec<StoredEvent>,
    /// How many letters were skipped before the page (the call's offset).
    pub offset: u64,
    /// How many dead letters there are in all.
    pub total: u64,
}

/// "event" is the text for a text event, `{"base64": "..."}` for a binary one.
fn event_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Binary { base64: String },
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        None => None,
        Some(Raw::Text(t)) => Some(t.into_bytes()),
        Some(Raw::Binary { base64 }) => {
            Some(decode_base64(&base64).ok_or_else(|| serde::de::Error::custom("event: invalid base64"))?)
        }
    })
}

/// Standard base64 with padding (what the library writes).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&three[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::decode_base64;

    #[test]
    fn base64_round_trips() {
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("AA==").unwrap(), b"\0");
        assert_eq!(decode_base64("AP8=").unwrap(), b"\0\xff");
        assert_eq!(decode_base64("AP+A").unwrap(), b"\0\xff\x80");
        assert_eq!(decode_base64("aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert!(decode_base64("AP8").is_none());
        assert!(decode_base64("A===").is_none());
        assert!(decode_base64("A*==").is_none());
    }
}
