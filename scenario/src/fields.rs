//! A struct's field names, read from its own `Deserialize`: the parameter
//! list of each fault kind in the kind table ([`super::fault`]) comes from
//! the kind's parameter struct, so the table and the struct cannot disagree.
//!
//! A file of its own, below both the kind table and the hand-written reader
//! of a fault entry ([`super::fault_serde`]): the table needs the names, the
//! reader needs the table, and neither needs to reach the other to get them.
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::forward_to_deserialize_any;

/// The field names serde's derive gives `T` (what it passes to
/// `deserialize_struct`; with `rename`s applied): the parameter list of a
/// kind is read from its struct, so the two cannot disagree.
pub(super) fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldsProbe) {
        Err(Captured(fields)) => fields,
        Ok(_) => &[],
    }
}

/// A deserializer that only records the fields a struct asks for.
struct FieldsProbe;

#[derive(Debug)]
struct Captured(&'static [&'static str]);

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fields {:?}", self.0)
    }
}

impl std::error::Error for Captured {}

impl de::Error for Captured {
    fn custom<T: fmt::Display>(_: T) -> Captured {
        Captured(&[])
    }
}

impl<'de> Deserializer<'de> for FieldsProbe {
    type Error = Captured;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Captured> {
        Err(Captured(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Captured> {
        Err(Captured(fields))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}
