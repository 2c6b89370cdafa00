//! Copying files: a local directory's files up under a prefix, and everything under a prefix
//! down into a local directory, with the relative paths kept.

use std::path::{Component, Path as FsPath, PathBuf};

use futures_util::{StreamExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Error, Location, Repr, Store};

/// Files written in one piece up to this size; larger ones go as a multipart upload in
/// parts of this size (S3's minimum part is 5 MiB).
pub(crate) const PART_BYTES: usize = 8 << 20;
/// Requests in flight at once.
const CONCURRENCY: usize = 8;

/// What one copy moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Relative paths (with `/`), sorted.
    pub files: Vec<String>,
    /// Bytes moved in all.
    pub bytes: u64,
}

impl Store {
    /// Uploads every file under `dir` to `<prefix>/<relative path>`.
    pub fn upload_dir(&self, dir: &FsPath) -> Result<Transfer, Error> {
        let files = local_files(dir)?;
        let prefix = key_of(&self.location, "")?;
        self.runtime.block_on(async {
            let sizes: Vec<u64> = futures_util::stream::iter(files.iter())
                .map(|rel| {
                    upload_one(
                        self.inner.clone(),
                        dir.join(rel),
                        prefix.clone(),
                        rel.clone(),
                    )
                })
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await?;
            Ok(Transfer {
                files: files.clone(),
                bytes: sizes.iter().sum(),
            })
        })
    }

    /// Downloads every object under the prefix into `dest` (created when missing), each at
    /// its path relative to the prefix. Names with `.`/`..` parts are refused, not written.
    pub fn download(&self, dest: &FsPath) -> Result<Transfer, Error> {
        let prefix = key_of(&self.location, "")?;
        self.runtime.block_on(async {
            let listed: Vec<_> =
                self.inner
                    .list(Some(&prefix))
                    .try_collect()
                    .await
                    .map_err(|source| Repr::Remote {
                        what: format!("listing {}", self.location),
                        source,
                    })?;
            let mut wanted = Vec::with_capacity(listed.len());
            for meta in listed {
                let rel: Vec<String> = match meta.location.prefix_match(&prefix) {
                    Some(parts) => parts.map(|p| p.as_ref().to_string()).collect(),
                    None => continue,
                };
                if rel.is_empty()
                    || rel
                        .iter()
                        .any(|p| p.is_empty() || p == "." || p == ".." || p.contains(['/', '\\']))
                {
                    return Err(Repr::UnsafeKey(meta.location.to_string()).into());
                }
                wanted.push((meta.location, rel.join("/")));
            }
            let sizes: Vec<u64> = futures_util::stream::iter(wanted.iter())
                .map(|(key, rel)| download_one(self.inner.clone(), key.clone(), dest.join(rel)))
                .buffer_unordered(CONCURRENCY)
                .try_collect()
                .await?;
            let mut files: Vec<String> = wanted.into_iter().map(|(_, rel)| rel).collect();
            files.sort();
            Ok(Transfer {
                files,
                bytes: sizes.iter().sum(),
            })
        })
    }
}

/// The key of `rel` (a `/`-separated relative path) under `loc`'s prefix.
fn key_of(loc: &Location, rel: &str) -> Result<Key, Error> {
    let joined = loc.join(rel).prefix;
    Key::parse(&joined)
        .map_err(|e| Repr::Config(format!("`{joined}` cannot be an object name: {e}")).into())
}

/// Every regular file under `dir`, as sorted `/`-separated relative paths.
fn local_files(dir: &FsPath) -> Result<Vec<String>, Error> {
    let meta = std::fs::metadata(dir).map_err(|e| Repr::io(dir, e))?;
    if !meta.is_dir() {
        return Err(Repr::Config(format!("{} is not a directory", dir.display())).into());
    }
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let here = dir.join(&rel);
        for entry in std::fs::read_dir(&here).map_err(|e| Repr::io(&here, e))? {
            let entry = entry.map_err(|e| Repr::io(&here, e))?;
            let kind = entry.file_type().map_err(|e| Repr::io(&entry.path(), e))?;
            let child = rel.join(entry.file_name());
            if kind.is_dir() {
                todo.push(child);
            } else if kind.is_file() {
                let parts: Option<Vec<&str>> = child
                    .components()
                    .map(|c| match c {
                        Component::Normal(s) => s.to_str(),
                        _ => None,
                    })
                    .collect();
                let parts = parts.ok_or_else(|| {
                    Repr::Config(format!(
                        "{}: only UTF-8 file names can be uploaded",
                        entry.path().display()
                    ))
                })?;
                out.push(parts.join("/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

async fn upload_one(
    store: std::sync::Arc<dyn ObjectStore>,
    file: PathBuf,
    prefix: Key,
    rel: String,
) -> Result<u64, Error> {
    let key = Key::parse(format!("{prefix}/{rel}"))
        .map_err(|e| Repr::Config(format!("{}: cannot be an object name: {e}", file.display())))?;
    let remote = |source| Repr::Remote {
        what: format!("uploading {} to {key}", file.display()),
        source,
    };
    let mut reader = tokio::fs::File::open(&file)
        .await
        .map_err(|e| Repr::io(&file, e))?;
    let mut writer = BufWriter::with_capacity(store, key.clone(), PART_BYTES);
    let mut total = 0u64;
    loop {
        let mut chunk = Vec::with_capacity(PART_BYTES);
        let n = (&mut reader)
            .take(PART_BYTES as u64)
            .read_to_end(&mut chunk)
            .await
            .map_err(|e| Repr::io(&file, e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if let Err(e) = writer.put(chunk.into()).await {
            let _ = writer.abort().await;
            return Err(remote(e).into());
        }
    }
    writer
        .shutdown()
        .await
        .map_err(|e| Repr::Config(format!("uploading {} to {key}: {e}", file.display())))?;
    Ok(total)
}

async fn download_one(
    store: std::sync::Arc<dyn ObjectStore>,
    key: Key,
    file: PathBuf,
) -> Result<u64, Error> {
    let remote = |source| Repr::Remote {
        what: format!("downloading {key}"),
        source,
    };
    let got = store.get(&key).await.map_err(remote)?;
    let bytes = got.bytes().await.map_err(remote)?;
    if let Some(parent) = file.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| Repr::io(parent, e))?;
    }
    tokio::fs::write(&file, &bytes)
        .await
        .map_err(|e| Repr::io(&file, e))?;
    Ok(bytes.len() as u64)
}
