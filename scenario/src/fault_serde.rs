//! How a fault is written: one flat map, `kind:` beside the trigger and the
//! kind's parameters, as scenario files, the resolved `scenario.yaml` of a
//! run and `schedule.json` have always had it:
//!
//! ```yaml
//! - {name: slow, kind: net-delay, when: {at_ms: 1000}, duration_ms: 500,
//!    from: [workers], to: [brokers], delay_ms: 200}
//! ```
//!
//! serde's own internally tagged enums (`#[serde(tag = "kind")]`, with
//! `flatten`) would read that shape, but they buffer the whole entry first,
//! and every error then has the entry's start as its position and no field
//! name: "invalid type: string, expected u64" somewhere in `faults[3]`. So
//! the spec is read by hand: its own fields (`name`, `when`, `duration_ms`,
//! `times`, `kind`) straight from the document, keeping their positions; the
//! rest buffered, then handed to the kind's parameter struct, whose errors
//! are tagged with the parameter they are about ([`param_error`]): "kill-workers
//! does not take delay_ms; delay_ms is a parameter of net-delay, …". The
//! loader turns that tag into the field's path and line (`load::syntax_problem`).
use std::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::ser::{self, Impossible, SerializeMap, SerializeStruct, Serializer};
use serde::{forward_to_deserialize_any, Deserialize, Serialize};

use super::fault::{does_not_take, needs, Fault, FaultKind, FaultSpec};
use super::When;

// ---------------------------------------------------------------------------
// Writing

impl Serialize for FaultSpec {
    /// name, kind, target, when, duration_ms, times, then the other
    /// parameters: the order the files have always had.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if let Some(n) = &self.name {
            m.serialize_entry("name", n)?;
        }
        m.serialize_entry("kind", &self.kind.kind())?;
        self.kind.serialize_params(FieldsInto { map: &mut m, keep: |f| f == "target" })?;
        m.serialize_entry("when", &self.when)?;
        if let Some(d) = &self.duration_ms {
            m.serialize_entry("duration_ms", d)?;
        }
        if let Some(t) = &self.times {
            m.serialize_entry("times", t)?;
        }
        if let Some(a) = &self.after_ms {
            m.serialize_entry("after_ms", a)?;
        }
        self.kind.serialize_params(FieldsInto { map: &mut m, keep: |f| f != "target" })?;
        m.end()
    }
}

impl Serialize for Fault {
    /// `kind`, then the parameters.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", &self.kind())?;
        self.serialize_params(FieldsInto { map: &mut m, keep: |_| true })?;
        m.end()
    }
}

/// A serializer that takes a struct and writes the fields `keep` accepts as
/// entries of an enclosing map (serde's `flatten`, for one struct).
struct FieldsInto<'a, M> {
    map: &'a mut M,
    keep: fn(&str) -> bool,
}

impl<M: SerializeMap> SerializeStruct for FieldsInto<'_, M> {
    type Ok = ();
    type Error = M::Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), M::Error> {
        if (self.keep)(key) {
            self.map.serialize_entry(key, value)
        } else {
            Ok(())
        }
    }

    fn end(self) -> Result<(), M::Error> {
        Ok(())
    }
}

fn not_a_struct<E: ser::Error>() -> E {
    E::custom("fault parameters are a struct")
}

impl<'a, M: SerializeMap> Serializer for FieldsInto<'a, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Impossible<(), M::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, M::Error> {
        Ok(self)
    }

    fn serialize_bool(self, _: bool) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_i8(self, _: i8) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_i16(self, _: i16) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_i32(self, _: i32) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_i64(self, _: i64) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_u8(self, _: u8) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_u16(self, _: u16) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_u32(self, _: u32) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_u64(self, _: u64) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_f32(self, _: f32) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_f64(self, _: f64) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_char(self, _: char) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_str(self, _: &str) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_none(self) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_unit(self) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(not_a_struct())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, M::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, M::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, M::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, M::Error> {
        Err(not_a_struct())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, M::Error> {
        Err(not_a_struct())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, M::Error> {
        Err(not_a_struct())
    }
}

// ---------------------------------------------------------------------------
// Reading

/// The fields a spec has for every kind.
const SPEC_FIELDS: [&str; 6] = ["name", "kind", "when", "duration_ms", "times", "after_ms"];

impl<'de> Deserialize<'de> for FaultSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FaultSpec, D::Error> {
        d.deserialize_map(SpecVisitor)
    }
}

struct SpecVisitor;

impl<'de> Visitor<'de> for SpecVisitor {
    type Value = FaultSpec;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a fault: a map with kind, when and the kind's parameters")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FaultSpec, A::Error> {
        let mut name: Option<Option<String>> = None;
        let mut when: Option<When> = None;
        let mut duration_ms: Option<Option<u64>> = None;
        let mut times: Option<Option<u32>> = None;
        let mut after_ms: Option<Option<u64>> = None;
        let mut kind: Option<FaultKind> = None;
        let mut params: Vec<(String, Raw)> = Vec::new();
        fn once<T, E: de::Error>(slot: &Option<T>, field: &'static str) -> Result<(), E> {
            if slot.is_some() {
                Err(E::duplicate_field(field))
            } else {
                Ok(())
            }
        }
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => {
                    once(&name, "name")?;
                    name = Some(map.next_value()?);
                }
                "when" => {
                    once(&when, "when")?;
                    when = Some(map.next_value()?);
                }
                "duration_ms" => {
                    once(&duration_ms, "duration_ms")?;
                    duration_ms = Some(map.next_value()?);
                }
                "times" => {
                    once(&times, "times")?;
                    times = Some(map.next_value()?);
                }
                "after_ms" => {
                    once(&after_ms, "after_ms")?;
                    after_ms = Some(map.next_value()?);
                }
                "kind" => {
                    once(&kind, "kind")?;
                    kind = Some(map.next_value()?);
                }
                _ => {
                    let value = map.next_value::<Raw>()?;
                    params.push((key, value));
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        let when = when.ok_or_else(|| de::Error::missing_field("when"))?;
        let fault = parameters(kind, params)?;
        Ok(FaultSpec {
            name: name.flatten(),
            when,
            duration_ms: duration_ms.flatten(),
            times: times.flatten(),
            after_ms: after_ms.flatten(),
            kind: fault,
        })
    }
}

impl<'de> Deserialize<'de> for Fault {
    /// `kind` and the parameters, in any order.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fault, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fault;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map with kind and the kind's parameters")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fault, A::Error> {
                let mut kind = None;
                let mut params = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "kind" {
                        kind = Some(map.next_value::<FaultKind>()?);
                    } else {
                        let value = map.next_value::<Raw>()?;
                        params.push((key, value));
                    }
                }
                parameters(kind.ok_or_else(|| de::Error::missing_field("kind"))?, params)
            }
        }
        d.deserialize_map(V)
    }
}

/// The kind's parameters from the buffered entries, every error naming the
/// parameter it is about.
fn parameters<E: de::Error>(kind: FaultKind, params: Vec<(String, Raw)>) -> Result<Fault, E> {
    Fault::from_params(kind, ParamsDe(params)).map_err(|e| E::custom(e.explain(kind)))
}

/// A parameter's problem, tagged with the parameter: "`delay_ms`: …". The
/// loader reads the tag back with [`split_param_error`] to name the field.
pub fn param_error(param: &str, message: &str) -> String {
    format!("`{param}`: {message}")
}

/// The parameter and the message of a [`param_error`].
pub fn split_param_error(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('`')?;
    let (param, message) = rest.split_once("`: ")?;
    Some((param, message))
}

/// What went wrong in a kind's parameters, and with which one.
#[derive(Debug)]
pub(super) struct ParamError {
    field: Option<String>,
    problem: ParamProblem,
}

#[derive(Debug)]
enum ParamProblem {
    Unknown,
    Missing,
    Duplicate,
    Invalid(String),
}

impl ParamError {
    /// The error, about parameter `key` (it happened reading its value).
    fn within(self, key: &str) -> ParamError {
        match self.field {
            None => ParamError { field: Some(key.to_string()), problem: self.problem },
            Some(_) => ParamError { field: Some(key.to_string()), problem: ParamProblem::Invalid(self.to_string()) },
        }
    }

    /// What a user reads, tagged with the parameter.
    fn explain(self, kind: FaultKind) -> String {
        let Some(field) = self.field else { return self.to_string() };
        let message = match &self.problem {
            ParamProblem::Unknown if FaultKind::takers(&field).is_empty() => {
                let mut expected: Vec<&str> =
                    SPEC_FIELDS.iter().copied().filter(|f| *f != "duration_ms" || kind.takes(f)).collect();
                expected.extend(kind.params());
                let expected: Vec<String> = expected.iter().map(|f| format!("`{f}`")).collect();
                format!("unknown field `{field}`, expected one of {}", expected.join(", "))
            }
            ParamProblem::Unknown => does_not_take(kind, &field),
            ParamProblem::Missing => needs(kind, &field),
            ParamProblem::Duplicate => format!("duplicate field `{field}`"),
            ParamProblem::Invalid(m) => m.clone(),
        };
        param_error(&field, &message)
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = self.field.as_deref().unwrap_or("?");
        match &self.problem {
            ParamProblem::Unknown => write!(f, "unknown field `{field}`"),
            ParamProblem::Missing => write!(f, "missing field `{field}`"),
            ParamProblem::Duplicate => write!(f, "duplicate field `{field}`"),
            ParamProblem::Invalid(m) if self.field.is_some() => write!(f, "{field}: {m}"),
            ParamProblem::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ParamError {}

impl de::Error for ParamError {
    fn custom<T: fmt::Display>(msg: T) -> ParamError {
        ParamError { field: None, problem: ParamProblem::Invalid(msg.to_string()) }
    }
    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> ParamError {
        ParamError { field: Some(field.to_string()), problem: ParamProblem::Unknown }
    }
    fn missing_field(field: &'static str) -> ParamError {
        ParamError { field: Some(field.to_string()), problem: ParamProblem::Missing }
    }
    fn duplicate_field(field: &'static str) -> ParamError {
        ParamError { field: Some(field.to_string()), problem: ParamProblem::Duplicate }
    }
}

/// The buffered parameters, as the map a parameter struct reads.
struct ParamsDe(Vec<(String, Raw)>);

impl<'de> Deserializer<'de> for ParamsDe {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        v.visit_map(ParamsAccess { entries: self.0.into_iter(), value: None })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct ParamsAccess {
    entries: std::vec::IntoIter<(String, Raw)>,
    value: Option<(String, Raw)>,
}

impl<'de> MapAccess<'de> for ParamsAccess {
    type Error = ParamError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ParamError> {
        let Some((key, value)) = self.entries.next() else { return Ok(None) };
        let k: StringDeserializer<ParamError> = key.clone().into_deserializer();
        // An unknown key already names itself.
        let k = seed.deserialize(k).map_err(|e| if e.field.is_some() { e } else { e.within(&key) })?;
        self.value = Some((key, value));
        Ok(Some(k))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ParamError> {
        let (key, value) = self.value.take().ok_or_else(|| de::Error::custom("a value without a key"))?;
        seed.deserialize(value).map_err(|e| e.within(&key))
    }
}

/// A parameter's value as the document had it, kept until the kind is known.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Unit,
    Bool(bool),
    I64(i64),
    U64(u64),
    I128(i128),
    U128(u128),
    F64(f64),
    Str(String),
    Seq(Vec<Raw>),
    Map(Vec<(Raw, Raw)>),
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Raw;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Raw, E> {
                Ok(Raw::Bool(b))
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<Raw, E> {
                Ok(Raw::I64(x))
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<Raw, E> {
                Ok(Raw::U64(x))
            }
            fn visit_i128<E: de::Error>(self, x: i128) -> Result<Raw, E> {
                Ok(Raw::I128(x))
            }
            fn visit_u128<E: de::Error>(self, x: u128) -> Result<Raw, E> {
                Ok(Raw::U128(x))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Raw, E> {
                Ok(Raw::F64(x))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Raw, E> {
                Ok(Raw::Str(s.to_string()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Raw, E> {
                Ok(Raw::Str(s))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
                Ok(Raw::Unit)
            }
            fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
                Ok(Raw::Unit)
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Raw, D2::Error> {
                Raw::deserialize(d)
            }
            fn visit_newtype_struct<D2: Deserializer<'de>>(self, d: D2) -> Result<Raw, D2::Error> {
                Raw::deserialize(d)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Raw::Seq(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_entry()? {
                    v.push(e);
                }
                Ok(Raw::Map(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> IntoDeserializer<'de, ParamError> for Raw {
    type Deserializer = Raw;
    fn into_deserializer(self) -> Raw {
        self
    }
}

impl<'de> Deserializer<'de> for Raw {
    type Error = ParamError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        match self {
            Raw::Unit => v.visit_unit(),
            Raw::Bool(b) => v.visit_bool(b),
            Raw::I64(x) => v.visit_i64(x),
            Raw::U64(x) => v.visit_u64(x),
            Raw::I128(x) => v.visit_i128(x),
            Raw::U128(x) => v.visit_u128(x),
            Raw::F64(x) => v.visit_f64(x),
            Raw::Str(s) => v.visit_string(s),
            Raw::Seq(items) => {
                let mut seq = SeqDeserializer::new(items.into_iter());
                let out = v.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            Raw::Map(entries) => {
                let mut map = MapDeserializer::new(entries.into_iter());
                let out = v.visit_map(&mut map)?;
                map.end()?;
                Ok(out)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ParamError> {
        match self {
            Raw::Unit => v.visit_none(),
            other => v.visit_some(other),
        }
    }

    /// Unit variants (`one-way`, `response`) are written as strings.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, ParamError> {
        match self {
            Raw::Str(s) => v.visit_enum(IntoDeserializer::<ParamError>::into_deserializer(s)),
            other => other
                .deserialize_any(v)
                .map_err(|e| de::Error::custom(format!("{e} (expected one of {} for {name})", variants.join(", ")))),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, ParamError> {
        v.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}
