//! The patch journal of a local directory: how an in-place edit of a file
//! (`LocalStore::patch`) lands whole even when its writer dies half-way.
//!
//! A patch is written to the directory's journal file before any byte of
//! the target changes, and the journal is retired (cut to length 0) once the
//! edits are in. All of this happens under the directory's lock, so a
//! directory has one journal file, and it only holds a patch past its lock
//! when the writer crashed. The next holder of the lock finds it and
//! finishes the patch (rolling forward: the edits are absolute overwrites,
//! so applying them twice is harmless) before doing anything else. A journal
//! cut short by the crash fails its checksum: then the target was never
//! touched and the journal is dropped.
//!
//! The file is kept between patches rather than created and removed for
//! each: on ext4, allocating an inode right after freeing one scans for
//! recently deleted inodes, which made that pair cost more than the whole
//! rest of a small in-place write. Deletes in the directory remove an idle
//! journal, so that emptied directories can still be pruned.
//!
//! Layout (little endian): magic, target inode, target length, name length,
//! name, edit count, then per edit its offset, length and bytes, and last an
//! FNV-1a hash of everything before it.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The journal's name in each directory: temp-shaped, so that listings hide
/// it and no key can be spelled like it.
pub(super) const JOURNAL_NAME: &str = ".h5lake-tmp-patch.tmp";

const MAGIC: &[u8; 16] = b"h5lake-patch-v1\n";

/// One decoded journal.
pub(super) struct Journal {
    pub name: String,
    pub ino: u64,
    pub len: u64,
    pub edits: Vec<(u64, Vec<u8>)>,
}

pub(super) fn encode(name: &str, ino: u64, len: u64, edits: &[(u64, &[u8])]) -> Vec<u8> {
    let size = edits.iter().map(|(_, b)| 12 + b.len()).sum::<usize>();
    let mut out = Vec::with_capacity(MAGIC.len() + 28 + name.len() + size + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&ino.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&(edits.len() as u32).to_le_bytes());
    for (offset, bytes) in edits {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// `None` for anything but a complete, intact journal naming a plain file
/// of the same directory.
pub(super) fn decode(raw: &[u8]) -> Option<Journal> {
    let (body, sum) = raw.split_at_checked(raw.len().checked_sub(8)?)?;
    if fnv1a(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut r = Reader(body.strip_prefix(MAGIC.as_slice())?);
    let ino = r.u64()?;
    let len = r.u64()?;
    let name_len = r.u32()? as usize;
    let name = std::str::from_utf8(r.take(name_len)?).ok()?.to_string();
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return None;
    }
    let count = r.u32()?;
    let mut edits = Vec::new();
    for _ in 0..count {
        let offset = r.u64()?;
        let n = r.u32()? as usize;
        edits.push((offset, r.take(n)?.to_vec()));
    }
    (r.0.is_empty()
        && edits
            .iter()
            .all(|(o, b)| o.checked_add(b.len() as u64).is_some_and(|end| end <= len)))
    .then_some(Journal {
        name,
        ino,
        len,
        edits,
    })
}

/// Opens `path` to be edited in place, if it is what a patch may touch: a
/// regular file (not followed through a symlink) of exactly `len` bytes and
/// with no other name — a hard-linked copy elsewhere must not change with it.
pub(super) fn open_target(path: &Path, len: u64) -> io::Result<Option<(File, fs::Metadata)>> {
    let file = match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e)
            if e.kind() == io::ErrorKind::NotFound
                || matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTDIR | libc::ELOOP | libc::EISDIR)
                ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    Ok((meta.is_file() && meta.len() == len && meta.nlink() == 1).then_some((file, meta)))
}

/// Writes the edits into `file`.
pub(super) fn apply<B: AsRef<[u8]>>(file: &File, edits: &[(u64, B)]) -> io::Result<()> {
    for (offset, bytes) in edits {
        file.write_all_at(bytes.as_ref(), *offset)?;
    }
    Ok(())
}

/// Writes a new journal into `dir`, whose journal must be idle (the caller
/// holds the lock and has finished any earlier patch); returns the file, to
/// be retired with [`retire`] once the edits are in.
pub(super) fn write(dir: &Path, raw: &[u8], sync: bool) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(dir.join(JOURNAL_NAME))?;
    if file.metadata()?.len() != 0 {
        file.set_len(0)?;
    }
    file.write_all_at(raw, 0)?;
    if sync {
        file.sync_data()?;
    }
    Ok(file)
}

/// Marks a journal done: an empty journal holds no patch.
pub(super) fn retire(file: &File, sync: bool) -> io::Result<()> {
    file.set_len(0)?;
    if sync {
        file.sync_data()?;
    }
    Ok(())
}

/// The journal left in `dir` by a writer that crashed, if any (an idle,
/// empty journal is none).
pub(super) fn read_leftover(dir: &Path) -> io::Result<Option<Vec<u8>>> {
    let path = dir.join(JOURNAL_NAME);
    // Every lock holder asks, so the usual answer (none, or an idle one)
    // costs one stat rather than an open, a read and a close.
    match fs::symlink_metadata(&path) {
        Ok(meta) if meta.len() == 0 => return Ok(None),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    match fs::read(&path) {
        Ok(raw) if raw.is_empty() => Ok(None),
        Ok(raw) => Ok(Some(raw)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Retires the leftover journal of `dir` (after finishing or dropping it).
pub(super) fn retire_leftover(dir: &Path, sync: bool) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(dir.join(JOURNAL_NAME))
    {
        Ok(file) => retire(&file, sync),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes the journal of `dir`; the caller holds the lock and the journal
/// is idle.
pub(super) fn remove(dir: &Path) -> io::Result<()> {
    match fs::remove_file(dir.join(JOURNAL_NAME)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let raw = encode("0_1", 42, 100, &[(3, b"abc".as_slice()), (90, b"xyz")]);
        let j = decode(&raw).expect("intact journal");
        assert_eq!((j.name.as_str(), j.ino, j.len), ("0_1", 42, 100));
        assert_eq!(j.edits, vec![(3, b"abc".to_vec()), (90, b"xyz".to_vec())]);
        // Cut short anywhere (a crash while it was written), or one bit off.
        for cut in 0..raw.len() {
            assert!(decode(&raw[..cut]).is_none(), "cut at {cut}");
        }
        let mut bad = raw.clone();
        bad[20] ^= 1;
        assert!(decode(&bad).is_none());
        // A name that leaves the directory is refused even when intact.
        assert!(decode(&encode("../x", 1, 10, &[])).is_none());
    }
}
