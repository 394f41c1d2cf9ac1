//! Reading a columnar chunk in parts: the footer first, then only the byte
//! ranges of the columns a read needs, decoded straight into the caller's
//! rows.
//!
//! Columns of plain fixed-width values (what h5lake writes for numbers,
//! fixed strings and opaque members) are copied from their data pages into
//! the rows as they are, with no Arrow array in between; every other column
//! (dictionary pages, nulls, nested and list members) goes through Arrow's
//! reader over the same fetched ranges.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use bytes::{Buf, Bytes};
use h5lake_types::{Datatype, Field};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
    RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageReader};
use parquet::errors::ParquetError;
use parquet::file::metadata::{FooterTail, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::page_index::index_reader::decode_offset_index;
use parquet::file::page_index::offset_index::PageLocation;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::schema::types::ColumnDescriptor;

use crate::arrays;
use crate::{ColumnarError, Result};

/// How many last bytes of a chunk object to read first: enough for the
/// footer of any chunk h5lake writes, so that a read takes two requests
/// (the tail, then the columns).
pub const TAIL_BYTES: u64 = 64 << 10;

/// Byte ranges of an object this close are read as one.
const MERGE_GAP: u64 = 8 << 10;

/// A chunk object's footer (its Parquet metadata).
#[derive(Clone, Debug)]
pub struct Footer {
    meta: Arc<ParquetMetaData>,
}

impl Footer {
    /// How Arrow's reader reads this file: dictionaries of decimals (which
    /// it cannot make) as plain decimals.
    fn reader_meta(&self) -> Result<ArrowReaderMetadata> {
        let meta = ArrowReaderMetadata::try_new(self.meta.clone(), ArrowReaderOptions::new())?;
        match crate::input::undictionaried_decimals(meta.schema()) {
            Some(schema) => Ok(ArrowReaderMetadata::try_new(
                self.meta.clone(),
                ArrowReaderOptions::new().with_schema(schema),
            )?),
            None => Ok(meta),
        }
    }
}

/// What the tail of an object gave.
#[derive(Debug)]
pub enum FooterRead {
    Parsed(Footer),
    /// The footer is longer than the tail: read this range of the object
    /// and give it to [`Footer::parse`].
    Need(Range<u64>),
}

const FOOTER_TAIL: usize = 8;

impl Footer {
    /// The footer of an object of `len` bytes whose last bytes are `tail`.
    ///
    /// # Errors
    /// An object that is not a Parquet file.
    pub fn from_tail(len: u64, tail: &[u8]) -> Result<FooterRead> {
        if len < 12 || tail.len() < FOOTER_TAIL || tail.len() as u64 > len {
            return Err(ColumnarError::Corrupt(format!(
                "a columnar chunk of {len} bytes is not a Parquet object"
            )));
        }
        let last: &[u8; FOOTER_TAIL] = tail[tail.len() - FOOTER_TAIL..]
            .try_into()
            .expect("eight bytes");
        let ft = FooterTail::try_new(last)?;
        if ft.is_encrypted_footer() {
            return Err(ColumnarError::Unsupported(
                "an encrypted Parquet footer".into(),
            ));
        }
        let need = ft.metadata_length() as u64 + FOOTER_TAIL as u64;
        if need + 4 > len {
            return Err(ColumnarError::Corrupt(format!(
                "a Parquet footer of {need} bytes in an object of {len}"
            )));
        }
        if need <= tail.len() as u64 {
            let at = tail.len() - need as usize;
            return Ok(FooterRead::Parsed(Self::parse(
                len,
                &tail[at..tail.len() - FOOTER_TAIL],
            )?));
        }
        Ok(FooterRead::Need(len - need..len - FOOTER_TAIL as u64))
    }

    /// The footer from its metadata bytes (the range [`FooterRead::Need`]
    /// names) of an object of `len` bytes.
    ///
    /// # Errors
    /// Bytes that are not Parquet metadata.
    pub fn parse(len: u64, metadata: &[u8]) -> Result<Self> {
        let meta = ParquetMetaDataReader::decode_metadata(metadata)?;
        for rg in meta.row_groups() {
            for col in rg.columns() {
                let (start, n) = col.byte_range();
                if start.checked_add(n).map_or(true, |end| end > len) {
                    return Err(ColumnarError::Corrupt(format!(
                        "a Parquet column chunk at {start}+{n} in an object of {len} bytes"
                    )));
                }
            }
        }
        Ok(Self {
            meta: Arc::new(meta),
        })
    }

    /// The footer of a whole object.
    ///
    /// # Errors
    /// As [`Footer::from_tail`].
    pub fn of_whole(data: &[u8]) -> Result<Self> {
        let len = data.len() as u64;
        match Self::from_tail(len, data)? {
            FooterRead::Parsed(f) => Ok(f),
            FooterRead::Need(r) => Self::parse(len, &data[r.start as usize..r.end as usize]),
        }
    }

    /// The rows stored.
    pub fn rows(&self) -> i64 {
        self.meta.file_metadata().num_rows()
    }

    /// For each leaf column named (its path, parts joined by `.`): how
    /// many rows of the object hold no value there (null, or inside a
    /// null struct), by the column statistics; 0 for a name with no
    /// column.
    ///
    /// # Errors
    /// A nullable column without a null count in its statistics.
    pub fn null_counts(&self, names: &[&str]) -> Result<Vec<u64>> {
        let schema = self.meta.file_metadata().schema_descr();
        names
            .iter()
            .map(|name| {
                let Some(leaf) = (0..schema.num_columns())
                    .find(|&l| schema.column(l).path().parts().join(".") == *name)
                else {
                    return Ok(0);
                };
                if schema.column(leaf).max_def_level() == 0 {
                    return Ok(0);
                }
                self.meta.row_groups().iter().try_fold(0u64, |n, rg| {
                    rg.column(leaf)
                        .statistics()
                        .and_then(|st| st.null_count_opt())
                        .map(|k| n + k)
                        .ok_or_else(|| {
                            ColumnarError::Corrupt(format!(
                                "column {name:?} of a columnar chunk has no null count"
                            ))
                        })
                })
            })
            .collect()
    }

    /// Whether some column may hold a null: one that can, by its schema,
    /// and whose statistics do not say it holds none.
    pub fn may_hold_nulls(&self) -> bool {
        let schema = self.meta.file_metadata().schema_descr();
        (0..schema.num_columns()).any(|leaf| {
            schema.column(leaf).max_def_level() > 0
                && self.meta.row_groups().iter().any(|rg| {
                    rg.column(leaf)
                        .statistics()
                        .and_then(|st| st.null_count_opt())
                        .is_none_or(|k| k > 0)
                })
        })
    }

    /// The root column of each member of `dtype` (a compound), by name.
    fn roots(&self, fields: &[Field]) -> Result<Vec<usize>> {
        let schema = self.meta.file_metadata().schema_descr();
        let top = schema.root_schema().get_fields();
        fields
            .iter()
            .map(|f| {
                top.iter().position(|t| t.name() == f.name).ok_or_else(|| {
                    ColumnarError::Corrupt(format!("a columnar chunk without column {:?}", f.name))
                })
            })
            .collect()
    }

    /// The byte ranges of the object that hold the columns of `dtype`'s
    /// members (sorted, nearby ones merged): all a read of those members
    /// needs besides the footer.
    ///
    /// # Errors
    /// A member without a column.
    pub fn ranges(&self, dtype: &Datatype) -> Result<Vec<Range<u64>>> {
        self.ranges_in(dtype, None)
    }

    /// The byte ranges a read of rows `rows` of `dtype`'s members needs
    /// (sorted, nearby ones merged): of a member copied page by page, only
    /// the pages that hold those rows, by the column's offset index, when
    /// the object has one row group and `parts` (what was read of it so
    /// far: its tail) holds the index; of any other member, its whole
    /// column chunk.
    ///
    /// # Errors
    /// A member without a column.
    pub fn ranges_for_rows(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rows: Range<usize>,
    ) -> Result<Vec<Range<u64>>> {
        let fields = compound_fields(dtype)?;
        let roots = self.roots(fields)?;
        let mut ranges = Vec::new();
        for (f, &root) in fields.iter().zip(&roots) {
            let paged = self
                .plain_leaf(f, root)
                .and_then(|(leaf, _)| self.page_locations(parts, leaf));
            if let Some(pages) = paged {
                ranges.extend(pages_of_rows(&pages, &rows).map(|p| {
                    let at = p.offset as u64;
                    at..at + p.compressed_page_size as u64
                }));
                continue;
            }
            self.column_chunk_ranges(&[root], None, &mut ranges);
        }
        Ok(merge_ranges(ranges))
    }

    /// Pushes onto `out` the byte range of every column chunk under the
    /// column roots `roots`, of row group `only` or of all.
    fn column_chunk_ranges(&self, roots: &[usize], only: Option<usize>, out: &mut Vec<Range<u64>>) {
        let schema = self.meta.file_metadata().schema_descr();
        for (i, rg) in self.meta.row_groups().iter().enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            for (leaf, col) in rg.columns().iter().enumerate() {
                if roots.contains(&schema.get_column_root_idx(leaf)) {
                    let (start, n) = col.byte_range();
                    out.push(start..start + n);
                }
            }
        }
    }

    /// Rows `rows` of `dtype`'s members into `dst`, which holds exactly
    /// those rows; rows past the stored ones, and nulls, read as `fill`.
    /// `parts` must hold the [`Footer::ranges_for_rows`] of these rows.
    ///
    /// # Errors
    /// As [`Footer::decode_into`].
    pub fn decode_rows_into(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rows: Range<usize>,
        fill: &[u8],
        dst: &mut [u8],
    ) -> Result<()> {
        let size = record_size(dtype)?;
        if rows.start > rows.end || dst.len() != rows.len() * size {
            return Err(ColumnarError::Corrupt(format!(
                "rows {rows:?} into {} bytes of {size}-byte elements",
                dst.len()
            )));
        }
        let stored = usize::try_from(self.rows()).unwrap_or(0);
        let (a, b) = (rows.start.min(stored), rows.end.min(stored));
        let (held, past) = dst.split_at_mut((b - a) * size);
        self.decode_span_into(dtype, parts, None, a..b, fill, held)?;
        fill_rows(past, fill, size);
        Ok(())
    }

    /// The column of member `f` (column root `root`) and how its values are
    /// copied, when it is one leaf of plain fixed-width values without
    /// nulls: the members whose pages are copied into rows as they are.
    fn plain_leaf(&self, f: &Field, root: usize) -> Option<(usize, PlainCopy)> {
        let schema = self.meta.file_metadata().schema_descr();
        let mut leaves =
            (0..schema.num_columns()).filter(|&l| schema.get_column_root_idx(l) == root);
        let (leaf, None) = (leaves.next()?, leaves.next()) else {
            return None;
        };
        if !self.no_nulls(leaf) {
            return None;
        }
        PlainCopy::of(&f.dtype, &schema.column(leaf)).map(|copy| (leaf, copy))
    }

    /// The pages of column `leaf`, from its offset index, when the object
    /// has one row group, the column holds plain pages only (no dictionary)
    /// and `parts` holds the index; `None` otherwise (the column is read
    /// whole). The index is checked against the column chunk it describes.
    fn page_locations(&self, parts: &Parts, leaf: usize) -> Option<Vec<PageLocation>> {
        if self.meta.num_row_groups() != 1 {
            return None;
        }
        let col = self.meta.row_group(0).column(leaf);
        let plain = col
            .encodings()
            .all(|e| matches!(e, Encoding::PLAIN | Encoding::RLE));
        if !plain || col.dictionary_page_offset().is_some() {
            return None;
        }
        let at = u64::try_from(col.offset_index_offset()?).ok()?;
        let len = u64::try_from(col.offset_index_length()?).ok()?;
        let pages = decode_offset_index(&parts.slice(at, len).ok()?)
            .ok()?
            .page_locations()
            .clone();
        let (start, n) = col.byte_range();
        let rows = self.meta.row_group(0).num_rows();
        let inside = pages.iter().all(|p| {
            p.compressed_page_size > 0
                && u64::try_from(p.offset)
                    .is_ok_and(|o| o >= start && o + p.compressed_page_size as u64 <= start + n)
                && (0..rows).contains(&p.first_row_index)
        });
        let ordered = pages
            .windows(2)
            .all(|w| w[0].first_row_index < w[1].first_row_index && w[0].offset < w[1].offset);
        let first = pages
            .first()
            .is_some_and(|p| p.first_row_index == 0 && p.offset as u64 == start);
        (inside && ordered && first).then_some(pages)
    }

    /// As [`Footer::ranges`], of row group `rg` only.
    ///
    /// # Errors
    /// As [`Footer::ranges`]; no such row group.
    pub fn row_group_ranges(&self, dtype: &Datatype, rg: usize) -> Result<Vec<Range<u64>>> {
        self.check_row_group(rg)?;
        self.ranges_in(dtype, Some(rg))
    }

    fn check_row_group(&self, rg: usize) -> Result<()> {
        if rg >= self.meta.num_row_groups() {
            return Err(ColumnarError::Corrupt(format!(
                "row group {rg} of a Parquet file of {}",
                self.meta.num_row_groups()
            )));
        }
        Ok(())
    }

    /// The rows of each row group.
    pub fn row_group_rows(&self) -> Vec<u64> {
        self.meta
            .row_groups()
            .iter()
            .map(|rg| u64::try_from(rg.num_rows()).unwrap_or(0))
            .collect()
    }

    /// The Arrow schema the file's columns read as.
    ///
    /// # Errors
    /// A Parquet schema Arrow cannot read.
    pub fn arrow_schema(&self) -> Result<arrow_schema::SchemaRef> {
        let meta = self.reader_meta()?;
        Ok(meta.schema().clone())
    }

    fn ranges_in(&self, dtype: &Datatype, only: Option<usize>) -> Result<Vec<Range<u64>>> {
        let fields = compound_fields(dtype)?;
        let roots = self.roots(fields)?;
        let mut ranges: Vec<Range<u64>> = Vec::new();
        self.column_chunk_ranges(&roots, only, &mut ranges);
        Ok(merge_ranges(ranges))
    }

    /// Decodes the members of `dtype` (a compound of fixed size, each
    /// member a column of the object) into `dst`: `n` elements in row
    /// layout, of which the object holds the first [`Footer::rows`]; the
    /// rest, and nulls, read as `fill` (one element of `dtype`; zero bytes
    /// when empty). `parts` must hold the [`Footer::ranges`] of `dtype`.
    ///
    /// # Errors
    /// A chunk of other rows or columns than `dtype` and `n` say; ranges
    /// missing from `parts`.
    pub fn decode_into(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        n: usize,
        fill: &[u8],
        dst: &mut [u8],
    ) -> Result<()> {
        let size = record_size(dtype)?;
        if dst.len() != n * size {
            return Err(ColumnarError::Corrupt(format!(
                "{} bytes for {n} elements of {size}",
                dst.len()
            )));
        }
        let stored = usize::try_from(self.rows())
            .ok()
            .filter(|&r| r <= n)
            .ok_or_else(|| {
                ColumnarError::Corrupt(format!(
                    "a columnar chunk of {} rows, expected at most {n}",
                    self.rows()
                ))
            })?;
        self.decode_span_into(
            dtype,
            parts,
            None,
            0..stored,
            fill,
            &mut dst[..stored * size],
        )?;
        fill_rows(&mut dst[stored * size..], fill, size);
        Ok(())
    }

    /// As [`Footer::decode_into`], rows `rows` of row group `rg` (counted
    /// from its first row) into `dst`, which holds exactly those rows:
    /// what a file of many row groups, linked as a dataset, reads into a
    /// chunk's place. `parts` must hold the [`Footer::row_group_ranges`]
    /// of `dtype` and `rg`.
    ///
    /// # Errors
    /// As [`Footer::decode_into`]; no such row group, or rows past its end.
    pub fn decode_row_group_into(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rg: usize,
        rows: Range<usize>,
        fill: &[u8],
        dst: &mut [u8],
    ) -> Result<()> {
        self.check_row_group(rg)?;
        let size = record_size(dtype)?;
        let in_group = usize::try_from(self.meta.row_group(rg).num_rows()).unwrap_or(0);
        if rows.start > rows.end || rows.end > in_group || dst.len() != rows.len() * size {
            return Err(ColumnarError::Corrupt(format!(
                "rows {rows:?} of a row group of {in_group} into {} bytes of {size}-byte elements",
                dst.len()
            )));
        }
        self.decode_span_into(dtype, parts, Some(rg), rows, fill, dst)
    }

    /// Rows `rows` of row group `rg` (or of the whole object) into `dst`
    /// (exactly those rows): plain columns without nulls copied from their
    /// pages, the rest through Arrow.
    fn decode_span_into(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rg: Option<usize>,
        rows: Range<usize>,
        fill: &[u8],
        dst: &mut [u8],
    ) -> Result<()> {
        let fields = compound_fields(dtype)?;
        let size = record_size(dtype)?;
        let roots = self.roots(fields)?;
        let reader = Arc::new(parts.clone());
        let mut plain = Vec::new();
        let mut by_arrow = Vec::new();
        for (k, f) in fields.iter().enumerate() {
            let leaf = self.plain_leaf(f, roots[k]);
            let copy = leaf.map(|(_, c)| c);
            let pages = match leaf {
                Some((leaf, copy)) => {
                    match rg.is_none().then(|| self.page_locations(parts, leaf)) {
                        Some(Some(locations)) => {
                            self.paged_plain_pages(&reader, leaf, copy, locations, &rows)?
                        }
                        _ => self.plain_pages(&reader, leaf, copy, rg)?,
                    }
                }
                None => None,
            };
            match (copy, pages) {
                (Some(copy), Some(pages)) => plain.push(PlainColumn {
                    copy,
                    offset: f.offset,
                    pages: clip_pages(pages, copy, &rows)?,
                }),
                _ => by_arrow.push(k),
            }
        }
        interleave(&plain, dst, size);
        if !by_arrow.is_empty() {
            self.decode_by_arrow(fields, &roots, &by_arrow, parts, rg, rows, fill, dst, size)?;
        }
        Ok(())
    }

    /// Whether column `leaf` holds no nulls in any row group (by its
    /// statistics; a required column never does).
    fn no_nulls(&self, leaf: usize) -> bool {
        let schema = self.meta.file_metadata().schema_descr();
        schema.column(leaf).max_def_level() == 0
            || self.meta.row_groups().iter().all(|rg| {
                rg.column(leaf)
                    .statistics()
                    .and_then(|st| st.null_count_opt())
                    == Some(0)
            })
    }

    /// The data pages of column `leaf` when every one holds plain values
    /// (`None` otherwise: the column is decoded another way). Uncompressed
    /// pages are slices of `reader`'s bytes.
    fn plain_pages(
        &self,
        reader: &Arc<Parts>,
        leaf: usize,
        p: PlainCopy,
        only: Option<usize>,
    ) -> Result<Option<Vec<PlainPage>>> {
        let groups: Vec<_> = match only {
            Some(rg) => vec![self.meta.row_group(rg)],
            None => self.meta.row_groups().iter().collect(),
        };
        let stored: usize = groups
            .iter()
            .map(|rg| usize::try_from(rg.num_rows()).unwrap_or(usize::MAX))
            .fold(0, usize::saturating_add);
        let nullable = self.nullable(leaf);
        let mut row = 0usize;
        let mut out = Vec::new();
        for rg in groups {
            let col = rg.column(leaf);
            let rg_rows = usize::try_from(rg.num_rows()).unwrap_or(usize::MAX);
            let mut pages = SerializedPageReader::new(reader.clone(), col, rg_rows, None)?;
            let rg_end = row.saturating_add(rg_rows);
            while let Some(page) = pages.get_next_page()? {
                let Some((values, count)) = plain_values(page, nullable) else {
                    return Ok(None);
                };
                let Some(end) = row.checked_add(count).filter(|&e| e <= rg_end.min(stored)) else {
                    return Err(ColumnarError::Corrupt(format!(
                        "a Parquet page of {count} values past the chunk's {stored} rows"
                    )));
                };
                if count > 0 {
                    out.push(p.page(row, count, values)?);
                }
                row = end;
            }
            if row != rg_end {
                return Err(ColumnarError::Corrupt(format!(
                    "a Parquet column chunk of {row} values in a row group of {rg_end}"
                )));
            }
        }
        if row != stored {
            return Err(ColumnarError::Corrupt(format!(
                "a columnar chunk yielded {row} rows, expected {stored}"
            )));
        }
        Ok(Some(out))
    }

    /// Whether column `leaf` may hold nulls (has definition levels).
    fn nullable(&self, leaf: usize) -> bool {
        self.meta
            .file_metadata()
            .schema_descr()
            .column(leaf)
            .max_def_level()
            > 0
    }

    /// As [`Footer::plain_pages`], of the object's one row group, reading
    /// only the pages (at `locations`, from the offset index) that hold
    /// rows of `rows`; the others are skipped unread.
    fn paged_plain_pages(
        &self,
        reader: &Arc<Parts>,
        leaf: usize,
        p: PlainCopy,
        locations: Vec<PageLocation>,
        rows: &Range<usize>,
    ) -> Result<Option<Vec<PlainPage>>> {
        let rg = self.meta.row_group(0);
        let stored = usize::try_from(rg.num_rows()).unwrap_or(0);
        let nullable = self.nullable(leaf);
        let firsts: Vec<usize> = locations
            .iter()
            .map(|l| l.first_row_index as usize)
            .chain(std::iter::once(stored))
            .collect();
        let mut pages =
            SerializedPageReader::new(reader.clone(), rg.column(leaf), stored, Some(locations))?;
        let mut out = Vec::new();
        for w in firsts.windows(2) {
            let (first, end) = (w[0], w[1]);
            if end <= rows.start || first >= rows.end {
                pages.skip_next_page()?;
                continue;
            }
            let Some(page) = pages.get_next_page()? else {
                return Err(ColumnarError::Corrupt(
                    "a Parquet column chunk with fewer pages than its offset index".into(),
                ));
            };
            let Some((values, count)) = plain_values(page, nullable) else {
                return Ok(None);
            };
            if count != end - first {
                return Err(ColumnarError::Corrupt(format!(
                    "a Parquet page of {count} values where its offset index has {} rows",
                    end - first
                )));
            }
            out.push(p.page(first, count, values)?);
        }
        Ok(Some(out))
    }

    /// Rows `rows` (clipped at the rows stored) of the columns of
    /// `dtype`'s members (a compound), as one record batch of the columns'
    /// stored types, in `dtype`'s order; nulls kept. `parts` must hold the
    /// [`Footer::ranges`] of `dtype`.
    ///
    /// # Errors
    /// A member without a column; ranges missing from `parts`.
    pub fn read_batch(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rows: Range<usize>,
    ) -> Result<RecordBatch> {
        self.read_batch_in(dtype, parts, None, rows)
    }

    /// As [`Footer::read_batch`], rows `rows` of row group `rg` (rows
    /// counted from the row group's first); `parts` must hold the
    /// [`Footer::row_group_ranges`] of `dtype` and `rg`.
    ///
    /// # Errors
    /// As [`Footer::read_batch`]; no such row group.
    pub fn read_row_group(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rg: usize,
        rows: Range<usize>,
    ) -> Result<RecordBatch> {
        self.check_row_group(rg)?;
        self.read_batch_in(dtype, parts, Some(rg), rows)
    }

    fn read_batch_in(
        &self,
        dtype: &Datatype,
        parts: &Parts,
        rg: Option<usize>,
        rows: Range<usize>,
    ) -> Result<RecordBatch> {
        let fields = compound_fields(dtype)?;
        let roots = self.roots(fields)?;
        let stored = match rg {
            Some(rg) => usize::try_from(self.meta.row_group(rg).num_rows()).unwrap_or(0),
            None => usize::try_from(self.rows()).unwrap_or(0),
        };
        let (lo, hi) = (rows.start.min(stored), rows.end.min(stored));
        let meta = self.reader_meta()?;
        let mut wanted = roots.clone();
        wanted.sort_unstable();
        wanted.dedup();
        let mask = ProjectionMask::roots(meta.parquet_schema(), wanted);
        let selection = RowSelection::from(vec![
            RowSelector::skip(lo),
            RowSelector::select(hi - lo),
            RowSelector::skip(stored - hi),
        ]);
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(parts.clone(), meta)
            .with_projection(mask)
            .with_row_selection(selection)
            .with_batch_size((hi - lo).max(1));
        if let Some(rg) = rg {
            builder = builder.with_row_groups(vec![rg]);
        }
        let reader = builder.build()?;
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
        if batch.num_rows() != hi - lo {
            return Err(ColumnarError::Corrupt(format!(
                "a columnar chunk gave {} rows of {}..{}",
                batch.num_rows(),
                lo,
                hi
            )));
        }
        let mut out_fields = Vec::with_capacity(fields.len());
        let mut columns = Vec::with_capacity(fields.len());
        for f in fields {
            let (i, field) = schema.column_with_name(&f.name).ok_or_else(|| {
                ColumnarError::Corrupt(format!("a columnar chunk without column {:?}", f.name))
            })?;
            out_fields.push(field.clone());
            columns.push(batch.column(i).clone());
        }
        crate::batch_with_rows(
            Arc::new(arrow_schema::Schema::new(out_fields)),
            columns,
            hi - lo,
        )
    }

    /// Decodes the members `which` (indices into `fields`) with Arrow's
    /// reader into `dst`'s rows.
    #[allow(clippy::too_many_arguments)]
    /// Members `which` of rows `rows` of row group `rg` (or of the whole
    /// object) into `dst` (exactly those rows), through Arrow.
    #[allow(clippy::too_many_arguments)]
    fn decode_by_arrow(
        &self,
        fields: &[Field],
        roots: &[usize],
        which: &[usize],
        parts: &Parts,
        rg: Option<usize>,
        rows: Range<usize>,
        fill: &[u8],
        dst: &mut [u8],
        size: usize,
    ) -> Result<()> {
        let meta = self.reader_meta()?;
        let stored = match rg {
            Some(rg) => usize::try_from(self.meta.row_group(rg).num_rows()).unwrap_or(0),
            None => usize::try_from(self.rows()).unwrap_or(0),
        };
        let mut wanted: Vec<usize> = which.iter().map(|&k| roots[k]).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mask = ProjectionMask::roots(meta.parquet_schema(), wanted);
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(parts.clone(), meta)
            .with_projection(mask)
            .with_batch_size(rows.len().max(1));
        if let Some(rg) = rg {
            builder = builder.with_row_groups(vec![rg]);
        }
        if rows != (0..stored) {
            builder = builder.with_row_selection(RowSelection::from(vec![
                RowSelector::skip(rows.start),
                RowSelector::select(rows.len()),
                RowSelector::skip(stored.saturating_sub(rows.end)),
            ]));
        }
        let mut row = 0usize;
        for batch in builder.build()? {
            let batch = batch?;
            let n = batch.num_rows();
            if row + n > rows.len() {
                return Err(ColumnarError::Corrupt(format!(
                    "a columnar chunk of more than {} rows",
                    rows.len()
                )));
            }
            for &k in which {
                let f = &fields[k];
                let col = batch.column_by_name(&f.name).ok_or_else(|| {
                    ColumnarError::Corrupt(format!("a columnar chunk without column {:?}", f.name))
                })?;
                // Another writer's file may hold a member in another Arrow
                // type (a decimal, a timestamp unit).
                let to = crate::arrays::member_type(&f.dtype)?;
                let col = crate::table::conform_column(&f.name, col, &to)?;
                crate::member_rows(f, col.as_ref(), n, fill, &mut dst[row * size..], size)?;
            }
            row += n;
        }
        if row != rows.len() {
            return Err(ColumnarError::Corrupt(format!(
                "a columnar chunk yielded {row} rows, expected {}",
                rows.len()
            )));
        }
        Ok(())
    }
}

fn record_size(dtype: &Datatype) -> Result<usize> {
    dtype.fixed_size().ok_or_else(|| {
        ColumnarError::Unsupported("decoding variable-length records in place".into())
    })
}

/// The parts of plain `pages` in `rows`, their first rows counted from
/// `rows.start`.
fn clip_pages(
    pages: Vec<PlainPage>,
    copy: PlainCopy,
    rows: &Range<usize>,
) -> Result<Vec<PlainPage>> {
    let mut out = Vec::with_capacity(pages.len());
    for p in pages {
        let (a, b) = (p.first.max(rows.start), (p.first + p.count).min(rows.end));
        if a >= b {
            continue;
        }
        // The values copied are checked here: the walk to them and over
        // them stays inside the page.
        let from = copy.values.span(&p.values, a - p.first)?;
        let to = from + copy.values.span(&p.values[from..], b - a)?;
        out.push(PlainPage {
            first: a - rows.start,
            count: b - a,
            values: p.values.slice(from..to),
        });
    }
    Ok(out)
}

/// The plain values of a data page and how many there are; `None` for
/// any other page (the column is decoded another way).
fn plain_values(page: Page, nullable: bool) -> Option<(Bytes, usize)> {
    match page {
        Page::DataPage {
            buf,
            num_values,
            encoding: Encoding::PLAIN,
            def_level_encoding,
            ..
        } => {
            // A nullable column without nulls: its definition levels (all
            // 1) come first, after their length.
            let levels = if nullable {
                if def_level_encoding != Encoding::RLE || buf.len() < 4 {
                    return None;
                }
                4 + u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")) as usize
            } else {
                0
            };
            Some((buf.slice(levels.min(buf.len())..), num_values as usize))
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding: Encoding::PLAIN,
            num_nulls: 0,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            let levels = (def_levels_byte_len + rep_levels_byte_len) as usize;
            Some((buf.slice(levels.min(buf.len())..), num_values as usize))
        }
        _ => None,
    }
}

/// The pages (of a column's offset index) that hold rows of `rows`.
fn pages_of_rows<'a>(
    pages: &'a [PageLocation],
    rows: &'a Range<usize>,
) -> impl Iterator<Item = &'a PageLocation> {
    pages.iter().enumerate().filter_map(move |(i, p)| {
        let first = p.first_row_index as usize;
        let end = pages
            .get(i + 1)
            .map_or(usize::MAX, |n| n.first_row_index as usize);
        (first < rows.end && end > rows.start).then_some(p)
    })
}

/// `ranges` sorted, with those that overlap or lie within [`MERGE_GAP`]
/// of each other made one.
fn merge_ranges(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(m) if r.start <= m.end + MERGE_GAP => m.end = m.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

fn compound_fields(dtype: &Datatype) -> Result<&[Field]> {
    match dtype {
        Datatype::Compound { fields, .. } => Ok(fields),
        _ => Err(ColumnarError::Unsupported(format!(
            "a columnar chunk of type {}",
            dtype.to_json()
        ))),
    }
}

/// One member's plain values, page by page.
struct PlainColumn {
    copy: PlainCopy,
    offset: usize,
    pages: Vec<PlainPage>,
}

/// The values of one plain data page: `count` values from row `first`,
/// checked to be whole values of their column.
struct PlainPage {
    first: usize,
    count: usize,
    values: Bytes,
}

/// Rows of output written per pass over the columns: a block small enough
/// to stay in the core's cache while every column writes its part of each
/// row, so that the output is written to memory once, not once a column.
const BLOCK_BYTES: usize = 64 << 10;

/// Writes the values of `columns` into `rows` (elements of `size` bytes,
/// as many as each column's pages hold), block of rows by block of rows.
fn interleave(columns: &[PlainColumn], rows: &mut [u8], size: usize) {
    if columns.is_empty() || size == 0 {
        return;
    }
    let n = rows.len() / size;
    if let Some(order) = tiling(columns, size) {
        interleave_tiled(columns, &order, rows, size, n);
        return;
    }
    let block = (BLOCK_BYTES / size).max(1);
    // Per column: its page, and the byte of that page its next row's value
    // starts at.
    let mut cursors = vec![(0usize, 0usize); columns.len()];
    let mut r0 = 0;
    while r0 < n {
        let r1 = (r0 + block).min(n);
        for (c, (page, at)) in columns.iter().zip(cursors.iter_mut()) {
            let mut row = r0;
            while row < r1 {
                let Some(p) = c.pages.get(*page) else {
                    break;
                };
                if row >= p.first + p.count {
                    (*page, *at) = (*page + 1, 0);
                    continue;
                }
                // Pages cover the rows they hold without gaps, each row once.
                let row_in = row.max(p.first);
                let upto = r1.min(p.first + p.count);
                *at += c.copy.copy(
                    &p.values[*at..],
                    &mut rows[row_in * size..upto * size],
                    size,
                    c.offset,
                    upto - row_in,
                );
                row = upto;
            }
        }
        r0 = r1;
    }
}

/// The most members a row is built from at once ([`tile`]).
const MAX_TILES: usize = 8;

/// When `columns` tile the row of `size` bytes exactly — all of one width
/// of 4 or 8 bytes, stored as they are read (no narrowing, no byte swap),
/// at offsets 0, w, 2w, … in some order, at most [`MAX_TILES`] of them — the
/// columns in the order of their offsets.
fn tiling(columns: &[PlainColumn], size: usize) -> Option<Vec<usize>> {
    let w = columns.first()?.copy.width;
    let k = columns.len();
    let as_read = |c: &PlainColumn| {
        matches!(c.copy.values, PlainValues::Fixed(p) if p == c.copy.width)
            && c.copy.width == w
            && !c.copy.swap
    };
    if !(w == 4 || w == 8) || !(2..=MAX_TILES).contains(&k) || k * w != size {
        return None;
    }
    if !columns.iter().all(as_read) {
        return None;
    }
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by_key(|&c| columns[c].offset);
    order
        .iter()
        .enumerate()
        .all(|(j, &c)| columns[c].offset == j * w)
        .then_some(order)
}

/// As [`interleave`], for columns that tile the row ([`tiling`]): each row
/// is written whole, once, from the columns' values side by side.
fn interleave_tiled(
    columns: &[PlainColumn],
    order: &[usize],
    rows: &mut [u8],
    size: usize,
    n: usize,
) {
    let w = size / order.len();
    let mut pages = vec![0usize; order.len()];
    let mut row = 0;
    while row < n {
        // The rows from `row` on that every column's current page holds.
        let mut upto = n;
        let mut from: [&[u8]; MAX_TILES] = [&[]; MAX_TILES];
        for (j, &c) in order.iter().enumerate() {
            let col = &columns[c];
            while col
                .pages
                .get(pages[j])
                .is_some_and(|p| row >= p.first + p.count)
            {
                pages[j] += 1;
            }
            let Some(p) = col.pages.get(pages[j]).filter(|p| p.first <= row) else {
                // (Pages cover their rows without gaps; nothing is left.)
                return;
            };
            upto = upto.min(p.first + p.count);
            from[j] = &p.values[(row - p.first) * w..];
        }
        tile(w, &from[..order.len()], &mut rows[row * size..upto * size]);
        row = upto;
    }
}

/// Writes rows of `from.len()` members of `w` bytes each (member `j` from
/// `from[j]`, as many rows as `rows` holds), row by row: written so that the
/// compiler turns the inner copies into shuffles and whole-vector stores.
fn tile(w: usize, from: &[&[u8]], rows: &mut [u8]) {
    macro_rules! tiles {
        ($($w:literal, $k:literal);*) => {
            match (w, from.len()) {
                $(($w, $k) => tile_k::<$w, $k>(from.try_into().expect("k members"), rows),)*
                _ => unreachable!("tiling() allows 2 to 8 members of 4 or 8 bytes"),
            }
        };
    }
    tiles!(4, 2; 4, 3; 4, 4; 4, 5; 4, 6; 4, 7; 4, 8; 8, 2; 8, 3; 8, 4; 8, 5; 8, 6; 8, 7; 8, 8);
}

fn tile_k<const W: usize, const K: usize>(from: [&[u8]; K], rows: &mut [u8]) {
    let n = rows.len() / (W * K);
    // One bounds check a member, outside the loop.
    let from: [&[[u8; W]]; K] = from.map(|m| {
        let (values, _) = m[..n * W].as_chunks::<W>();
        values
    });
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if W == 4 && K == 8 && std::arch::is_x86_feature_detected!("avx2") {
        let cols: [&[u8]; 8] = std::array::from_fn(|j| from[j % K].as_flattened());
        // SAFETY: AVX2 is present (checked above); every column holds `n`
        // values of 4 bytes and `rows` `n` rows of 32.
        done = unsafe { transpose_8x4_avx2(&cols, rows.as_mut_ptr(), n) };
    }
    let (out, _) = rows.as_chunks_mut::<W>();
    let out = &mut out[done * K..];
    for (r, row) in out.chunks_exact_mut(K).enumerate() {
        let r = r + done;
        for (j, slot) in row.iter_mut().enumerate() {
            // SAFETY: r < n, and every member holds n values (cut above).
            *slot = unsafe { *from[j].get_unchecked(r) };
        }
    }
}

/// Rows of eight 4-byte members from their columns, eight rows at a time
/// as an 8x8 transpose in registers; stores bypass the cache when the
/// rows are aligned for it (a big read's output is not read back soon, and
/// a cached store would first read each line it writes). Returns the rows
/// written (a multiple of 8; the caller writes the rest).
///
/// # Safety
/// AVX2 must be present; each of `cols` holds at least `n` 4-byte values
/// and `out` at least `n` rows of 32 bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose_8x4_avx2(cols: &[&[u8]; 8], out: *mut u8, n: usize) -> usize {
    use std::arch::x86_64::*;
    let blocks = n / 8;
    let stream = (out as usize) % 32 == 0;
    for b in 0..blocks {
        let at = b * 32;
        let a: [__m256i; 8] =
            std::array::from_fn(|j| _mm256_loadu_si256(cols[j].as_ptr().add(at) as *const __m256i));
        let rows = h5lake_types::transpose::transpose_8x8_epi32(a);
        let dst = out.add(b * 256) as *mut __m256i;
        for (i, row) in rows.into_iter().enumerate() {
            if stream {
                _mm256_stream_si256(dst.add(i), row);
            } else {
                _mm256_storeu_si256(dst.add(i), row);
            }
        }
    }
    if stream {
        _mm_sfence();
    }
    blocks * 8
}

/// Writes `fill` (one element; zero bytes when empty) into each element of
/// `rows`.
pub(crate) fn fill_rows(rows: &mut [u8], fill: &[u8], size: usize) {
    if fill.len() != size || fill.iter().all(|&b| b == 0) {
        rows.fill(0);
    } else {
        for r in rows.chunks_exact_mut(size) {
            r.copy_from_slice(fill);
        }
    }
}

/// A member whose column holds plain values that become the member's
/// bytes by a copy: each value as stored (see [`PlainValues`]), of which the
/// member keeps the first `width` bytes (integers narrower than 32 bits),
/// byte-swapped for a big-endian member. A fixed-length string stored
/// without its padding is padded again with zeros to `width`.
#[derive(Clone, Copy, Debug)]
struct PlainCopy {
    values: PlainValues,
    width: usize,
    swap: bool,
}

/// How a plain page holds its values.
#[derive(Clone, Copy, Debug)]
enum PlainValues {
    /// `n` bytes each (Parquet's physical width).
    Fixed(usize),
    /// Each its 4-byte little-endian length, then its bytes (Parquet's
    /// plain byte arrays).
    Prefixed,
}

impl PlainValues {
    /// The bytes taken by the `n` values at the start of `values`, checked
    /// to lie inside it.
    fn span(self, values: &[u8], n: usize) -> Result<usize> {
        let short = || {
            ColumnarError::Corrupt(format!(
                "a Parquet page whose {n} values run past its {} bytes",
                values.len()
            ))
        };
        match self {
            Self::Fixed(phys) => n
                .checked_mul(phys)
                .filter(|&b| b <= values.len())
                .ok_or_else(short),
            Self::Prefixed => {
                let mut at = 0usize;
                for _ in 0..n {
                    at = values
                        .get(at..at + 4)
                        .map(prefix)
                        .and_then(|k| (at + 4).checked_add(k))
                        .filter(|&e| e <= values.len())
                        .ok_or_else(short)?;
                }
                Ok(at)
            }
        }
    }
}

/// Copies `count` plain byte array values from `values` into the member of
/// `width` bytes at `offset` of each row, padded with zeros; returns the
/// bytes they took. `WORDS` is `width / 8` where that is whole and small
/// (0 otherwise). A longer value than the member holds is cut, as Arrow's
/// path cuts it.
fn copy_prefixed<const WORDS: usize>(
    width: usize,
    values: &[u8],
    rows: &mut [u8],
    stride: usize,
    offset: usize,
    count: usize,
) -> usize {
    let mut at = 0;
    for rec in rows.chunks_exact_mut(stride).take(count) {
        let n = prefix(&values[at..]);
        let body = at + 4;
        if WORDS > 0 && body + 8 * WORDS <= values.len() {
            // Whole words, the bytes past the value masked off: no
            // copy of a length known only at run time.
            for j in 0..WORDS {
                let word = u64::from_le_bytes(
                    values[body + 8 * j..body + 8 * j + 8]
                        .try_into()
                        .expect("8 bytes"),
                );
                let keep = n.saturating_sub(8 * j).min(8);
                let mask = if keep == 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * keep)) - 1
                };
                let slot = offset + 8 * j;
                rec[slot..slot + 8].copy_from_slice(&(word & mask).to_le_bytes());
            }
        } else {
            let k = n.min(width);
            let slot = &mut rec[offset..offset + width];
            slot[..k].copy_from_slice(&values[body..body + k]);
            slot[k..].fill(0);
        }
        at = body + n;
    }
    at
}

/// The length that starts a plain byte array value.
fn prefix(value: &[u8]) -> usize {
    u32::from_le_bytes(value[..4].try_into().expect("4 bytes")) as usize
}

impl PlainCopy {
    /// (A nullable column may be copied when it holds no nulls: the
    /// caller checks.)
    fn of(dt: &Datatype, col: &ColumnDescriptor) -> Option<Self> {
        if col.max_def_level() > 1 || col.max_rep_level() != 0 {
            return None;
        }
        let width = dt.fixed_size()?;
        let (number, swap) = match dt {
            Datatype::Integer { order, .. }
            | Datatype::Float { order, .. }
            | Datatype::Bitfield { order, .. } => (true, *order == h5lake_types::ByteOrder::Big),
            Datatype::Enum { base, .. } => return Self::of(base, col),
            Datatype::String {
                length: Some(_), ..
            }
            | Datatype::Opaque { .. }
            | Datatype::Reference { .. }
            | Datatype::CustomFloat { .. } => (false, false),
            _ => return None,
        };
        let phys = match col.physical_type() {
            PhysicalType::INT32 | PhysicalType::FLOAT => 4,
            PhysicalType::INT64 | PhysicalType::DOUBLE => 8,
            PhysicalType::FIXED_LEN_BYTE_ARRAY => usize::try_from(col.type_length()).ok()?,
            PhysicalType::BYTE_ARRAY if matches!(dt, Datatype::String { .. }) => {
                return Some(Self {
                    values: PlainValues::Prefixed,
                    width,
                    swap: false,
                })
            }
            _ => return None,
        };
        let narrowed = number
            && col.physical_type() == PhysicalType::INT32
            && matches!(dt, Datatype::Integer { .. } | Datatype::Bitfield { .. })
            && width < phys;
        (width == phys || narrowed).then_some(Self {
            values: PlainValues::Fixed(phys),
            width,
            swap,
        })
    }

    /// The page of `count` values from row `first` held by `values`. Values
    /// of a fixed width are checked here; byte arrays as far as a read
    /// takes them ([`clip_pages`]), so that a few rows do not walk the page.
    fn page(&self, first: usize, count: usize, values: Bytes) -> Result<PlainPage> {
        let values = match self.values {
            PlainValues::Fixed(_) => values.slice(..self.values.span(&values, count)?),
            PlainValues::Prefixed => values,
        };
        Ok(PlainPage {
            first,
            count,
            values,
        })
    }

    /// Copies the first `count` values of `values` into the member at
    /// `offset` of each row; returns the bytes they took.
    fn copy(
        &self,
        values: &[u8],
        rows: &mut [u8],
        stride: usize,
        offset: usize,
        count: usize,
    ) -> usize {
        let w = self.width;
        let used = match self.values {
            PlainValues::Fixed(phys) if phys == w => {
                arrays::scatter(values, rows, stride, offset, w, count);
                count * phys
            }
            PlainValues::Fixed(phys) => {
                for (rec, v) in rows.chunks_exact_mut(stride).zip(values.chunks_exact(phys)) {
                    rec[offset..offset + w].copy_from_slice(&v[..w]);
                }
                count * phys
            }
            PlainValues::Prefixed => match w {
                8 => copy_prefixed::<1>(w, values, rows, stride, offset, count),
                16 => copy_prefixed::<2>(w, values, rows, stride, offset, count),
                24 => copy_prefixed::<3>(w, values, rows, stride, offset, count),
                32 => copy_prefixed::<4>(w, values, rows, stride, offset, count),
                _ => copy_prefixed::<0>(w, values, rows, stride, offset, count),
            },
        };
        if self.swap && w > 1 {
            for rec in rows.chunks_exact_mut(stride).take(count) {
                rec[offset..offset + w].reverse();
            }
        }
        used
    }
}

/// The parts of an object that were read, as Parquet's reader asks for
/// them: byte ranges by their offset in the object.
#[derive(Clone, Debug, Default)]
pub struct Parts {
    len: u64,
    parts: Vec<(u64, Bytes)>,
}

impl Parts {
    /// `parts` ((offset, bytes) pairs) of an object of `len` bytes.
    pub fn new(len: u64, mut parts: Vec<(u64, Bytes)>) -> Self {
        parts.sort_by_key(|(at, _)| *at);
        Self { len, parts }
    }

    /// A whole object.
    pub fn whole(data: Bytes) -> Self {
        Self {
            len: data.len() as u64,
            parts: vec![(0, data)],
        }
    }

    /// The bytes `start..start + len`, from the one part that holds them.
    fn slice(&self, start: u64, len: u64) -> std::result::Result<Bytes, ParquetError> {
        let k = self.parts.partition_point(|(at, _)| *at <= start);
        let end = start.checked_add(len);
        k.checked_sub(1)
            .map(|k| &self.parts[k])
            .and_then(|(at, b)| {
                let from = start - at;
                (end? <= at + b.len() as u64).then(|| b.slice(from as usize..(from + len) as usize))
            })
            .ok_or_else(|| {
                ParquetError::General(format!(
                    "bytes {start}+{len} of the chunk object were not read"
                ))
            })
    }
}

impl Length for Parts {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Parts {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let k = self.parts.partition_point(|(at, _)| *at <= start);
        let Some((at, b)) = k.checked_sub(1).map(|k| &self.parts[k]) else {
            return Err(ParquetError::General(format!(
                "byte {start} of the chunk object was not read"
            )));
        };
        let rest = (at + b.len() as u64).saturating_sub(start);
        Ok(self.slice(start, rest)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.slice(start, length as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_prefixed, interleave, PlainColumn, PlainCopy, PlainPage, PlainValues};
    use bytes::Bytes;

    /// Rows built whole from columns that tile them equal rows built a
    /// column at a time, with each column's pages ending at other rows.
    #[test]
    fn tiled_rows_equal_rows_built_column_by_column() {
        for (w, k) in [(4usize, 8usize), (4, 3), (8, 4), (8, 2), (4, 5)] {
            let n = 10_007;
            let size = w * k;
            // Member j at offset (k - 1 - j) * w: the order of offsets is
            // not the order of the columns.
            let columns: Vec<PlainColumn> = (0..k)
                .map(|j| {
                    let values: Vec<u8> = (0..n * w).map(|b| (b * 13 + j * 7) as u8).collect();
                    let values = Bytes::from(values);
                    let page_rows = 997 + 331 * j;
                    let pages = (0..n)
                        .step_by(page_rows)
                        .map(|first| {
                            let count = page_rows.min(n - first);
                            PlainPage {
                                first,
                                count,
                                values: values.slice(first * w..(first + count) * w),
                            }
                        })
                        .collect();
                    PlainColumn {
                        copy: PlainCopy {
                            values: PlainValues::Fixed(w),
                            width: w,
                            swap: false,
                        },
                        offset: (k - 1 - j) * w,
                        pages,
                    }
                })
                .collect();
            let mut want = vec![0u8; n * size];
            for (j, c) in columns.iter().enumerate() {
                for r in 0..n {
                    let v: Vec<u8> = (0..w).map(|b| ((r * w + b) * 13 + j * 7) as u8).collect();
                    want[r * size + c.offset..r * size + c.offset + w].copy_from_slice(&v);
                }
            }
            let mut got = vec![0xAAu8; n * size];
            interleave(&columns, &mut got, size);
            assert!(got == want, "{k} members of {w} bytes");
            // Rows not aligned for streaming stores (and aligned ones).
            for shift in [4usize, 32 - (got.as_ptr() as usize % 32)] {
                let mut off = vec![0xAAu8; n * size + shift];
                interleave(&columns, &mut off[shift..], size);
                assert!(off[shift..] == want[..] && off[..shift].iter().all(|&b| b == 0xAA));
            }
            // With a gap in the row, the members do not tile it.
            let mut wide = vec![0xAAu8; n * (size + 1)];
            interleave(&columns, &mut wide, size + 1);
            assert!(wide
                .chunks(size + 1)
                .zip(want.chunks(size))
                .all(|(a, b)| &a[..size] == b && a[size] == 0xAA));
        }
    }

    /// The word-by-word copies give what the byte copy gives, for values
    /// of every length up to past the member's width, at a page's end too.
    #[test]
    fn word_copies_of_strings_equal_the_byte_copy() {
        for width in [8usize, 16, 24, 32] {
            let lens: Vec<usize> = (0..=width + 3).chain([0, width, 1]).collect();
            let mut values = Vec::new();
            for (i, &n) in lens.iter().enumerate() {
                values.extend((n as u32).to_le_bytes());
                values.extend((0..n).map(|b| (i * 31 + b * 7 + 1) as u8));
            }
            let stride = width + 3;
            let count = lens.len();
            let mut by_bytes = vec![0xEEu8; count * stride];
            let mut by_words = by_bytes.clone();
            let used = copy_prefixed::<0>(width, &values, &mut by_bytes, stride, 2, count);
            let used_w = match width {
                8 => copy_prefixed::<1>(width, &values, &mut by_words, stride, 2, count),
                16 => copy_prefixed::<2>(width, &values, &mut by_words, stride, 2, count),
                24 => copy_prefixed::<3>(width, &values, &mut by_words, stride, 2, count),
                _ => copy_prefixed::<4>(width, &values, &mut by_words, stride, 2, count),
            };
            assert_eq!((used, used_w), (values.len(), values.len()));
            assert_eq!(by_bytes, by_words, "width {width}");
            // Bytes outside the member are left alone.
            assert!(by_words
                .chunks(stride)
                .all(|r| r[..2] == [0xEE; 2] && r[stride - 1] == 0xEE));
        }
    }
}
