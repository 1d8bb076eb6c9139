//! `source` in `state.json`: the kind's name, or `auto` before
//! detection, read and written as every earlier release did.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::stories::SourceKind;

pub fn serialize<S: Serializer>(
    source: &Option<SourceKind>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match source {
        Some(kind) => kind.serialize(serializer),
        None => serializer.serialize_str("auto"),
    }
}

pub fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SourceKind>, D::Error> {
    let name = String::deserialize(deserializer)?;
    if name == "auto" {
        return Ok(None);
    }
    SourceKind::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&name)).map(Some)
}
