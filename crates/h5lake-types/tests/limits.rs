//! The bounds of `h5lake_types::limits`, on the inputs a hostile-client
//! test of the REST server found crashing or stalling it.

use h5lake_types::{
    element_to_json, fixed_to_json, json_elements, json_to_element, json_to_fixed, record,
    region_ref_bytes, Datatype, Shape, TypeError, MAX_COMPOUND_MEMBERS, MAX_ELEMENT_BYTES,
    MAX_ENUM_MEMBERS, MAX_RANK, MAX_TYPE_DEPTH,
};
use serde_json::{json, Value};

fn refused(t: &Value) -> String {
    match Datatype::from_json(t) {
        Err(e @ TypeError::InvalidType(_)) => e.to_string(),
        other => panic!("{t} gave {other:?}"),
    }
}

fn string(length: u64) -> Value {
    json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
           "strPad": "H5T_STR_NULLPAD", "length": length})
}

fn vstr() -> Value {
    json!({"class": "H5T_STRING", "length": "H5T_VARIABLE"})
}

fn array(dims: Value, base: Value) -> Value {
    json!({"class": "H5T_ARRAY", "dims": dims, "base": base})
}

fn compound(fields: impl IntoIterator<Item = (String, Value)>) -> Value {
    let fields: Vec<Value> = fields
        .into_iter()
        .map(|(name, t)| json!({"name": name, "type": t}))
        .collect();
    json!({"class": "H5T_COMPOUND", "fields": fields})
}

fn simple(dims: &[u64]) -> Value {
    json!({"class": "H5S_SIMPLE", "dims": dims})
}

#[test]
fn element_sizes_stop_at_hdf5s_32_bit_size_field() {
    let max = MAX_ELEMENT_BYTES as u64;
    assert_eq!(
        refused(&string(1 << 62)),
        "invalid datatype: string length 4611686018427387904 exceeds HDF5's element size \
         limit of 4294967295 bytes"
    );
    assert_eq!(
        Datatype::from_json(&string(max)).unwrap().fixed_size(),
        Some(MAX_ELEMENT_BYTES)
    );
    refused(&string(max + 1));
    refused(&json!({"class": "H5T_OPAQUE", "size": max + 1}));
    assert!(Datatype::from_json(&json!({"class": "H5T_OPAQUE", "size": max})).is_ok());

    // The product that wrapped to a zero size, and one byte over the bound.
    let msg = refused(&array(
        json!([1u64 << 40, 1u64 << 40]),
        json!("H5T_STD_U8LE"),
    ));
    assert!(
        msg.contains("array type of dims [1099511627776, 1099511627776]"),
        "{msg}"
    );
    refused(&array(json!([65536, 65536]), json!("H5T_STD_U8LE")));
    refused(&array(json!([u64::MAX, 2]), json!("H5T_STD_U8LE")));
    // 65535 * 65537 = 2^32 - 1
    let widest = Datatype::from_json(&array(json!([65535, 65537]), json!("H5T_STD_U8LE")));
    assert_eq!(widest.unwrap().fixed_size(), Some(MAX_ELEMENT_BYTES));

    // Variable-length parts count as the 16-byte heap ids HDF5 stores.
    refused(&array(json!([1u64 << 28]), vstr()));
    assert!(Datatype::from_json(&array(json!([(1u64 << 28) - 1]), vstr())).is_ok());

    // A compound's members add up; so do those of nested ones.
    let half = string(1 << 31);
    let msg = refused(&compound([
        ("a".into(), half.clone()),
        ("b".into(), half.clone()),
    ]));
    assert!(msg.contains("compound type of 4294967296 bytes"), "{msg}");
    refused(&compound([
        ("x".into(), compound([("a".into(), half.clone())])),
        ("y".into(), half),
    ]));
    let inner = compound([("a".into(), string((1 << 31) - 1))]);
    assert!(Datatype::from_json(&compound([
        ("x".into(), inner.clone()),
        ("y".into(), inner)
    ]))
    .is_ok());
}

#[test]
fn array_types_have_1_to_32_nonzero_dims() {
    let u8t = json!("H5T_STD_U8LE");
    assert!(Datatype::from_json(&array(json!(vec![1; MAX_RANK]), u8t.clone())).is_ok());
    let msg = refused(&array(json!(vec![1; MAX_RANK + 1]), u8t.clone()));
    assert!(msg.contains("1 to 32 dimensions"), "{msg}");
    refused(&array(json!([]), u8t.clone()));
    refused(&array(json!([2, 0]), u8t.clone()));
    refused(&array(json!(vec![1; 100_000]), u8t));
}

#[test]
fn shapes_of_rank_over_32_are_refused() {
    for rank in [100_000, 20_000, MAX_RANK + 1] {
        let e = Shape::from_json(&simple(&vec![1; rank])).unwrap_err();
        assert!(
            matches!(&e, TypeError::InvalidShape(m) if m.contains("limit of 32 dimensions")),
            "{e}"
        );
    }
    let s = Shape::from_json(&simple(&[1; MAX_RANK])).unwrap();
    assert_eq!(s.num_elements(), 1);
    // A value of the widest shape converts both ways.
    let t = Datatype::from_json(&json!("H5T_STD_I16LE")).unwrap();
    let mut v = json!(-3);
    for _ in 0..MAX_RANK {
        v = json!([v]);
    }
    let b = json_to_fixed(&t, &s.dims(), &v).unwrap();
    assert_eq!(fixed_to_json(&t, &b, &s.dims()).unwrap(), v);
    // Dimensions handed in from elsewhere are bounded too.
    let deep = vec![1; MAX_RANK + 1];
    assert!(json_elements(&json!(1), &deep).is_err());
    assert!(fixed_to_json(&t, &b, &deep).is_err());
}

#[test]
fn shapes_count_their_elements_in_a_u64() {
    assert!(Shape::from_json(&simple(&[1 << 40, 1 << 40])).is_err());
    assert!(Shape::from_json(&simple(&[u64::MAX, 2])).is_err());
    let s = Shape::from_json(&simple(&[u64::MAX, 1])).unwrap();
    assert_eq!(s.num_elements(), u64::MAX);
    let empty = Shape::from_json(&simple(&[1 << 40, 1 << 40, 0])).unwrap();
    assert_eq!(empty.num_elements(), 0);
    let built = Shape::Simple {
        dims: vec![1 << 40, 1 << 40],
        maxdims: None,
    };
    assert_eq!(built.num_elements(), u64::MAX, "saturates, no overflow");
}

#[test]
fn member_counts_stop_at_hdf5s_16_bit_count() {
    let int = json!("H5T_STD_U8LE");
    for n in [MAX_COMPOUND_MEMBERS + 1, 100_000] {
        let msg = refused(&compound((0..n).map(|i| (format!("f{i}"), int.clone()))));
        assert!(msg.contains("exceeds HDF5's limit of 65535"), "{msg}");
    }
    let dup = compound([("a".into(), int.clone()), ("a".into(), int.clone())]);
    assert!(refused(&dup).contains("duplicate field name \"a\""));

    let members = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"name": format!("m{i}"), "value": i}))
            .collect()
    };
    let i32t = json!("H5T_STD_I32LE");
    let over = json!({"class": "H5T_ENUM", "base": i32t, "members": members(MAX_ENUM_MEMBERS + 1)});
    assert!(refused(&over).contains("enum type of 65536 members"));
    let mapping: serde_json::Map<String, Value> = (0..=MAX_ENUM_MEMBERS)
        .map(|i| (format!("m{i}"), json!(i)))
        .collect();
    refused(&json!({"class": "H5T_ENUM", "base": i32t, "mapping": mapping}));
    let dup = json!({"class": "H5T_ENUM", "base": i32t,
                     "members": [{"name": "A", "value": 0}, {"name": "A", "value": 1}]});
    assert!(refused(&dup).contains("duplicate member name \"A\""));
}

#[test]
fn types_nest_at_most_32_deep() {
    let nested = |levels: usize| {
        let mut t = json!("H5T_STD_I8LE");
        for i in 0..levels {
            t = match i % 4 {
                0 => json!({"class": "H5T_VLEN", "base": t}),
                1 => array(json!([1]), t),
                2 => compound([("x".into(), t)]),
                _ => json!({"class": "H5T_VLEN", "base": t}),
            };
        }
        t
    };
    // An atomic type has depth 1: 31 levels around it reach the bound.
    assert!(Datatype::from_json(&nested(MAX_TYPE_DEPTH - 1)).is_ok());
    let msg = refused(&nested(MAX_TYPE_DEPTH));
    assert!(msg.contains("limit of 32 levels"), "{msg}");
    // Far deeper than any stack would take, refused without recursing.
    refused(&nested(1000));
}

#[test]
fn a_recorded_layout_cannot_claim_a_huge_size() {
    let stored = Datatype::from_json(&compound([("a".into(), json!("H5T_STD_I32LE"))])).unwrap();
    let claim = |size: u64| json!({"h5lake": {"offsets": [0], "size": size}});
    assert!(stored.laid_out_as_in(&claim(8)).is_some());
    assert_eq!(stored.laid_out_as_in(&claim(1 << 62)), None);
}

#[test]
fn region_references_have_at_most_32_coordinates() {
    let points = |rank: usize| json!({"id": "d-1", "select_type": "H5S_SEL_POINTS", "selection": [vec![0; rank]]});
    assert!(region_ref_bytes(&points(MAX_RANK)).is_ok());
    assert!(region_ref_bytes(&points(MAX_RANK + 1)).is_err());
}

#[test]
fn float_layouts_with_overflowing_positions_are_refused() {
    let layout = |offset: u64, bias: u64| {
        json!({"class": "H5T_FLOAT", "size": 16, "order": "H5T_ORDER_LE", "h5lake": {"float": {
            "precision": 128, "offset": offset, "sign": 127,
            "exponent": {"pos": 95, "size": 32, "bias": bias},
            "mantissa": {"pos": 0, "size": 95, "norm": "H5T_NORM_IMPLIED"},
            "pad": {"lsb": "H5T_PAD_ZERO", "msb": "H5T_PAD_ZERO", "internal": "H5T_PAD_ZERO"}}}})
    };
    refused(&layout(u64::MAX, 1));
    refused(&layout(u64::MAX - 100, 1));
    // The largest bias puts tiny numbers 2^32 binary orders below 1: each
    // still reads in a few steps.
    let t = Datatype::from_json(&layout(0, u64::from(u32::MAX))).unwrap();
    let mut b = vec![0u8; 16];
    for i in 0..2000u32 {
        b[..4].copy_from_slice(&i.to_le_bytes());
        element_to_json(&t, &b).unwrap();
    }
}

/// Parsing used to compare each member's name with every earlier one, and
/// encoding enum names scanned the whole mapping per element: seconds for
/// tens of thousands of members. Everything here is linear (a quadratic
/// path would take minutes in a debug build).
#[test]
fn widest_compound_and_enum_convert_in_linear_time() {
    let n = MAX_COMPOUND_MEMBERS;
    let t = Datatype::from_json(&compound(
        (0..n).map(|i| (format!("f{i}"), json!("H5T_STD_U8LE"))),
    ))
    .unwrap();
    assert_eq!(t.fixed_size(), Some(n));
    assert_eq!(Datatype::from_json(&t.to_json()).unwrap(), t);

    let element: Vec<Value> = (0..n).map(|i| json!(i % 256)).collect();
    let as_list = Value::Array(element.clone());
    let bytes = json_to_fixed(&t, &[1], &json!([as_list])).unwrap();
    assert_eq!(bytes.len(), n);
    assert_eq!(fixed_to_json(&t, &bytes, &[1]).unwrap(), json!([as_list]));
    let as_object: serde_json::Map<String, Value> = element
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("f{i}"), v.clone()))
        .collect();
    assert_eq!(
        json_to_element(&t, &Value::Object(as_object)).unwrap(),
        bytes
    );
    assert_eq!(element_to_json(&t, &bytes).unwrap(), as_list);

    // The same with a variable-length member: a record.
    let mut fields: Vec<(String, Value)> = (0..n - 1)
        .map(|i| (format!("f{i}"), json!("H5T_STD_U8LE")))
        .collect();
    fields.push(("s".into(), vstr()));
    let r = Datatype::from_json(&compound(fields)).unwrap();
    let mut value = element[..n - 1].to_vec();
    value.push(json!("tail"));
    let value = Value::Array(value);
    let mut rec = Vec::new();
    record::push_json(&r, &value, &mut rec).unwrap();
    assert_eq!(record::record_len(&r, &rec, 0).unwrap(), rec.len());
    let mut pos = 0;
    assert_eq!(record::read_json(&r, &rec, &mut pos).unwrap(), value);

    // Every name of the widest enum, written as names.
    let members: Vec<Value> = (0..MAX_ENUM_MEMBERS)
        .map(|i| json!({"name": format!("m{i}"), "value": i}))
        .collect();
    let e = Datatype::from_json(
        &json!({"class": "H5T_ENUM", "base": "H5T_STD_U16LE", "members": members}),
    )
    .unwrap();
    let names: Vec<Value> = (0..MAX_ENUM_MEMBERS)
        .map(|i| json!(format!("m{i}")))
        .collect();
    let b = json_to_fixed(&e, &[MAX_ENUM_MEMBERS as u64], &Value::Array(names)).unwrap();
    let back = fixed_to_json(&e, &b, &[MAX_ENUM_MEMBERS as u64]).unwrap();
    assert_eq!(back, json!((0..MAX_ENUM_MEMBERS).collect::<Vec<_>>()));
}
