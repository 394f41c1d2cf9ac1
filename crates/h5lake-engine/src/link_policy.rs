//! Which files and buckets a store's documents may make us open.
//!
//! A linked dataset names a file (`file_uri`), an external link names
//! another store: both are paths or URLs written by whoever wrote the
//! store — in a server, any client who may create a dataset. Left
//! unchecked, that is a way to read any file the process can read (the
//! server's password file, another user's chunks, `/etc/passwd`). Every
//! path or URL a document names goes through one [`LinkPolicy`], both
//! when it is written (refused before anything is stored) and when it is
//! opened (a document that points outside the policy reads as an error,
//! never as data).
//!
//! Local paths are judged by where they really lead: `..` and symlinks are
//! resolved, and a file that was opened is judged by the path the kernel
//! reports for the open descriptor, so that a symlink swapped in between
//! the check and the open cannot redirect the read.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use crate::{EngineError, Result};

/// What a policy lets through, for one kind of target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allowed<T> {
    Nothing,
    Anything,
    /// Targets inside one of these (canonical directories, or
    /// `bucket[/prefix]` strings).
    Within(Vec<T>),
}

/// Where a link leads, once its URI is understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkTarget {
    /// A file on this machine (absolute, normalised).
    Local(PathBuf),
    /// An object in an S3 bucket.
    Object { bucket: String, key: String },
}

/// The rule every path or URL named by a stored document must pass.
#[derive(Clone, Debug)]
pub struct LinkPolicy {
    local: Allowed<PathBuf>,
    buckets: Allowed<String>,
    /// Canonical paths never opened, whatever `local` says (a server's store
    /// root and password file), with everything below them.
    denied: Vec<PathBuf>,
    /// Device and inode of each denied regular file: a hard link to one
    /// (in an allowed directory) is the same file under another path.
    denied_files: Vec<(u64, u64)>,
    /// What to tell a user whose link was refused.
    advice: &'static str,
}

impl LinkPolicy {
    /// The user's own process on a store of their own disk: any file and
    /// any bucket the user can read.
    pub fn trusting() -> Self {
        LinkPolicy {
            local: Allowed::Anything,
            buckets: Allowed::Anything,
            denied: Vec::new(),
            denied_files: Vec::new(),
            advice: "",
        }
    }

    /// The user's own process on a store in a bucket (possibly someone
    /// else's): links may lead to other objects, but to local files only
    /// when the user opted in, so that a fetched store cannot make the
    /// user's process read the user's own files.
    pub fn for_remote_store(allow_local_links: bool) -> Self {
        LinkPolicy {
            local: if allow_local_links {
                Allowed::Anything
            } else {
                Allowed::Nothing
            },
            buckets: Allowed::Anything,
            denied: Vec::new(),
            denied_files: Vec::new(),
            advice: "a store in a bucket may link only to objects in buckets; open it with \
                     allow_local_links=True (CLI: --allow-local-links; VOL connector: \
                     H5LAKE_ALLOW_LOCAL_LINKS=1) if you trust it",
        }
    }

    /// The policy of a store the user opens: trusting for a local store,
    /// [`LinkPolicy::for_remote_store`] for one in a bucket.
    pub fn for_store_at(location: &str, allow_local_links: bool) -> Self {
        if location.starts_with("s3://") {
            Self::for_remote_store(allow_local_links)
        } else {
            Self::trusting()
        }
    }

    /// The policy of a store made on the fly to read one HDF5 file in
    /// place (a server serving `data.h5`): that file, and nothing else.
    pub fn only_file(file: &Path) -> Self {
        LinkPolicy {
            local: Allowed::Within(vec![file.to_path_buf()]),
            buckets: Allowed::Nothing,
            denied: Vec::new(),
            denied_files: Vec::new(),
            advice: "an HDF5 file served in place reads only its own bytes",
        }
    }

    /// A server's policy: only files below `roots` and objects below
    /// `buckets` (`s3://bucket[/prefix]`), never anything in `denied`. With
    /// no roots and no buckets, no link can be opened at all.
    ///
    /// # Errors
    /// A root that does not exist or is not a directory; a bucket that is
    /// not an `s3://` URL.
    pub fn for_server(roots: &[PathBuf], buckets: &[String], denied: &[PathBuf]) -> Result<Self> {
        let roots = roots
            .iter()
            .map(|r| {
                let c = r
                    .canonicalize()
                    .map_err(|e| EngineError::Invalid(format!("link root {}: {e}", r.display())))?;
                if !c.is_dir() {
                    return Err(EngineError::Invalid(format!(
                        "link root {} is not a directory",
                        r.display()
                    )));
                }
                Ok(c)
            })
            .collect::<Result<Vec<_>>>()?;
        let buckets = buckets
            .iter()
            .map(|b| {
                let rest = b
                    .strip_prefix("s3://")
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| {
                        EngineError::Invalid(format!(
                            "link bucket {b:?} must be an s3://bucket[/prefix] URL"
                        ))
                    })?;
                Ok(rest.trim_end_matches('/').to_string())
            })
            .collect::<Result<Vec<_>>>()?;
        // A denied path that does not exist yet is kept as given: nothing
        // can be opened there through a symlink that does not exist either.
        let denied: Vec<PathBuf> = denied
            .iter()
            .map(|d| d.canonicalize().unwrap_or_else(|_| normalise(d)))
            .collect();
        let denied_files = denied.iter().filter_map(|d| file_identity(d)).collect();
        Ok(LinkPolicy {
            local: if roots.is_empty() {
                Allowed::Nothing
            } else {
                Allowed::Within(roots)
            },
            buckets: if buckets.is_empty() {
                Allowed::Nothing
            } else {
                Allowed::Within(buckets)
            },
            denied,
            denied_files,
            advice: "the server's operator allows links only below the directories and \
                     buckets given with --link-root and --link-bucket",
        })
    }

    /// What `uri` names: `file://` URLs and paths are local (relative ones
    /// below `base`, HSDS's `root_dir`), `s3://` URLs objects.
    ///
    /// # Errors
    /// Other URL schemes; a relative path with no base; an empty URI.
    pub fn target(uri: &str, base: Option<&Path>) -> Result<LinkTarget> {
        if let Some(rest) = uri.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() || key.is_empty() {
                return Err(EngineError::Invalid(format!(
                    "link {uri:?}: an s3:// link names s3://bucket/key"
                )));
            }
            return Ok(LinkTarget::Object {
                bucket: bucket.to_string(),
                key: key.to_string(),
            });
        }
        let path = uri.strip_prefix("file://").unwrap_or(uri);
        if path.is_empty() {
            return Err(EngineError::Invalid("link to an empty path".into()));
        }
        if path.contains("://") {
            return Err(EngineError::Invalid(format!(
                "link {uri:?}: only local paths, file:// and s3:// URLs are understood"
            )));
        }
        let path = Path::new(path);
        if path.is_absolute() {
            return Ok(LinkTarget::Local(normalise(path)));
        }
        match base {
            Some(b) => Ok(LinkTarget::Local(normalise(&b.join(path)))),
            None => Err(EngineError::Invalid(format!(
                "link {uri:?}: a relative path needs a store on local disk to start from"
            ))),
        }
    }

    /// Checks `uri` against the policy, as far as can be known before it is
    /// opened: for a path that exists, where it really leads.
    ///
    /// # Errors
    /// [`EngineError::LinkRefused`] for a target outside the policy; as
    /// [`LinkPolicy::target`].
    pub fn check(&self, uri: &str, base: Option<&Path>) -> Result<LinkTarget> {
        let target = Self::target(uri, base)?;
        match &target {
            LinkTarget::Local(p) => {
                let real = p.canonicalize().unwrap_or_else(|_| p.clone());
                self.check_local(uri, &real)?;
            }
            LinkTarget::Object { bucket, key } => self.check_object(uri, bucket, key)?,
        }
        Ok(target)
    }

    fn refuse(&self, uri: &str, why: &str) -> EngineError {
        let advice = if self.advice.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.advice)
        };
        EngineError::LinkRefused(format!("link to {uri:?} refused: {why}{advice}"))
    }

    fn check_local(&self, uri: &str, real: &Path) -> Result<()> {
        if self.denied.iter().any(|d| real.starts_with(d)) {
            return Err(self.refuse(uri, "it leads into the server's own files"));
        }
        match &self.local {
            Allowed::Anything => Ok(()),
            Allowed::Within(roots) if roots.iter().any(|r| real.starts_with(r)) => Ok(()),
            Allowed::Within(_) => Err(self.refuse(uri, "it is outside the allowed directories")),
            Allowed::Nothing => Err(self.refuse(uri, "links to local files are not allowed")),
        }
    }

    fn check_object(&self, uri: &str, bucket: &str, key: &str) -> Result<()> {
        // `..` in a key would climb out of an allowed prefix once a store
        // resolves it.
        if key
            .split('/')
            .any(|seg| seg.is_empty() || seg == "." || seg == "..")
        {
            return Err(self.refuse(uri, "its key has empty, '.' or '..' parts"));
        }
        let inside = |allowed: &str| {
            let (b, prefix) = allowed.split_once('/').unwrap_or((allowed, ""));
            b == bucket && (prefix.is_empty() || key.starts_with(&format!("{prefix}/")))
        };
        match &self.buckets {
            Allowed::Anything => Ok(()),
            Allowed::Within(list) if list.iter().any(|a| inside(a)) => Ok(()),
            Allowed::Within(_) => Err(self.refuse(uri, "it is outside the allowed buckets")),
            Allowed::Nothing => Err(self.refuse(uri, "links to buckets are not allowed")),
        }
    }

    /// Opens a local link target for reading, if the policy allows what was
    /// actually opened. Only regular files: a FIFO or a device would block
    /// or never end.
    ///
    /// # Errors
    /// [`EngineError::LinkRefused`]; [`EngineError::StoreNotFound`] if it
    /// cannot be opened.
    pub fn open_local(&self, uri: &str, path: &Path) -> Result<File> {
        self.check_local(
            uri,
            &path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        )?;
        // A file that is gone is a missing file (FileNotFoundError, not a
        // missing name): the store still links to it.
        let file = open_nonblocking(path).map_err(|e| {
            EngineError::StoreNotFound(format!(
                "linked file {} cannot be opened ({e}); the store links to it, so it must stay in place",
                path.display()
            ))
        })?;
        let meta = file.metadata().map_err(|e| {
            EngineError::StoreNotFound(format!("linked file {}: {e}", path.display()))
        })?;
        if !meta.is_file() {
            return Err(self.refuse(uri, "it is not a regular file"));
        }
        if identity_of(&meta).is_some_and(|id| self.denied_files.contains(&id)) {
            return Err(self.refuse(uri, "it is one of the server's own files"));
        }
        self.check_local(uri, &opened_path(&file, path))?;
        Ok(file)
    }
}

#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity_of(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Device and inode of a regular file at `path`.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .and_then(|m| identity_of(&m))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// The path of what `file` is, as the kernel knows it (Linux); elsewhere
/// the canonical form of the path it was opened by.
fn opened_path(file: &File, path: &Path) -> PathBuf {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(p) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return p;
        }
    }
    let _ = file;
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// `path` with `.` and `..` taken out lexically (for paths that do not
/// exist, which `canonicalize` cannot resolve).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_open_only_what_the_operator_allowed() {
        let tmp = tempfile::tempdir().unwrap();
        let allowed = tmp.path().join("data");
        let store = allowed.join("store");
        std::fs::create_dir_all(&store).unwrap();
        std::fs::write(allowed.join("a.h5"), b"x").unwrap();
        std::fs::write(store.join("chunk"), b"x").unwrap();
        std::fs::write(tmp.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), allowed.join("sneaky")).unwrap();
        let p = LinkPolicy::for_server(
            std::slice::from_ref(&allowed),
            &[],
            std::slice::from_ref(&store),
        )
        .unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_string();
        assert!(p.check(&s(&allowed.join("a.h5")), None).is_ok());
        assert!(p.open_local("a", &allowed.join("a.h5")).is_ok());
        for refused in [
            s(&tmp.path().join("secret")),
            format!("file://{}", s(&tmp.path().join("secret"))),
            s(&allowed.join("../secret")),
            s(&allowed.join("sneaky")),
            s(&store.join("chunk")),
            "/etc/passwd".into(),
            "s3://bucket/key".into(),
        ] {
            let e = p.check(&refused, None).unwrap_err();
            assert!(matches!(e, EngineError::LinkRefused(_)), "{refused}: {e}");
        }
        assert!(matches!(
            p.open_local("x", &allowed.join("sneaky")).unwrap_err(),
            EngineError::LinkRefused(_)
        ));
        assert!(p.check("http://example.com/x", None).is_err());
        // a hard link to a denied file, inside an allowed directory
        let secret_pw = tmp.path().join("passwd.txt");
        std::fs::write(&secret_pw, b"admin:pw").unwrap();
        std::fs::hard_link(&secret_pw, allowed.join("pw-again")).unwrap();
        let guarded = LinkPolicy::for_server(
            std::slice::from_ref(&allowed),
            &[],
            std::slice::from_ref(&secret_pw),
        )
        .unwrap();
        assert!(matches!(
            guarded
                .open_local("x", &allowed.join("pw-again"))
                .unwrap_err(),
            EngineError::LinkRefused(_)
        ));
        assert!(p.check("relative.h5", None).is_err());
        let none = LinkPolicy::for_server(&[], &[], &[]).unwrap();
        assert!(none.check(&s(&allowed.join("a.h5")), None).is_err());
    }

    #[test]
    fn non_regular_files_are_refused() {
        let p = LinkPolicy::trusting();
        assert!(matches!(
            p.open_local("/dev/zero", Path::new("/dev/zero"))
                .unwrap_err(),
            EngineError::LinkRefused(_)
        ));
        assert!(p.open_local("/", Path::new("/")).is_err());
    }

    #[test]
    fn buckets_and_remote_stores() {
        let p = LinkPolicy::for_server(&[], &["s3://lake/public".into()], &[]).unwrap();
        assert!(p.check("s3://lake/public/a.h5", None).is_ok());
        assert!(p.check("s3://lake/publicity/a.h5", None).is_err());
        assert!(p.check("s3://lake/public/../secret.h5", None).is_err());
        assert!(p.check("s3://other/a.h5", None).is_err());
        assert!(LinkPolicy::for_server(&[], &["lake".into()], &[]).is_err());
        let remote = LinkPolicy::for_remote_store(false);
        assert!(remote.check("/etc/passwd", None).is_err());
        assert!(remote.check("s3://any/thing", None).is_ok());
        assert!(LinkPolicy::for_remote_store(true)
            .check("/etc/passwd", None)
            .is_ok());
        assert!(LinkPolicy::for_store_at("/tmp/x", false)
            .check("/etc/passwd", None)
            .is_ok());
    }
}
