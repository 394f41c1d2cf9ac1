//! Property tests: hostile type and shape JSON (deep nesting, huge sizes
//! and dims, many members, garbage) never panics the parsers, and whatever
//! they accept keeps to the bounds of `h5lake_types::limits` and converts
//! values without panicking.

use h5lake_types::{
    element_to_json, json_to_element, record, region_ref_bytes, region_ref_json, Datatype, Shape,
    MAX_COMPOUND_MEMBERS, MAX_ELEMENT_BYTES, MAX_ENUM_MEMBERS, MAX_RANK, MAX_TYPE_DEPTH, UNLIMITED,
};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};

/// Mostly small counts, often the numbers on either side of a bound.
fn number() -> BoxedStrategy<Value> {
    let edges = vec![
        0u64,
        1,
        16,
        (1 << 28) - 1,
        1 << 28,
        1 << 31,
        u64::from(u32::MAX) - 1,
        u64::from(u32::MAX),
        u64::from(u32::MAX) + 1,
        1 << 40,
        1 << 62,
        u64::MAX,
    ];
    prop_oneof![
        6 => (0u64..70).prop_map(Value::from),
        3 => select(edges).prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<f64>().prop_map(|f| json!(f)),
        1 => Just(json!("H5T_VARIABLE")),
        1 => Just(Value::Null),
    ]
    .boxed()
}

fn name() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(vec!["a", "b", "r", "i", "FALSE", "TRUE", ""]).prop_map(String::from),
        1 => "\\PC{0,6}",
    ]
    .boxed()
}

/// Semi-structured garbage: the keys the parsers look for, any values.
fn any_json() -> BoxedStrategy<Value> {
    let keys = vec![
        "class",
        "base",
        "dims",
        "maxdims",
        "fields",
        "name",
        "type",
        "length",
        "size",
        "mapping",
        "members",
        "value",
        "h5lake",
        "float",
        "tag",
        "id",
        "select_type",
        "selection",
        "x",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        "\\PC{0,8}".prop_map(Value::from),
        select(vec![
            "H5T_COMPOUND",
            "H5T_ARRAY",
            "H5T_VLEN",
            "H5S_SIMPLE",
            "H5T_STD_I8LE"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(select(keys.clone()), inner, 0..4).prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
    .boxed()
}

fn int_name() -> BoxedStrategy<String> {
    let names = vec![
        "H5T_STD_I8LE",
        "H5T_STD_U16BE",
        "H5T_STD_I32LE",
        "H5T_STD_U64BE",
    ];
    select(names).prop_map(String::from).boxed()
}

fn base_name() -> BoxedStrategy<String> {
    let valid = vec!["H5T_IEEE_F16LE", "H5T_IEEE_F32BE", "H5T_IEEE_F64LE"];
    let invalid = vec![
        "H5T_STD_I24LE",
        "H5T_STD_LE",
        "H5T_STD_ILE",
        "H5T_IEEE_F",
        "LE",
        "",
    ];
    prop_oneof![
        8 => int_name(),
        4 => select(valid).prop_map(String::from),
        1 => select(invalid).prop_map(String::from),
        1 => "[A-Z0-9_]{0,16}",
    ]
    .boxed()
}

/// An array extent: mostly small and valid.
fn dim() -> BoxedStrategy<Value> {
    prop_oneof![6 => (1u64..5).prop_map(Value::from), 2 => number()].boxed()
}

fn float_layout() -> BoxedStrategy<Value> {
    let pos = || prop_oneof![4 => (0u64..130).prop_map(Value::from), 1 => number()];
    let norm = select(vec![
        "H5T_NORM_IMPLIED",
        "H5T_NORM_MSBSET",
        "H5T_NORM_NONE",
        "X",
    ]);
    let pad = || select(vec!["H5T_PAD_ZERO", "H5T_PAD_ONE", "H5T_PAD_BACKGROUND"]);
    (
        prop_oneof![(1u64..18).prop_map(Value::from), number()],
        (pos(), pos(), pos()),
        (pos(), pos(), number()),
        (pos(), pos(), norm),
        (pad(), pad(), pad(), any::<bool>()),
    )
        .prop_map(
            |(size, (precision, offset, sign), (ep, es, bias), (mp, ms, norm), (l, m, i, be))| {
                json!({"class": "H5T_FLOAT", "size": size,
                       "order": if be { "H5T_ORDER_BE" } else { "H5T_ORDER_LE" },
                       "h5lake": {"float": {
                           "precision": precision, "offset": offset, "sign": sign,
                           "exponent": {"pos": ep, "size": es, "bias": bias},
                           "mantissa": {"pos": mp, "size": ms, "norm": norm},
                           "pad": {"lsb": l, "msb": m, "internal": i}}}})
            },
        )
        .boxed()
}

fn leaf_type() -> BoxedStrategy<Value> {
    let charset = select(vec![
        "H5T_CSET_ASCII",
        "H5T_CSET_ASCII",
        "H5T_CSET_UTF8",
        "H5T_CSET_X",
    ]);
    let strpad = select(vec![
        "H5T_STR_NULLTERM",
        "H5T_STR_NULLPAD",
        "H5T_STR_SPACEPAD",
    ]);
    let ref_base = select(vec!["H5T_STD_REF_OBJ", "H5T_STD_REF_DSETREG", "X"]);
    prop_oneof![
        3 => base_name().prop_map(Value::from),
        3 => (select(vec!["H5T_INTEGER", "H5T_FLOAT"]), base_name(), any::<bool>()).prop_map(
            |(class, base, bitfield)| {
                let mut t = json!({"class": class, "base": base});
                if bitfield {
                    t["h5lake"] = json!({"class": "H5T_BITFIELD"});
                }
                t
            }
        ),
        3 => (prop_oneof![dim(), number()], charset, strpad).prop_map(|(length, c, p)| {
            json!({"class": "H5T_STRING", "length": length, "charSet": c, "strPad": p})
        }),
        2 => (number(), proptest::option::of("\\PC{0,6}")).prop_map(|(size, tag)| {
            json!({"class": "H5T_OPAQUE", "size": size, "tag": tag})
        }),
        1 => ref_base.prop_map(|b| json!({"class": "H5T_REFERENCE", "base": b})),
        2 => float_layout(),
        1 => Just(json!({"class": "H5T_FLOAT", "size": 16, "h5lake": {"float": {
            "precision": 80, "offset": 0, "sign": 79,
            "exponent": {"pos": 64, "size": 15, "bias": 16383},
            "mantissa": {"pos": 0, "size": 64, "norm": "H5T_NORM_NONE"},
            "pad": {"lsb": "H5T_PAD_ZERO", "msb": "H5T_PAD_ZERO", "internal": "H5T_PAD_ZERO"}}}})),
        1 => any_json(),
    ]
    .boxed()
}

fn compound_of(fields: Vec<(String, Value)>, complex: bool) -> Value {
    let fields: Vec<Value> = fields
        .into_iter()
        .map(|(name, t)| json!({"name": name, "type": t}))
        .collect();
    let mut t = json!({"class": "H5T_COMPOUND", "fields": fields});
    if complex {
        t["h5lake"] = json!({"class": "H5T_COMPLEX"});
    }
    t
}

fn enum_of(base: Value, members: Vec<(String, Value)>, as_list: bool) -> Value {
    if as_list {
        let members: Vec<Value> = members
            .into_iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect();
        json!({"class": "H5T_ENUM", "base": base, "members": members})
    } else {
        let mapping: serde_json::Map<String, Value> = members.into_iter().collect();
        json!({"class": "H5T_ENUM", "base": base, "mapping": mapping})
    }
}

fn type_json() -> BoxedStrategy<Value> {
    leaf_type()
        .prop_recursive(8, 64, 6, |inner| {
            let dims = prop_oneof![
                4 => prop::collection::vec(dim(), 0..5),
                1 => prop::collection::vec(Just(json!(1)), (MAX_RANK - 1)..(MAX_RANK + 3)),
            ];
            let enum_base = prop_oneof![4 => int_name().prop_map(Value::from), 1 => inner.clone()];
            prop_oneof![
                (
                    prop::collection::vec((name(), inner.clone()), 0..5),
                    prop::bool::weighted(0.1)
                )
                    .prop_map(|(fields, complex)| compound_of(fields, complex)),
                (dims, inner.clone()).prop_map(|(dims, base)| {
                    json!({"class": "H5T_ARRAY", "dims": dims, "base": base})
                }),
                inner
                    .clone()
                    .prop_map(|base| json!({"class": "H5T_VLEN", "base": base})),
                (
                    enum_base,
                    prop::collection::vec((name(), prop_oneof![dim(), number()]), 0..5),
                    any::<bool>()
                )
                    .prop_map(|(base, members, as_list)| enum_of(base, members, as_list)),
            ]
        })
        .boxed()
}

/// A chain of containers around one leaf (an enum or a complex type at
/// the bottom), often right at the bound, now and then far beyond it.
fn deep_type() -> BoxedStrategy<Value> {
    let levels = prop_oneof![
        3 => prop::collection::vec(0u8..3, (MAX_TYPE_DEPTH - 4)..(MAX_TYPE_DEPTH + 2)),
        1 => prop::collection::vec(0u8..3, 0..200),
    ];
    let bottom = prop_oneof![
        leaf_type(),
        int_name().prop_map(|b| enum_of(json!(b), vec![("A".into(), json!(0))], false)),
        Just(compound_of(
            vec![
                ("r".into(), json!("H5T_IEEE_F32LE")),
                ("i".into(), json!("H5T_IEEE_F32LE"))
            ],
            true
        )),
    ];
    (levels, bottom)
        .prop_map(|(levels, leaf)| {
            levels.into_iter().fold(leaf, |t, level| match level {
                0 => json!({"class": "H5T_VLEN", "base": t}),
                1 => json!({"class": "H5T_ARRAY", "dims": [2], "base": t}),
                _ => compound_of(vec![("x".into(), t)], false),
            })
        })
        .boxed()
}

/// Compounds and enums of about as many members as HDF5 counts, now and
/// then, of a member type that may be huge itself.
fn wide_type() -> BoxedStrategy<Value> {
    let count = prop_oneof![
        30 => 0usize..4,
        1 => (MAX_COMPOUND_MEMBERS - 1)..(MAX_COMPOUND_MEMBERS + 2),
    ];
    (count, leaf_type(), any::<bool>())
        .prop_map(|(n, member, as_enum)| {
            if as_enum {
                let members = (0..n).map(|i| (format!("m{i}"), json!(i))).collect();
                enum_of(json!("H5T_STD_U16LE"), members, true)
            } else {
                compound_of(
                    (0..n).map(|i| (format!("f{i}"), member.clone())).collect(),
                    false,
                )
            }
        })
        .boxed()
}

fn depth(t: &Datatype) -> usize {
    1 + match t {
        Datatype::Compound { fields, .. } => {
            fields.iter().map(|f| depth(&f.dtype)).max().unwrap_or(0)
        }
        Datatype::Array { base, .. } | Datatype::Vlen { base } | Datatype::Enum { base, .. } => {
            depth(base)
        }
        Datatype::Complex { part } => depth(part),
        _ => 0,
    }
}

/// How many parts an element has, expanded (saturating).
fn parts(t: &Datatype) -> u64 {
    match t {
        Datatype::Compound { fields, .. } => fields
            .iter()
            .fold(0, |n, f| n.saturating_add(parts(&f.dtype))),
        Datatype::Array { base, dims } => {
            dims.iter().fold(parts(base), |n, &d| n.saturating_mul(d))
        }
        Datatype::Complex { .. } => 2,
        _ => 1,
    }
}

fn check_bounds(t: &Datatype) -> Result<(), TestCaseError> {
    match t {
        Datatype::Compound { fields, .. } => {
            prop_assert!(!fields.is_empty() && fields.len() <= MAX_COMPOUND_MEMBERS);
            fields.iter().try_for_each(|f| check_bounds(&f.dtype))
        }
        Datatype::Array { base, dims } => {
            prop_assert!((1..=MAX_RANK).contains(&dims.len()), "{dims:?}");
            prop_assert!(dims.iter().all(|&d| d >= 1), "{dims:?}");
            check_bounds(base)
        }
        Datatype::Enum { base, mapping } => {
            prop_assert!(mapping.len() <= MAX_ENUM_MEMBERS);
            check_bounds(base)
        }
        Datatype::Vlen { base } => check_bounds(base),
        Datatype::Complex { part } => check_bounds(part),
        _ => Ok(()),
    }
}

/// Whatever `from_json` accepts is within the bounds, reads back as
/// itself, and its (zero, empty) element converts to JSON and back.
fn check_type(v: &Value) -> Result<(), TestCaseError> {
    let Ok(t) = Datatype::from_json(v) else {
        return Ok(());
    };
    if let Some(n) = t.fixed_size() {
        prop_assert!(n <= MAX_ELEMENT_BYTES, "{t:?}");
    }
    prop_assert!(depth(&t) <= MAX_TYPE_DEPTH, "{t:?}");
    check_bounds(&t)?;
    prop_assert_eq!(&Datatype::from_json(&t.to_json()).unwrap(), &t);
    if parts(&t) > 4096 || t.fixed_size().is_some_and(|n| n > 1 << 16) {
        return Ok(());
    }
    if let Some(n) = t.fixed_size() {
        let zeros = vec![0u8; n];
        let value = element_to_json(&t, &zeros).unwrap();
        prop_assert_eq!(json_to_element(&t, &value).unwrap(), zeros);
    } else {
        let empty = record::empty_record(&t);
        let value = record::read_json(&t, &empty, &mut 0).unwrap();
        let mut back = Vec::new();
        record::push_json(&t, &value, &mut back).unwrap();
        prop_assert_eq!(back, empty);
    }
    Ok(())
}

fn shape_json() -> BoxedStrategy<Value> {
    let dims = prop_oneof![
        4 => prop::collection::vec(number(), 0..6),
        1 => prop::collection::vec(Just(json!(1)), (MAX_RANK - 1)..(MAX_RANK + 3)),
        1 => prop::collection::vec(number(), 20..40),
    ];
    let class = select(vec![
        "H5S_SIMPLE",
        "H5S_SIMPLE",
        "H5S_SCALAR",
        "H5S_NULL",
        "H5S_X",
    ]);
    // maxdims: none, the dims with some unlimited, or anything.
    let maxdims = prop_oneof![
        Just(None),
        prop::collection::vec(0u8..3, 0..40).prop_map(Some),
    ];
    (class, dims, maxdims, any_json())
        .prop_map(|(class, dims, mask, garbage)| {
            let mut s = json!({"class": class, "dims": dims});
            match mask {
                None => {}
                Some(m) if m.len() > 35 => s["maxdims"] = garbage,
                Some(m) => {
                    let maxdims: Vec<Value> = dims
                        .iter()
                        .zip(m.iter().chain(std::iter::repeat(&0)))
                        .map(|(d, k)| match k {
                            0 => d.clone(),
                            1 => json!("H5S_UNLIMITED"),
                            _ => json!(0),
                        })
                        .collect();
                    s["maxdims"] = json!(maxdims);
                }
            }
            s
        })
        .boxed()
}

proptest! {
    #[test]
    fn hostile_types_parse_within_bounds(v in type_json()) {
        check_type(&v)?;
    }

    #[test]
    fn deeply_nested_types_parse_within_bounds(v in deep_type()) {
        check_type(&v)?;
    }

    #[test]
    fn wide_types_parse_within_bounds(v in wide_type()) {
        check_type(&v)?;
    }

    #[test]
    fn garbage_types_and_values_never_panic(t in type_json(), v in any_json()) {
        let _ = Datatype::from_json(&v);
        if let Ok(t) = Datatype::from_json(&t) {
            if t.fixed_size().is_some_and(|n| n <= 1 << 16) {
                let _ = json_to_element(&t, &v);
            } else if parts(&t) <= 4096 {
                let mut out = Vec::new();
                let _ = record::push_json(&t, &v, &mut out);
            }
        }
    }

    #[test]
    fn hostile_shapes_parse_within_bounds(v in shape_json()) {
        let Ok(s) = Shape::from_json(&v) else { return Ok(()) };
        prop_assert_eq!(Shape::from_json(&s.to_json()).unwrap(), s.clone());
        let dims = s.dims();
        prop_assert!(dims.len() <= MAX_RANK);
        let exact = if dims.contains(&0) {
            Some(0)
        } else {
            dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
        };
        prop_assert_eq!(exact, Some(s.num_elements()));
        prop_assert!(s.maxdims().iter().zip(&dims).all(|(&m, &d)| m == UNLIMITED || m >= d));
    }

    #[test]
    fn garbage_shapes_and_region_references_never_panic(v in any_json()) {
        let _ = Shape::from_json(&v);
        if let Ok(b) = region_ref_bytes(&v) {
            prop_assert!(region_ref_json(&b).is_ok());
        }
    }
}
