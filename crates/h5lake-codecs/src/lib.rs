//! The filter pipeline applied to each chunk's bytes.
//!
//! Filters run in h5py's order on write (scaleoffset → shuffle → compression →
//! fletcher32) and in reverse on read. The JSON forms are HSDS's
//! `creationProperties.filters` entries, so a dataset document written by HSDS
//! decodes here and ours decode there.
//!
//! Two byte layouts exist for the same filter list, see [`ChunkFormat`]:
//! libhdf5's (what link-mode chunks inside `.h5` files hold) and HSDS's (HSDS
//! 1.0 puts every compressed chunk in a Blosc frame and ignores fletcher32).
//! Decoding recognises HSDS's Blosc frames on its own, so one pipeline reads
//! chunks from either writer.

pub mod aec;
pub mod bitshuffle;
mod blosc;
mod deflate;
mod error;
mod fletcher;
mod lz4;
mod lzf;
pub mod scaleoffset;
pub mod shuffle;
pub mod szip;
mod zstd_codec;

pub use blosc::{BloscCompressor, BloscShuffle};
pub use error::CodecError;
use serde_json::{json, Map, Value};

/// Result alias for codec operations.
pub type Result<T> = std::result::Result<T, CodecError>;

pub(crate) fn corrupt(filter: &'static str, reason: impl Into<String>) -> CodecError {
    CodecError::Corrupt {
        filter,
        reason: reason.into(),
    }
}

/// A zeroed buffer whose allocation failure is an error, not an abort: sizes
/// come from chunk headers, which may be corrupt.
pub(crate) fn alloc_zeroed(n: usize, filter: &'static str) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| corrupt(filter, format!("cannot allocate {n} bytes")))?;
    v.resize(n, 0);
    Ok(v)
}

/// HDF5 filter ids (`H5Z_filter_t`) used in the JSON `id` key.
pub mod filter_id {
    pub const DEFLATE: u64 = 1;
    pub const SHUFFLE: u64 = 2;
    pub const FLETCHER32: u64 = 3;
    pub const SZIP: u64 = 4;
    pub const NBIT: u64 = 5;
    pub const SCALEOFFSET: u64 = 6;
    pub const LZF: u64 = 32000;
    pub const BLOSC: u64 = 32001;
    pub const SNAPPY: u64 = 32003;
    pub const LZ4: u64 = 32004;
    pub const LZ4HC: u64 = 32005;
    pub const BITSHUFFLE: u64 = 32008;
    pub const ZSTD: u64 = 32015;
}

/// Most filters one pipeline holds (HDF5's `H5Z_MAX_NFILTERS`): a longer
/// one could not be written to an HDF5 file, and costs each chunk more.
pub const MAX_FILTERS: usize = 32;

/// `entries`, unless more than a pipeline holds.
fn check_count(entries: &[Value]) -> Result<&[Value]> {
    if entries.len() > MAX_FILTERS {
        return Err(CodecError::Invalid(format!(
            "{} filters: a pipeline holds at most {MAX_FILTERS}, as in HDF5",
            entries.len()
        )));
    }
    Ok(entries)
}

/// One filter of a chunk pipeline.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Filter {
    /// HDF5 byte shuffle (filter id 2): byte `k` of every element together.
    Shuffle,
    /// zlib/deflate (id 1), level 0..=9.
    Deflate { level: u32 },
    /// Zstandard (id 32015), level 1..=22 (0 = zstd's default).
    Zstd { level: i32 },
    /// LZ4 in the HDF5 filter framing (id 32004).
    Lz4,
    /// LZF, h5py's own fast compressor (id 32000).
    Lzf,
    /// Fletcher-32 checksum appended to the chunk (id 3).
    Fletcher32,
    /// Blosc1 container (id 32001). `level` is Blosc's clevel 0..=9.
    Blosc {
        compressor: BloscCompressor,
        level: u8,
        shuffle: BloscShuffle,
    },
    /// HDF5's scale-offset (id 6), lossy for floats. `cd` is the client
    /// data libhdf5's `set_local` leaves (20 values: the scale type and
    /// factor, then the element type, chunk size and fill value the chunks
    /// are coded against); see [`complete_filters`].
    ScaleOffset { cd: Vec<u32> },
    /// szip (id 4), CCSDS adaptive entropy coding. `cd` is options mask,
    /// pixels per block, bits per pixel, pixels per scanline.
    Szip { cd: Vec<u32> },
    /// Bitshuffle (id 32008): bits transposed in blocks of `block` elements
    /// (0: the library's default), then each block compressed when
    /// `compression` is [`bitshuffle::LZ4`] or [`bitshuffle::ZSTD`] (at
    /// `level`). See [`bitshuffle`].
    Bitshuffle {
        block: u32,
        compression: u32,
        level: u32,
    },
    /// A filter a stored dataset names that h5lake cannot apply (a codec
    /// it lacks, parameters it cannot read): its HSDS `entry` is kept as
    /// it was, so the dataset's description stays whole, and every chunk
    /// through it fails with `reason` (see [`Pipeline::described`]).
    Unavailable { entry: Value, reason: String },
}

/// Which writer's byte layout a chunk follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChunkFormat {
    /// Exactly what libhdf5 and its filter plugins produce: shuffle, zlib
    /// stream, HDF5-LZ4 framing, plain zstd frame, appended fletcher32. On
    /// read, an HSDS Blosc frame found where a compressor's output should be
    /// is accepted too (it then already contains the shuffle).
    #[default]
    Hdf5,
    /// What HSDS 1.0 stores (`storUtil._compress`): with any compressor the
    /// chunk is one Blosc frame (deflate → blosc zlib) that also carries the
    /// byte shuffle; without one the bytes are stored as they are (HSDS
    /// applies neither a lone shuffle nor fletcher32 on write).
    Hsds,
}

/// An ordered filter pipeline (write order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pipeline {
    pub filters: Vec<Filter>,
}

const KNOWN_UNSUPPORTED: &[(u64, &str, &str)] = &[
    (filter_id::NBIT, "H5Z_FILTER_NBIT", "nbit"),
    (filter_id::SNAPPY, "H5Z_FILTER_SNAPPY", "snappy"),
];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Deflate,
    Shuffle,
    Fletcher32,
    Zstd,
    Lz4,
    Lzf,
    Blosc,
    ScaleOffset,
    Szip,
    Bitshuffle,
}

fn kind_from_id(id: u64) -> Option<Kind> {
    Some(match id {
        filter_id::DEFLATE => Kind::Deflate,
        filter_id::SHUFFLE => Kind::Shuffle,
        filter_id::FLETCHER32 => Kind::Fletcher32,
        filter_id::ZSTD => Kind::Zstd,
        filter_id::LZ4 => Kind::Lz4,
        filter_id::LZF => Kind::Lzf,
        // HSDS's lz4hc is Blosc with that codec (a Blosc frame per chunk).
        filter_id::BLOSC | filter_id::LZ4HC => Kind::Blosc,
        filter_id::SCALEOFFSET => Kind::ScaleOffset,
        filter_id::SZIP => Kind::Szip,
        filter_id::BITSHUFFLE => Kind::Bitshuffle,
        _ => return None,
    })
}

fn kind_from_class(class: &str) -> Option<Kind> {
    Some(match class {
        "H5Z_FILTER_DEFLATE" => Kind::Deflate,
        "H5Z_FILTER_SHUFFLE" => Kind::Shuffle,
        "H5Z_FILTER_FLETCHER32" => Kind::Fletcher32,
        "H5Z_FILTER_ZSTD" => Kind::Zstd,
        "H5Z_FILTER_LZ4" => Kind::Lz4,
        "H5Z_FILTER_LZF" => Kind::Lzf,
        "H5Z_FILTER_BLOSC" | "H5Z_FILTER_LZ4HC" => Kind::Blosc,
        "H5Z_FILTER_SCALEOFFSET" => Kind::ScaleOffset,
        "H5Z_FILTER_SZIP" => Kind::Szip,
        "H5Z_FILTER_BITSHUFFLE" => Kind::Bitshuffle,
        _ => return None,
    })
}

fn kind_from_name(name: &str) -> Option<Kind> {
    Some(match name.to_ascii_lowercase().as_str() {
        "deflate" | "gzip" | "zlib" => Kind::Deflate,
        "shuffle" => Kind::Shuffle,
        "fletcher32" => Kind::Fletcher32,
        "zstd" => Kind::Zstd,
        "lz4" => Kind::Lz4,
        "lzf" => Kind::Lzf,
        "blosc" | "blosclz" | "lz4hc" => Kind::Blosc,
        "scaleoffset" => Kind::ScaleOffset,
        "szip" => Kind::Szip,
        "bitshuffle" => Kind::Bitshuffle,
        _ => return None,
    })
}

/// Names an unrecognised filter as helpfully as the entry allows.
fn describe_unknown(id: Option<u64>, class: Option<&str>, name: Option<&str>) -> String {
    let known = KNOWN_UNSUPPORTED.iter().find(|(kid, kclass, kname)| {
        id == Some(*kid)
            || class == Some(*kclass)
            || name.is_some_and(|n| n.eq_ignore_ascii_case(kname))
    });
    if let Some((kid, _, kname)) = known {
        return format!("{kname} (filter id {kid})");
    }
    let mut parts = Vec::new();
    if let Some(n) = name {
        parts.push(n.to_string());
    }
    if let Some(c) = class {
        if c != "H5Z_FILTER_USER" || parts.is_empty() {
            parts.push(c.to_string());
        }
    }
    if let Some(i) = id {
        parts.push(format!("filter id {i}"));
    }
    if parts.is_empty() {
        "filter entry with no id, class or name".into()
    } else {
        parts.join(", ")
    }
}

fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn as_i64(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn int_param(obj: &Map<String, Value>, keys: &[&str], what: &str) -> Result<Option<i64>> {
    for k in keys {
        if let Some(v) = obj.get(*k) {
            if v.is_null() {
                continue;
            }
            return as_i64(v).map(Some).ok_or_else(|| {
                CodecError::Invalid(format!("{what}: `{k}` must be an integer, got {v}"))
            });
        }
    }
    Ok(None)
}

/// An entry's parts and the filter it names, matched by `id`, else `class`
/// (`H5Z_FILTER_USER` defers to the others), else `name`.
struct Entry<'a> {
    obj: &'a Map<String, Value>,
    id: Option<u64>,
    class: Option<&'a str>,
    name: Option<&'a str>,
    kind: Option<Kind>,
}

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

fn identify(entry: &Value) -> Result<Entry<'_>> {
    let (obj, id, class, name) = match entry {
        Value::Object(o) => (
            o,
            o.get("id").and_then(as_u64),
            o.get("class").and_then(Value::as_str),
            o.get("name").and_then(Value::as_str),
        ),
        // HSDS also accepts a bare id or name in requests.
        Value::Number(_) => (&*EMPTY, as_u64(entry), None, None),
        Value::String(s) => {
            let c = s.starts_with("H5Z_FILTER_").then_some(s.as_str());
            (
                &*EMPTY,
                None,
                c,
                if c.is_some() { None } else { Some(s.as_str()) },
            )
        }
        other => {
            return Err(CodecError::Invalid(format!(
                "filter entry must be an object, got {other}"
            )))
        }
    };
    let kind = match id {
        Some(i) => kind_from_id(i),
        None => class
            .filter(|c| *c != "H5Z_FILTER_USER")
            .and_then(kind_from_class)
            .or_else(|| name.and_then(kind_from_name)),
    };
    Ok(Entry {
        obj,
        id,
        class,
        name,
        kind,
    })
}

fn parse_entry(entry: &Value) -> Result<Filter> {
    let Entry {
        obj,
        id,
        class,
        name,
        kind,
    } = identify(entry)?;
    let Some(kind) = kind else {
        return Err(CodecError::Unsupported(describe_unknown(id, class, name)));
    };
    let what = name.or(class).unwrap_or("filter");
    Ok(match kind {
        Kind::Shuffle => Filter::Shuffle,
        Kind::Fletcher32 => Filter::Fletcher32,
        Kind::Lz4 => Filter::Lz4,
        Kind::Lzf => Filter::Lzf,
        Kind::Deflate => {
            let level = int_param(obj, &["level"], what)?.unwrap_or(4);
            if !(0..=9).contains(&level) {
                return Err(CodecError::Invalid(format!(
                    "deflate level {level} is outside 0..=9"
                )));
            }
            Filter::Deflate {
                level: level as u32,
            }
        }
        Kind::Zstd => {
            let level = int_param(obj, &["level"], what)?.unwrap_or(3);
            if !(-131072..=22).contains(&level) {
                return Err(CodecError::Invalid(format!(
                    "zstd level {level} is outside ..=22"
                )));
            }
            Filter::Zstd {
                level: level as i32,
            }
        }
        Kind::Blosc => parse_blosc(
            obj,
            name.or(lz4hc(id, class, None).then_some("lz4hc")),
            what,
        )?,
        Kind::ScaleOffset => Filter::ScaleOffset {
            cd: local_cd(obj, 9, "scaleoffset")?,
        },
        Kind::Szip => Filter::Szip {
            cd: local_cd(obj, 4, "szip")?,
        },
        Kind::Bitshuffle => parse_bitshuffle(obj, what)?,
    })
}

/// A bitshuffle entry: the plugin's client data in `parameters` (as HDF5
/// keeps it: the first three slots are the plugin's, then block size,
/// compression and level, each 0 when missing), else `block_size` and
/// `compression` (0, 2 = lz4, 3 = zstd; by name too) with `level`; without
/// any, LZ4 in blocks of the default size, which is what HSDS's
/// `bitshuffle` filter stores.
fn parse_bitshuffle(obj: &Map<String, Value>, what: &str) -> Result<Filter> {
    let cd = cd_values(obj, what)?;
    let (block, compression, level) = if obj.get("parameters").is_some_and(|p| !p.is_null()) {
        let at = |i: usize| cd.get(i).copied().unwrap_or(0);
        (at(3), at(4), at(5))
    } else {
        let compression = match obj.get("compression") {
            None | Some(Value::Null) => bitshuffle::LZ4,
            Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
                "none" => bitshuffle::NONE,
                "lz4" => bitshuffle::LZ4,
                "zstd" => bitshuffle::ZSTD,
                _ => {
                    return Err(CodecError::Invalid(format!(
                        "{what}: compression {s:?} is not none, lz4 or zstd"
                    )))
                }
            },
            Some(v) => as_u64(v)
                .and_then(|c| u32::try_from(c).ok())
                .ok_or_else(|| CodecError::Invalid(format!("{what}: bad compression {v}")))?,
        };
        let block = int_param(obj, &["block_size", "blocksize"], what)?.unwrap_or(0);
        let level = int_param(obj, &["level"], what)?.unwrap_or(0);
        (
            u32::try_from(block)
                .map_err(|_| CodecError::Invalid(format!("{what}: bad block size {block}")))?,
            compression,
            u32::try_from(level)
                .map_err(|_| CodecError::Invalid(format!("{what}: bad level {level}")))?,
        )
    };
    if block % 8 != 0 {
        return Err(CodecError::Invalid(format!(
            "{what}: block size {block} is not a multiple of 8 elements"
        )));
    }
    if ![bitshuffle::NONE, bitshuffle::LZ4, bitshuffle::ZSTD].contains(&compression) {
        return Err(CodecError::Unsupported(format!(
            "bitshuffle compression {compression} (known: 0 none, 2 lz4, 3 zstd)"
        )));
    }
    Ok(Filter::Bitshuffle {
        block,
        compression,
        level,
    })
}

/// The complete client data of a filter that adapts to the dataset (kept in
/// the entry's `parameters`, as [`complete_filters`] leaves them).
fn local_cd(obj: &Map<String, Value>, least: usize, what: &str) -> Result<Vec<u32>> {
    let cd = cd_values(obj, what)?;
    if cd.len() < least {
        return Err(CodecError::Invalid(format!(
            "{what}: the filter's dataset parameters are missing (they are filled in when \
             the dataset is created)"
        )));
    }
    Ok(cd)
}

fn cd_values(obj: &Map<String, Value>, what: &str) -> Result<Vec<u32>> {
    match obj.get("parameters") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                as_u64(v)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| CodecError::Invalid(format!("{what}: bad parameter {v}")))
            })
            .collect(),
        Some(v) => Err(CodecError::Invalid(format!(
            "{what}: `parameters` must be a list, got {v}"
        ))),
    }
}

/// HDF5's scale types (`H5Z_SO_scale_type_t`) by name.
const SCALE_TYPES: [&str; 3] = ["H5Z_SO_FLOAT_DSCALE", "H5Z_SO_FLOAT_ESCALE", "H5Z_SO_INT"];

/// The szip codings HSDS names.
const SZIP_CODINGS: [(&str, u32); 2] = [
    ("H5_SZIP_EC_OPTION_MASK", szip::EC),
    ("H5_SZIP_NN_OPTION_MASK", szip::NN),
];

/// What the filters that adapt to the data need of the element type (what
/// libhdf5 hands their `set_local`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementInfo {
    pub class: ElementClass,
    /// Bytes per element.
    pub size: usize,
    pub big_endian: bool,
}

/// The element classes scale-offset and szip tell apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElementClass {
    Integer {
        signed: bool,
    },
    Float,
    /// Anything else (strings, compounds, ...): these filters refuse it.
    Other,
}

/// Fills in what HDF5's `set_local` would for a new dataset: scale-offset
/// and szip entries given only their user settings (`scaleType` and
/// `scaleOffset`; `coding` and `pixelsPerBlock`; or two `parameters` as
/// `H5Pset_scaleoffset`/`H5Pset_szip` store them) get their complete client
/// data for this element type, chunk shape and fill value (element bytes).
/// Other entries, and complete ones, are returned as they are.
///
/// # Errors
/// [`CodecError::Invalid`] where libhdf5 refuses the filter for this data
/// (szip or scale-offset on strings or compounds, a float with an integer
/// scale type, ...); [`CodecError::Unsupported`] for the E-scale method,
/// which libhdf5 does not implement either.
pub fn complete_filters(
    filters: &Value,
    elem: ElementInfo,
    chunk: &[u64],
    fill: &[u8],
) -> Result<Value> {
    let Value::Array(entries) = filters else {
        return Ok(filters.clone());
    };
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        if is_skipped_entry(entry) {
            out.push(entry.clone());
            continue;
        }
        let e = identify(entry)?;
        let complete = match e.kind {
            Some(Kind::ScaleOffset) => complete_scaleoffset(&e, elem, chunk, fill)?,
            Some(Kind::Szip) => complete_szip(&e, elem, chunk)?,
            _ => None,
        };
        let known = e.kind.is_some();
        let entry = complete.unwrap_or_else(|| entry.clone());
        out.push(if known { with_identity(entry)? } else { entry });
    }
    Ok(Value::Array(out))
}

/// The entry of a filter h5lake knows with the `class`, `id` and `name`
/// HSDS gives every entry it keeps (h5pyd reads all three to report a
/// dataset's compression): a bare name or id becomes such an object, and an
/// object gets the keys it lacks.
///
/// # Errors
/// A `class` naming another filter than the entry's `id`.
fn with_identity(entry: Value) -> Result<Value> {
    let e = identify(&entry)?;
    if let Some(class) = e.class {
        if class != "H5Z_FILTER_USER" && kind_from_class(class) != e.kind {
            return Err(CodecError::Invalid(format!(
                "filter class {class} does not name filter id {}",
                e.id.map_or_else(|| "given".to_string(), |i| i.to_string())
            )));
        }
    }
    // A name naming another filter than the id or class would be what
    // clients report (h5pyd's compression); Blosc's entries name its codec.
    if let (Some(name), true) = (e.name, e.id.is_some() || e.class.is_some()) {
        let named = kind_from_name(name);
        let codec = e.kind == Some(Kind::Blosc) && BloscCompressor::from_name(name).is_some();
        if named.is_some() && named != e.kind && !codec {
            return Err(CodecError::Invalid(format!(
                "filter name {name:?} names another filter than the entry's {}",
                e.class
                    .map_or_else(|| format!("id {}", e.id.unwrap_or(0)), str::to_string)
            )));
        }
    }
    let id_text =
        e.id.filter(|_| entry.get("id").is_some_and(Value::is_string));
    let canonical = if lz4hc(e.id, e.class, e.name) {
        json!({"class": "H5Z_FILTER_LZ4HC", "id": filter_id::LZ4HC, "name": "lz4hc"})
    } else {
        parse_entry(&entry)?.to_hsds_json()
    };
    let mut obj = match entry {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    // (An id given as text, "1", is kept as the number clients expect.)
    if let Some(id) = id_text {
        obj.insert("id".into(), json!(id));
    }
    for key in ["class", "id", "name"] {
        if !obj.contains_key(key) {
            obj.insert(key.into(), canonical[key].clone());
        }
    }
    Ok(Value::Object(obj))
}

/// Whether an entry names HSDS's lz4hc filter (`H5Z_FILTER_LZ4HC`, id
/// 32005, or the bare name): Blosc with the lz4hc codec, as HSDS stores it.
fn lz4hc(id: Option<u64>, class: Option<&str>, name: Option<&str>) -> bool {
    match (id, class) {
        (Some(i), _) => i == filter_id::LZ4HC,
        (None, Some(c)) => c == "H5Z_FILTER_LZ4HC",
        (None, None) => name.is_some_and(|n| n.eq_ignore_ascii_case("lz4hc")),
    }
}

fn complete_scaleoffset(
    e: &Entry,
    elem: ElementInfo,
    chunk: &[u64],
    fill: &[u8],
) -> Result<Option<Value>> {
    let given = cd_values(e.obj, "scaleoffset")?;
    if given.len() >= 9 {
        return Ok(None);
    }
    let (scale_type, factor) = if given.len() == 2 {
        (given[0], given[1] as i32)
    } else {
        let scale_type = match e.obj.get("scaleType") {
            Some(Value::String(s)) => SCALE_TYPES.iter().position(|t| t == s).ok_or_else(|| {
                CodecError::Invalid(format!("scaleoffset: unknown scaleType {s:?}"))
            })? as u32,
            Some(v) => as_u64(v)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| CodecError::Invalid(format!("scaleoffset: bad scaleType {v}")))?,
            // HSDS clients leave it out for integer data.
            None => match elem.class {
                ElementClass::Float => 0,
                _ => 2,
            },
        };
        let factor = int_param(e.obj, &["scaleOffset", "scaleFactor"], "scaleoffset")?.unwrap_or(0);
        let factor = i32::try_from(factor)
            .map_err(|_| CodecError::Invalid(format!("scaleoffset factor {factor}")))?;
        (scale_type, factor)
    };
    let (float, signed) = match elem.class {
        ElementClass::Integer { signed } => (false, signed),
        ElementClass::Float => (true, true),
        ElementClass::Other => {
            return Err(CodecError::Invalid(
                "the scale-offset filter applies to integer and floating-point data only".into(),
            ))
        }
    };
    let kind = scaleoffset::ElemKind {
        float,
        size: elem.size,
        signed,
        big_endian: elem.big_endian,
    };
    let elems: u64 = chunk.iter().product();
    let fill = (fill.len() == elem.size).then_some(fill);
    let cd = scaleoffset::local_parameters(scale_type, factor, kind, elems, fill)?;
    Ok(Some(Filter::ScaleOffset { cd }.to_hsds_json()))
}

fn complete_szip(e: &Entry, elem: ElementInfo, chunk: &[u64]) -> Result<Option<Value>> {
    let given = cd_values(e.obj, "szip")?;
    if given.len() >= 4 {
        return Ok(None);
    }
    let (mask, ppb) = if given.len() == 2 {
        (given[0], given[1])
    } else {
        let mask = match e.obj.get("coding") {
            None | Some(Value::Null) => szip::NN,
            Some(Value::String(s)) => SZIP_CODINGS
                .iter()
                .find(|(n, _)| n == s)
                .map(|(_, m)| *m)
                .ok_or_else(|| CodecError::Invalid(format!("szip: unknown coding {s:?}")))?,
            Some(v) => as_u64(v)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| CodecError::Invalid(format!("szip: bad coding {v}")))?,
        };
        // h5pyd sends the pixels per block as `bitsPerPixel`; without
        // either, h5py's default ("nn", 8).
        let ppb = int_param(e.obj, &["pixelsPerBlock", "bitsPerPixel"], "szip")?.unwrap_or(8);
        let ppb = u32::try_from(ppb)
            .map_err(|_| CodecError::Invalid(format!("szip pixels per block {ppb}")))?;
        (mask, ppb)
    };
    if elem.class == ElementClass::Other || ![1, 2, 4, 8].contains(&elem.size) {
        return Err(CodecError::Invalid(
            "the szip filter applies to integer and floating-point data of 1, 2, 4 or 8 bytes"
                .into(),
        ));
    }
    let bits = elem.size as u32 * 8;
    let cd = szip::local_parameters(mask, ppb, bits, bits, 0, elem.big_endian, chunk)?;
    Ok(Some(Filter::Szip { cd }.to_hsds_json()))
}

fn parse_blosc(obj: &Map<String, Value>, name: Option<&str>, what: &str) -> Result<Filter> {
    let cname = ["compressor", "cname"]
        .iter()
        .find_map(|k| obj.get(*k).filter(|v| !v.is_null()));
    let compressor = match cname {
        Some(Value::String(s)) => BloscCompressor::from_name(s)
            .ok_or_else(|| CodecError::Unsupported(format!("blosc compressor {s:?}")))?,
        Some(v) => as_u64(v)
            .and_then(BloscCompressor::from_code)
            .ok_or_else(|| CodecError::Unsupported(format!("blosc compressor {v}")))?,
        // HSDS keeps the blosc codec in `name` ("lz4", "zstd", … or "blosclz").
        None => name
            .and_then(BloscCompressor::from_name)
            .unwrap_or(BloscCompressor::BloscLz),
    };
    let level = int_param(obj, &["level", "clevel"], what)?.unwrap_or(5);
    if !(0..=9).contains(&level) {
        return Err(CodecError::Invalid(format!(
            "blosc level {level} is outside 0..=9"
        )));
    }
    let shuffle = match int_param(obj, &["shuffle"], what)?.unwrap_or(1) {
        0 => BloscShuffle::None,
        1 => BloscShuffle::Byte,
        2 => BloscShuffle::Bit,
        s => {
            return Err(CodecError::Invalid(format!(
                "blosc shuffle {s} is not 0, 1 or 2"
            )))
        }
    };
    Ok(Filter::Blosc {
        compressor,
        level: level as u8,
        shuffle,
    })
}

/// One HDF5 filter as libhdf5 reports it (id, client data, name) as an
/// HSDS filter entry (the form dataset documents keep).
pub fn hdf5_filter_json(id: u64, cd: &[u32], label: &str) -> Value {
    let at = |i: usize| cd.get(i).copied();
    match id {
        1 => json!({"id": 1, "level": at(0).unwrap_or(4)}),
        32015 => json!({"id": 32015, "level": at(0).unwrap_or(3)}),
        // Blosc's client data: version, version, type size, chunk bytes,
        // clevel, shuffle, compressor code.
        32001 => json!({"id": 32001, "level": at(4).unwrap_or(5),
                        "shuffle": at(5).unwrap_or(1), "compressor": at(6).unwrap_or(0)}),
        // Two values as H5Pset_* leave them, all of them after set_local:
        // either way [`complete_filters`] ends with the complete set.
        4 => Filter::Szip { cd: cd.to_vec() }.to_hsds_json(),
        32008 => json!({"id": 32008, "name": "bitshuffle", "parameters": cd}),
        6 => Filter::ScaleOffset { cd: cd.to_vec() }.to_hsds_json(),
        _ => {
            let mut e = json!({"id": id});
            if !label.is_empty() {
                e["name"] = json!(label);
            }
            e
        }
    }
}

/// Whether a `creationProperties.filters` entry is an optional filter
/// h5lake cannot apply, recorded as skipped (see [`skipped_filter_json`]):
/// the chunks are stored without it, and pipelines leave it out.
pub fn is_skipped_entry(entry: &Value) -> bool {
    entry.pointer("/h5lake/skipped") == Some(&Value::Bool(true))
}

/// Whether an optional filter (HDF5's `H5Z_FLAG_OPTIONAL`, as h5py sets
/// every filter given by number) is to be skipped: one h5lake knows nothing
/// of. HDF5 stores chunks without an optional filter that is not available;
/// h5lake does the same. Filters it knows and lacks (szip, scale-offset,
/// bitshuffle, ...) are refused by name instead: whoever asks for one of
/// those expects its effect, not chunks stored without it.
pub fn skips_optional(id: u64) -> bool {
    kind_from_id(id).is_none() && !KNOWN_UNSUPPORTED.iter().any(|(k, _, _)| *k == id)
}

/// The entry of an optional filter h5lake skips (see [`skips_optional`]):
/// every chunk is stored without it, and the entry (id, name, client data)
/// is kept so that the dataset reports the filter it was created with.
pub fn skipped_filter_json(id: u64, cd: &[u32], label: &str) -> Value {
    let mut e = json!({"id": id, "parameters": cd, "h5lake": {"skipped": true}});
    if !label.is_empty() {
        e["name"] = json!(label);
    }
    e
}

/// The Blosc filter's cd_values versions (`FILTER_BLOSC_VERSION`,
/// `BLOSC_VERSION_FORMAT`).
const BLOSC_FILTER_VERSION: u32 = 2;
const BLOSC_FORMAT_VERSION: u32 = 2;

impl Filter {
    /// The client data (`cd_values`) libhdf5 or the filter's plugin expects
    /// for this filter in a dataset creation property list, for elements of
    /// `elem_size` bytes in chunks of `chunk_bytes`. Empty where HDF5 fills
    /// them itself (shuffle, fletcher32).
    pub fn hdf5_client_data(&self, elem_size: usize, chunk_bytes: u64) -> Vec<u32> {
        let chunk = chunk_bytes.min(u64::from(u32::MAX)) as u32;
        match self {
            Filter::Deflate { level } => vec![*level],
            Filter::Shuffle | Filter::Fletcher32 => Vec::new(),
            Filter::Zstd { level } => vec![*level as u32],
            Filter::Lz4 => vec![0],
            // h5py's lzf filter: its version, liblzf's version, chunk bytes.
            Filter::Lzf => vec![4, 0x0105, chunk],
            Filter::Blosc {
                compressor,
                level,
                shuffle,
            } => vec![
                BLOSC_FILTER_VERSION,
                BLOSC_FORMAT_VERSION,
                elem_size as u32,
                chunk,
                u32::from(*level),
                u32::from(shuffle.code()),
                compressor.code(),
            ],
            Filter::ScaleOffset { cd } | Filter::Szip { cd } => cd.clone(),
            Filter::Bitshuffle {
                block,
                compression,
                level,
            } => {
                let mut cd = vec![
                    bitshuffle::VERSION.0,
                    bitshuffle::VERSION.1,
                    elem_size as u32,
                    *block,
                    *compression,
                ];
                if *compression == bitshuffle::ZSTD {
                    cd.push(*level);
                }
                cd
            }
            Filter::Unavailable { entry, .. } => entry
                .get("parameters")
                .and_then(Value::as_array)
                .map(|ps| ps.iter().filter_map(as_u64).map(|v| v as u32).collect())
                .unwrap_or_default(),
        }
    }

    /// The HDF5 filter id.
    pub fn id(&self) -> u64 {
        match self {
            Filter::Shuffle => filter_id::SHUFFLE,
            Filter::Deflate { .. } => filter_id::DEFLATE,
            Filter::Zstd { .. } => filter_id::ZSTD,
            Filter::Lz4 => filter_id::LZ4,
            Filter::Lzf => filter_id::LZF,
            Filter::Fletcher32 => filter_id::FLETCHER32,
            Filter::Blosc { .. } => filter_id::BLOSC,
            Filter::ScaleOffset { .. } => filter_id::SCALEOFFSET,
            Filter::Szip { .. } => filter_id::SZIP,
            Filter::Bitshuffle { .. } => filter_id::BITSHUFFLE,
            Filter::Unavailable { entry, .. } => entry.get("id").and_then(as_u64).unwrap_or(0),
        }
    }

    /// HSDS's entry for this filter (class names from HSDS `FILTER_DEFS`).
    pub fn to_hsds_json(&self) -> Value {
        match self {
            Filter::Shuffle => json!({"class": "H5Z_FILTER_SHUFFLE", "id": 2, "name": "shuffle"}),
            // HSDS's name for it, which h5pyd reports as the compression.
            Filter::Deflate { level } => {
                json!({"class": "H5Z_FILTER_DEFLATE", "id": 1, "name": "gzip", "level": level})
            }
            Filter::Fletcher32 => {
                json!({"class": "H5Z_FILTER_FLETCHER32", "id": 3, "name": "fletcher32"})
            }
            Filter::Zstd { level } => {
                json!({"class": "H5Z_FILTER_ZSTD", "id": 32015, "name": "zstd", "level": level})
            }
            Filter::Lz4 => json!({"class": "H5Z_FILTER_LZ4", "id": 32004, "name": "lz4"}),
            Filter::Lzf => json!({"class": "H5Z_FILTER_LZF", "id": 32000, "name": "lzf"}),
            // HSDS picks the codec from `name` (its list spells zlib "gzip").
            Filter::Blosc {
                compressor,
                level,
                shuffle,
            } => json!({
                "class": "H5Z_FILTER_BLOSC",
                "id": 32001,
                "name": if *compressor == BloscCompressor::Zlib { "gzip" } else { compressor.name() },
                "compressor": compressor.name(),
                "level": level,
                "shuffle": shuffle.code(),
            }),
            // HSDS's keys for what a client chose; `parameters` for what
            // the chunks were coded with.
            Filter::ScaleOffset { cd } => {
                let mut e = json!({"class": "H5Z_FILTER_SCALEOFFSET", "id": 6,
                                   "name": "scaleoffset", "parameters": cd});
                if let Some(t) = cd.first().and_then(|&t| SCALE_TYPES.get(t as usize)) {
                    e["scaleType"] = json!(t);
                }
                if let Some(&f) = cd.get(1) {
                    e["scaleOffset"] = json!(f as i32);
                }
                e
            }
            Filter::Szip { cd } => {
                let mut e = json!({"class": "H5Z_FILTER_SZIP", "id": 4, "name": "szip",
                                   "parameters": cd});
                if let Some(&m) = cd.first() {
                    e["coding"] = json!(if m & szip::EC != 0 {
                        "H5_SZIP_EC_OPTION_MASK"
                    } else {
                        "H5_SZIP_NN_OPTION_MASK"
                    });
                }
                for (i, k) in [
                    (1, "pixelsPerBlock"),
                    (2, "bitsPerPixel"),
                    (3, "pixelsPerScanline"),
                ] {
                    if let Some(&v) = cd.get(i) {
                        e[k] = json!(v);
                    }
                }
                e
            }
            Filter::Bitshuffle {
                block,
                compression,
                level,
            } => {
                let mut e = json!({"class": "H5Z_FILTER_BITSHUFFLE", "id": 32008,
                                   "name": "bitshuffle", "block_size": block,
                                   "compression": compression});
                if *compression == bitshuffle::ZSTD {
                    e["level"] = json!(level);
                }
                e
            }
            Filter::Unavailable { entry, .. } => entry.clone(),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Filter::Shuffle => "shuffle",
            Filter::Deflate { .. } => "deflate",
            Filter::Zstd { .. } => "zstd",
            Filter::Lz4 => "lz4",
            Filter::Lzf => "lzf",
            Filter::Fletcher32 => "fletcher32",
            Filter::Blosc { .. } => "blosc",
            Filter::ScaleOffset { .. } => "scaleoffset",
            Filter::Szip { .. } => "szip",
            Filter::Bitshuffle { .. } => "bitshuffle",
            Filter::Unavailable { .. } => "unavailable filter",
        }
    }

    fn is_compressor(&self) -> bool {
        matches!(
            self,
            Filter::Deflate { .. }
                | Filter::Zstd { .. }
                | Filter::Lz4
                | Filter::Lzf
                | Filter::Blosc { .. }
                | Filter::Szip { .. }
                | Filter::Unavailable { .. }
        ) || matches!(self, Filter::Bitshuffle { compression, .. } if *compression != bitshuffle::NONE)
    }
}

/// The error of a chunk through a filter h5lake cannot apply.
fn unavailable(reason: &str, verb: &str) -> CodecError {
    CodecError::Unsupported(format!(
        "{reason}: h5lake has no such codec, so this dataset's chunks cannot be {verb} \
         (it applies gzip, szip, lzf, zstd, lz4, Blosc, bitshuffle, scale-offset, shuffle \
         and fletcher32)"
    ))
}

/// Bytes that are either borrowed input or a filter's fresh output, so a
/// decode that only strips a checksum never copies.
enum Buf<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Buf<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Buf::Borrowed(b) => b,
            Buf::Owned(v) => v,
        }
    }
    fn into_vec(self) -> Vec<u8> {
        match self {
            Buf::Borrowed(b) => b.to_vec(),
            Buf::Owned(v) => v,
        }
    }
}

impl Pipeline {
    /// A pipeline from filters in write order.
    pub fn new(filters: Vec<Filter>) -> Self {
        Pipeline { filters }
    }

    /// Parses HSDS's `creationProperties.filters`.
    ///
    /// Each entry is matched by `id`, else `class` (`H5Z_FILTER_USER` defers to
    /// the others), else `name`; bare ids and names are accepted as HSDS does.
    ///
    /// # Errors
    /// [`CodecError::Unsupported`] naming the first filter we cannot apply;
    /// [`CodecError::Invalid`] for a malformed list or parameter.
    pub fn from_hsds_json(filters: &Value) -> Result<Pipeline> {
        match filters {
            Value::Null => Ok(Pipeline::default()),
            Value::Array(entries) => Ok(Pipeline {
                filters: check_count(entries)?
                    .iter()
                    .filter(|e| !is_skipped_entry(e))
                    .map(parse_entry)
                    .collect::<Result<_>>()?,
            }),
            other => Err(CodecError::Invalid(format!(
                "filters must be a list, got {other}"
            ))),
        }
    }

    /// The pipeline a stored dataset names, as far as h5lake can apply it:
    /// an entry it cannot (a codec it lacks, as h5py without the plugin)
    /// becomes [`Filter::Unavailable`], so the dataset can still be opened
    /// and described and only its chunks fail, naming the filter. For
    /// datasets being made, [`Pipeline::from_hsds_json`] refuses instead.
    ///
    /// # Errors
    /// [`CodecError::Invalid`] when `filters` is not a list.
    pub fn described(filters: &Value) -> Result<Pipeline> {
        let Value::Array(entries) = filters else {
            return Pipeline::from_hsds_json(filters);
        };
        check_count(entries)?;
        Ok(Pipeline {
            filters: entries
                .iter()
                .filter(|e| !is_skipped_entry(e))
                .map(|e| {
                    parse_entry(e).unwrap_or_else(|err| Filter::Unavailable {
                        entry: e.clone(),
                        reason: match err {
                            CodecError::Unsupported(what) => what,
                            other => other.to_string(),
                        },
                    })
                })
                .collect(),
        })
    }

    /// Why no chunk of this pipeline can be read or written, if so: the
    /// first filter h5lake cannot apply.
    pub fn unavailable(&self) -> Option<&str> {
        self.filters.iter().find_map(|f| match f {
            Filter::Unavailable { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
    }

    /// HSDS-style entries, in write order.
    pub fn to_hsds_json(&self) -> Value {
        Value::Array(self.filters.iter().map(Filter::to_hsds_json).collect())
    }

    /// True when chunks are stored as raw element bytes.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether a value can read back other than it was written (the
    /// scale-offset filter drops precision).
    pub fn is_lossy(&self) -> bool {
        self.filters
            .iter()
            .any(|f| matches!(f, Filter::ScaleOffset { .. }))
    }

    /// Applies the filters in order, producing libhdf5's chunk bytes.
    ///
    /// # Errors
    /// Only for unencodable settings (Blosc bitshuffle, chunks over 2 GiB in Blosc).
    pub fn encode(&self, raw: Vec<u8>, elem_size: usize) -> Result<Vec<u8>> {
        self.encode_as(raw, elem_size, ChunkFormat::Hdf5)
    }

    /// Applies the filters in the byte layout of `format`.
    ///
    /// # Errors
    /// As [`Pipeline::encode`].
    pub fn encode_as(
        &self,
        raw: Vec<u8>,
        elem_size: usize,
        format: ChunkFormat,
    ) -> Result<Vec<u8>> {
        match format {
            ChunkFormat::Hdf5 => self.encode_hdf5(raw, elem_size),
            ChunkFormat::Hsds => self.encode_hsds(raw, elem_size),
        }
    }

    fn encode_hdf5(&self, mut data: Vec<u8>, elem_size: usize) -> Result<Vec<u8>> {
        for f in &self.filters {
            data = match f {
                Filter::Unavailable { reason, .. } => return Err(unavailable(reason, "written")),
                Filter::Shuffle => shuffle::shuffle(&data, elem_size),
                Filter::Deflate { level } => deflate::compress(&data, *level),
                Filter::Zstd { level } => zstd_codec::compress(&data, *level)?,
                Filter::Lz4 => lz4::compress(&data, 0),
                Filter::Lzf => lzf::compress(&data),
                Filter::Fletcher32 => fletcher::encode(data),
                Filter::Blosc {
                    compressor,
                    level,
                    shuffle,
                } => blosc::compress(&data, elem_size, *compressor, *level, *shuffle)?,
                Filter::ScaleOffset { cd } => scaleoffset::encode(&data, cd)?,
                Filter::Szip { cd } => szip::encode(&data, cd)?,
                Filter::Bitshuffle {
                    block,
                    compression,
                    level,
                } => {
                    let block = match *block {
                        0 => bitshuffle::default_block(elem_size),
                        b => b as usize,
                    };
                    match *compression {
                        bitshuffle::NONE => bitshuffle::shuffle(&data, elem_size, block)?,
                        c => bitshuffle::compress(&data, elem_size, block, c, *level as i32)?,
                    }
                }
            };
        }
        Ok(data)
    }

    /// Pipelines HSDS cannot apply (Blosc has no such codecs, HSDS none of
    /// these filters) keep libhdf5's layout in HSDS-format datasets too.
    /// So do pipelines in an order a Blosc frame cannot hold: anything but
    /// checksums after the compressor (HDF5 takes deflate then shuffle,
    /// say, and shuffles the compressed bytes).
    pub fn keeps_hdf5_layout(&self) -> bool {
        self.filters.iter().any(|f| {
            matches!(
                f,
                Filter::Lzf
                    | Filter::Szip { .. }
                    | Filter::ScaleOffset { .. }
                    | Filter::Bitshuffle { .. }
                    | Filter::Unavailable { .. }
            )
        }) || self.out_of_blosc_order()
    }

    /// Whether something other than a checksum follows the compressor.
    fn out_of_blosc_order(&self) -> bool {
        self.filters
            .iter()
            .position(Filter::is_compressor)
            .is_some_and(|c| {
                self.filters[c + 1..]
                    .iter()
                    .any(|f| *f != Filter::Fletcher32)
            })
    }

    fn encode_hsds(&self, raw: Vec<u8>, elem_size: usize) -> Result<Vec<u8>> {
        if self.keeps_hdf5_layout() {
            return self.encode_hdf5(raw, elem_size);
        }
        let Some(comp) = self.filters.iter().find(|f| f.is_compressor()) else {
            return Ok(raw);
        };
        let shuffled = self.filters.contains(&Filter::Shuffle);
        let byte = if shuffled {
            BloscShuffle::Byte
        } else {
            BloscShuffle::None
        };
        // HSDS's default level when none is given is 5.
        let (compressor, level, shuffle) = match comp {
            Filter::Deflate { level } => (BloscCompressor::Zlib, (*level).min(9) as u8, byte),
            // Blosc runs zstd at level 2*clevel-1: pick the clevel that gives
            // the zstd level asked for (3 -> clevel 2 -> zstd 3), so that
            // "zstd level 3" costs what it costs everywhere else.
            Filter::Zstd { level } => (
                BloscCompressor::Zstd,
                ((*level + 1) / 2).clamp(1, 9) as u8,
                byte,
            ),
            Filter::Lz4 => (BloscCompressor::Lz4, 5, byte),
            Filter::Blosc {
                compressor,
                level,
                shuffle,
            } => {
                let s = if shuffled && *shuffle == BloscShuffle::None {
                    BloscShuffle::Byte
                } else {
                    *shuffle
                };
                (*compressor, *level, s)
            }
            _ => unreachable!("is_compressor"),
        };
        blosc::compress(&raw, elem_size, compressor, level, shuffle)
    }

    /// Reverses the filters (libhdf5 layout; HSDS Blosc frames auto-detected).
    ///
    /// # Errors
    /// [`CodecError::Corrupt`]/[`CodecError::Checksum`] for damaged data,
    /// [`CodecError::Unsupported`] for Blosc frames using snappy or bitshuffle.
    pub fn decode(&self, stored: &[u8], elem_size: usize) -> Result<Vec<u8>> {
        self.decode_as(stored, elem_size, None, ChunkFormat::Hdf5)
    }

    /// [`Pipeline::decode`] with the expected decoded size (the chunk's byte
    /// size), which spares deflate its guessing and regrowing.
    ///
    /// # Errors
    /// As [`Pipeline::decode`].
    pub fn decode_with_hint(
        &self,
        stored: &[u8],
        elem_size: usize,
        expected_len: Option<usize>,
    ) -> Result<Vec<u8>> {
        self.decode_as(stored, elem_size, expected_len, ChunkFormat::Hdf5)
    }

    /// Reverses the filters for chunks written in `format`.
    ///
    /// # Errors
    /// As [`Pipeline::decode`].
    pub fn decode_as(
        &self,
        stored: &[u8],
        elem_size: usize,
        expected_len: Option<usize>,
        format: ChunkFormat,
    ) -> Result<Vec<u8>> {
        if self.filters.is_empty() {
            return Ok(stored.to_vec());
        }
        if format == ChunkFormat::Hsds
            && self.out_of_blosc_order()
            && self.unavailable().is_none()
            && blosc::is_frame(stored)
        {
            // Written by versions that put such pipelines in a Blosc frame
            // all the same (the frame undoes its own shuffle).
            if let Ok(v) = blosc::decompress(stored) {
                if expected_len.is_none_or(|n| n == v.len()) {
                    return Ok(v);
                }
            }
        }
        let hsds = format == ChunkFormat::Hsds && !self.keeps_hdf5_layout();
        let has_compressor = self.filters.iter().any(Filter::is_compressor);
        if hsds && !has_compressor {
            return Ok(stored.to_vec());
        }
        let mut data = Buf::Borrowed(stored);
        // Set once an HSDS Blosc frame has been unpacked: it already undid the
        // shuffle, and HSDS never wrote a checksum.
        let mut blosc_frame_seen = false;
        for (i, f) in self.filters.iter().enumerate().rev() {
            // A filter's output is the final size plus any checksums
            // written before it, unless a filter that changes the size
            // (a compressor, scale-offset) came first.
            let hint = if !self.filters[..i]
                .iter()
                .all(|g| matches!(g, Filter::Shuffle | Filter::Fletcher32))
            {
                None
            } else {
                let sums = self.filters[..i]
                    .iter()
                    .filter(|g| **g == Filter::Fletcher32)
                    .count();
                expected_len.map(|n| n + 4 * sums)
            };
            data = match f {
                Filter::Unavailable { reason, .. } => return Err(unavailable(reason, "read")),
                Filter::Fletcher32 => {
                    if hsds || self.hsds_frame_without_checksum(data.as_slice()) {
                        data
                    } else {
                        match data {
                            Buf::Borrowed(b) => Buf::Borrowed(fletcher::decode(b)?),
                            Buf::Owned(mut v) => {
                                let len = fletcher::decode(&v)?.len();
                                v.truncate(len);
                                Buf::Owned(v)
                            }
                        }
                    }
                }
                Filter::Shuffle => {
                    if blosc_frame_seen {
                        data
                    } else {
                        Buf::Owned(shuffle::unshuffle(data.as_slice(), elem_size))
                    }
                }
                Filter::Blosc { .. } => {
                    blosc_frame_seen = hsds;
                    Buf::Owned(blosc::decompress(data.as_slice())?)
                }
                // Never inside a Blosc frame (see `encode_hsds`).
                Filter::Lzf => Buf::Owned(lzf::decompress(data.as_slice(), hint)?),
                Filter::ScaleOffset { cd } => Buf::Owned(scaleoffset::decode(data.as_slice(), cd)?),
                Filter::Szip { cd } => Buf::Owned(szip::decode(data.as_slice(), cd)?),
                Filter::Bitshuffle {
                    block, compression, ..
                } => Buf::Owned(match *compression {
                    bitshuffle::NONE => {
                        let block = match *block {
                            0 => bitshuffle::default_block(elem_size),
                            b => b as usize,
                        };
                        bitshuffle::unshuffle(data.as_slice(), elem_size, block)?
                    }
                    c => bitshuffle::decompress(data.as_slice(), elem_size, c)?,
                }),
                _ if blosc::is_frame(data.as_slice()) => {
                    blosc_frame_seen = true;
                    Buf::Owned(blosc::decompress(data.as_slice())?)
                }
                Filter::Deflate { .. } => Buf::Owned(deflate::decompress(data.as_slice(), hint)?),
                Filter::Zstd { .. } => Buf::Owned(zstd_codec::decompress(data.as_slice(), hint)?),
                Filter::Lz4 => Buf::Owned(lz4::decompress(data.as_slice())?),
            };
        }
        Ok(data.into_vec())
    }

    /// An HSDS chunk for a pipeline listing fletcher32 is a bare Blosc frame:
    /// recognise it only when the checksum does not verify, so real HDF5
    /// chunks are never misread.
    fn hsds_frame_without_checksum(&self, data: &[u8]) -> bool {
        let has_compressor = self.filters.iter().any(Filter::is_compressor);
        has_compressor
            && blosc::is_frame(data)
            && !(data.len() >= 4
                && fletcher::verify(&data[..data.len() - 4], &data[data.len() - 4..]))
    }
}

impl std::fmt::Display for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.filters.iter().map(Filter::label).collect();
        write!(f, "[{}]", names.join(" → "))
    }
}

#[cfg(test)]
mod tests;
