//! Arrow tables across the Arrow PyCapsule interface (the C data and
//! stream interfaces): record batches leave and enter without a copy, to
//! and from pyarrow, Polars, DuckDB or any other library that speaks it.

use std::ffi::CStr;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{Schema, SchemaRef};
use h5lake_engine::EngineError;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::{to_py_err, RawFile};

const STREAM: &CStr = c"arrow_array_stream";
const SCHEMA: &CStr = c"arrow_schema";

/// `batches` as an `arrow_array_stream` capsule (moved out by whoever
/// imports it; released with the capsule otherwise).
fn export(
    py: Python<'_>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'_, PyCapsule>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new(py, stream, Some(STREAM.to_owned()))
}

/// The capsule `obj.<method>()` gives, checked to be named `name`.
fn capsule<'py>(
    obj: &Bound<'py, PyAny>,
    method: &str,
    name: &CStr,
) -> PyResult<Bound<'py, PyCapsule>> {
    let cap = obj.call_method0(method).map_err(|_| {
        PyTypeError::new_err(format!(
            "expected an Arrow table, record batch reader or schema (an object with {method}), got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let cap = cap.downcast_into::<PyCapsule>()?;
    if cap.name()? != Some(name) {
        return Err(PyValueError::new_err(format!(
            "{method} gave a capsule not named {name:?}"
        )));
    }
    Ok(cap)
}

/// The stream of record batches of an object with `__arrow_c_stream__`.
fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let cap = capsule(obj, "__arrow_c_stream__", STREAM)?;
    // SAFETY: the capsule holds an ArrowArrayStream (its name says so);
    // from_raw moves it out and marks the capsule's copy released.
    unsafe { RecordBatchStreamReader::from_raw(cap.pointer().cast::<FFI_ArrowArrayStream>()) }
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow stream: {e}")))
}

/// The schema of an object with `__arrow_c_schema__`.
fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let cap = capsule(obj, "__arrow_c_schema__", SCHEMA)?;
    // SAFETY: the capsule holds an ArrowSchema (its name says so), only
    // read here; it stays owned by the capsule.
    let ffi = unsafe { &*cap.pointer().cast::<FFI_ArrowSchema>() };
    Schema::try_from(ffi)
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow schema: {e}")))
}

fn columnar_err(e: h5lake_columnar::ColumnarError) -> PyErr {
    to_py_err(EngineError::from(e))
}

/// The compound type (HSDS JSON) a table of this Arrow schema is stored as,
/// and the Arrow types of the columns kept as their integer storage (JSON).
#[pyfunction]
pub(crate) fn table_type(schema: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let table = h5lake_columnar::TableSchema::of(&import_schema(schema)?).map_err(columnar_err)?;
    Ok((
        table.dtype().to_json().to_string(),
        serde_json::Value::Object(table.arrow_types().clone()).to_string(),
    ))
}

/// Rows `start..stop` of the members `fields` of a 1-D columnar dataset as
/// an Arrow stream capsule (nulls kept; values as h5py shows them, but for
/// the members `as_stored`).
#[pyfunction]
#[pyo3(signature = (file, dset_id, start, stop, fields = None, as_stored = Vec::new()))]
pub(crate) fn table_read<'py>(
    py: Python<'py>,
    file: &RawFile,
    dset_id: &str,
    start: u64,
    stop: u64,
    fields: Option<Vec<String>>,
    as_stored: Vec<String>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let (schema, batches) = file.run(py, |d| {
        // The members shown as h5py shows them (all but `as_stored`).
        let mut dtype = d.dataset(dset_id)?.dtype.clone();
        if let h5lake_types::Datatype::Compound { fields, .. } = &mut dtype {
            fields.retain(|f| !as_stored.contains(&f.name));
        }
        let (schema, batches) = d.read_arrow(dset_id, start..stop, fields.as_deref())?;
        let shown = h5lake_columnar::present(&dtype, &RecordBatch::new_empty(schema))?;
        let batches = batches
            .iter()
            .map(|b| h5lake_columnar::present(&dtype, b))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((shown.schema(), batches))
    })?;
    export(py, schema, batches)
}

/// Writes the record batches of `data` (anything with
/// `__arrow_c_stream__`) to the 1-D columnar dataset `dset_id`: from row
/// `at` on (inside the extent), or appended when `at` is `None` (the
/// dataset grows by each group of rows as it is written, atomically, so
/// concurrent appenders never overlap). Rows are gathered into whole
/// chunks before they are written; memory stays bounded by a chunk.
/// Returns the rows written.
#[pyfunction]
#[pyo3(signature = (file, dset_id, data, at = None))]
pub(crate) fn table_write(
    py: Python<'_>,
    file: &RawFile,
    dset_id: &str,
    data: &Bound<'_, PyAny>,
    at: Option<u64>,
) -> PyResult<u64> {
    let reader = import_stream(data)?;
    file.run(py, move |d| {
        let m = d.dataset(dset_id)?;
        // Checked before anything is written: the columns are the members.
        let table = h5lake_columnar::TableSchema::for_dtype(&m.dtype)?;
        table.cast(&RecordBatch::new_empty(reader.schema()))?;
        let batches = reader
            .map(|b| b.map_err(|e| EngineError::Invalid(format!("reading the Arrow stream: {e}"))));
        d.write_batches(dset_id, batches, at)
    })
}

/// `data` (anything with `__arrow_c_stream__`) with the columns
/// `types_json` names (column → pyarrow type name: a dataset's
/// `arrow_types`) given those Arrow types back; see
/// [`h5lake_columnar::restore_arrow_types`].
#[pyfunction]
pub(crate) fn restore_arrow_types<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    types_json: &str,
    dtype_json: &str,
) -> PyResult<Bound<'py, PyCapsule>> {
    let dtype = serde_json::from_str(dtype_json)
        .ok()
        .and_then(|v| h5lake_types::Datatype::from_json(&v).ok())
        .ok_or_else(|| PyValueError::new_err(format!("not an HDF5 type: {dtype_json:?}")))?;
    let types = match serde_json::from_str(types_json) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => {
            return Err(PyValueError::new_err(format!(
                "arrow_types must be a JSON object of column names to Arrow type names, not {types_json:?}"
            )))
        }
    };
    let reader = import_stream(data)?;
    let empty = RecordBatch::new_empty(reader.schema());
    let batches = reader
        .map(|b| {
            let b =
                b.map_err(|e| PyValueError::new_err(format!("reading the Arrow stream: {e}")))?;
            h5lake_columnar::restore_arrow_types(&dtype, &b, &types).map_err(columnar_err)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let schema = h5lake_columnar::restore_arrow_types(&dtype, &empty, &types)
        .map_err(columnar_err)?
        .schema();
    export(py, schema, batches)
}
