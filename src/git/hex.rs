//! Object ids in state files are hex strings, as people read them in git.

use serde::{Deserialize, Deserializer, Serializer};

use super::ids::ObjectId;

pub fn serialize<S: Serializer>(id: &ObjectId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(id)
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectId, D::Error> {
    let hex = String::deserialize(deserializer)?;
    ObjectId::from_hex(hex.as_bytes()).map_err(serde::de::Error::custom)
}

/// The same for `Option<ObjectId>`.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::git::ids::ObjectId;

    pub fn serialize<S: Serializer>(
        id: &Option<ObjectId>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => serializer.collect_str(id),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<ObjectId>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|hex| ObjectId::from_hex(hex.as_bytes()).map_err(serde::de::Error::custom))
            .transpose()
    }
}
