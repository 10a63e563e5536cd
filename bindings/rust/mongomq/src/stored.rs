//! `StoredEvent`: one event as peek and the dead-letter list show it (the library's
//! JSON, parsed), with the base64 decoding of binary events and its attributes in
//! order; `DeadPage`, a page of dead letters.

use std::fmt;
use std::time::SystemTime;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
    /// Its attributes (0.7.0) as (key, value), in publish order (the library's
    /// `"attrs": {key: value}`, read in the JSON's order); empty when it has none.
    /// Serialized back as that object, left out when empty, as the library does.
    #[serde(default, deserialize_with = "attrs_in_order", serialize_with = "attrs_as_object")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attrs: Vec<(String, String)>,
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

/// "attrs" is a JSON object; its entries in the order the JSON has them (serde_json's
/// `Value` would sort them). A document that holds something else there (`null`)
/// has none.
fn attrs_in_order<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    struct InOrder;
    impl<'de> Visitor<'de> for InOrder {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of string values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(entry) = map.next_entry::<String, String>()? {
                out.push(entry);
            }
            Ok(out)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }
    d.deserialize_any(InOrder)
}

fn attrs_as_object<S: Serializer>(attrs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(attrs.len()))?;
    for (k, v) in attrs {
        map.serialize_entry(k, v)?;
    }
    map.end()
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
    use super::{decode_base64, StoredEvent};

    #[test]
    fn attrs_keep_the_json_order() {
        let json = r#"{"seq": 1, "event": "x", "attrs": {"z": "1", "a.b": "", "m": "2"}}"#;
        let event: StoredEvent = serde_json::from_str(json).unwrap();
        assert_eq!(event.attrs, [("z".into(), "1".into()), ("a.b".into(), "".into()), ("m".into(), "2".into())]);
        let back = serde_json::to_string(&event).unwrap();
        assert!(back.ends_with(r#""attrs":{"z":"1","a.b":"","m":"2"}}"#), "{back}");
        let none: StoredEvent = serde_json::from_str(r#"{"seq": 2, "event": "y"}"#).unwrap();
        assert!(none.attrs.is_empty());
        assert!(!serde_json::to_string(&none).unwrap().contains("attrs"));
        assert!(serde_json::from_str::<StoredEvent>(r#"{"attrs": {"k": 1}}"#).is_err());
    }

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
