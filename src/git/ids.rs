//! The object id this module hands out. Kept in a file of its own so that
//! every operation can name it without reaching back into `mod.rs`.

/// An object id, as this module hands it out.
pub type ObjectId = gix::ObjectId;
