//! The database: SQLite in a file, behind a connection pool that behaves like HikariCP —
//! a fixed number of connections, requests that queue for one (counted as *pending*),
//! and an acquire timeout after which the request fails.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::Semaphore;

use crate::Knobs;

/// How message rows are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdType {
    /// `INTEGER PRIMARY KEY`: new rows append to the end of the table's B-tree.
    Sequential,
    /// A random 32-character string key (`WITHOUT ROWID`): every insert lands at a random
    /// place in the B-tree, as the seeds' random string ids did in MySQL/InnoDB.
    Random,
}

/// A database failure, as the service reports it.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No connection became free within the acquire timeout.
    #[error("HikariPool-1 - Connection is not available, request timed out after {0}ms.")]
    PoolTimeout(u128),
    /// SQLite said no.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file could not be created.
    #[error("database file: {0}")]
    Io(#[from] std::io::Error),
}

/// Pool gauges, named as HikariCP's.
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Connections in use.
    pub active: AtomicI64,
    /// Requests waiting for a connection.
    pub pending: AtomicI64,
    /// Acquires that timed out.
    pub timeouts: AtomicU64,
    /// Total time spent waiting for connections, µs.
    pub acquire_us: AtomicU64,
    /// Acquires.
    pub acquires: AtomicU64,
}

/// The pool and the database.
pub struct Db {
    conns: Mutex<Vec<Connection>>,
    permits: Semaphore,
    /// Pool size.
    pub max: usize,
    timeout: Duration,
    rtt: Duration,
    /// Message key type.
    pub id_type: IdType,
    /// Gauges.
    pub stats: PoolStats,
    /// The database file.
    pub path: PathBuf,
    _tempdir: Option<TempDir>,
}

/// A temporary directory removed when the database is dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rooms (id INTEGER PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS messages_seq (
  id INTEGER PRIMARY KEY AUTOINCREMENT, room_id INTEGER NOT NULL REFERENCES rooms(id),
  user_id INTEGER NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS messages_seq_room ON messages_seq (room_id, id);
CREATE TABLE IF NOT EXISTS messages_rand (
  id TEXT PRIMARY KEY, room_id INTEGER NOT NULL REFERENCES rooms(id),
  user_id INTEGER NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_rand_room ON messages_rand (room_id, created_at);
CREATE TABLE IF NOT EXISTS pair_rooms (
  id INTEGER PRIMARY KEY, access_code TEXT NOT NULL UNIQUE, driver TEXT NOT NULL,
  navigator TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS todos (
  id INTEGER PRIMARY KEY, pair_room_id INTEGER NOT NULL REFERENCES pair_rooms(id),
  content TEXT NOT NULL, checked INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS todos_room ON todos (pair_room_id);
CREATE TABLE IF NOT EXISTS categories (
  id INTEGER PRIMARY KEY, pair_room_id INTEGER NOT NULL REFERENCES pair_rooms(id), name TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS categories_room ON categories (pair_room_id);
CREATE TABLE IF NOT EXISTS reference_links (
  id INTEGER PRIMARY KEY, pair_room_id INTEGER NOT NULL REFERENCES pair_rooms(id),
  url TEXT NOT NULL, category TEXT);
CREATE INDEX IF NOT EXISTS links_room ON reference_links (pair_room_id);
CREATE TABLE IF NOT EXISTS timers (
  pair_room_id INTEGER PRIMARY KEY REFERENCES pair_rooms(id), duration_ms INTEGER NOT NULL,
  remaining_ms INTEGER NOT NULL, started_at INTEGER);
";

impl Db {
    /// Opens (creating if needed) the database and its pool.
    pub fn open(knobs: &Knobs) -> Result<Db, DbError> {
        let (path, tempdir) = match &knobs.database {
            Some(p) => (p.clone(), None),
            None => {
                let dir = std::env::temp_dir().join(format!("volley-demo-{}-{}", std::process::id(), fastrand::u64(..)));
                std::fs::create_dir_all(&dir)?;
                (dir.join("demo.sqlite"), Some(TempDir(dir)))
            }
        };
        let size = knobs.db_pool.max(1);
        let mut conns = Vec::with_capacity(size);
        for i in 0..size {
            let c = Connection::open(&path)?;
            c.busy_timeout(Duration::from_secs(30))?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            if i == 0 {
                c.execute_batch(SCHEMA)?;
                seed(&c)?;
            }
            conns.push(c);
        }
        Ok(Db {
            conns: Mutex::new(conns),
            permits: Semaphore::new(size),
            max: size,
            timeout: knobs.db_timeout,
            rtt: knobs.db_rtt,
            id_type: knobs.id_type,
            stats: PoolStats::default(),
            path,
            _tempdir: tempdir,
        })
    }

    /// Runs `f` on a pooled connection: waits for one (pending), holds it for the
    /// simulated round trip and the query, and gives it back.
    pub async fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let waited = Instant::now();
        self.stats.pending.fetch_add(1, Ordering::Relaxed);
        let permit = tokio::time::timeout(self.timeout, self.permits.acquire()).await;
        self.stats.pending.fetch_sub(1, Ordering::Relaxed);
        self.stats.acquires.fetch_add(1, Ordering::Relaxed);
        self.stats.acquire_us.fetch_add(waited.elapsed().as_micros() as u64, Ordering::Relaxed);
        let Ok(Ok(permit)) = permit else {
            self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            return Err(DbError::PoolTimeout(self.timeout.as_millis()));
        };
        self.stats.active.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.conns.lock().expect("pool lock").pop().expect("a permit means a free connection");
        if !self.rtt.is_zero() {
            tokio::time::sleep(self.rtt).await;
        }
        let (conn, result) = tokio::task::spawn_blocking(move || {
            let r = f(&mut conn);
            (conn, r)
        })
        .await
        .expect("query task");
        self.conns.lock().expect("pool lock").push(conn);
        self.stats.active.fetch_sub(1, Ordering::Relaxed);
        drop(permit);
        Ok(result?)
    }

    /// Messages stored in all message tables (for tests and the demo's final check).
    pub async fn count_messages(&self) -> Result<i64, DbError> {
        self.run(|c| {
            c.query_row("SELECT (SELECT count(*) FROM messages_seq) + (SELECT count(*) FROM messages_rand)", [], |r| r.get(0))
        })
        .await
    }
}

/// A small starting data set: users and rooms, as a chat service would have.
fn seed(c: &Connection) -> rusqlite::Result<()> {
    let rooms: i64 = c.query_row("SELECT count(*) FROM rooms", [], |r| r.get(0))?;
    if rooms > 0 {
        return Ok(());
    }
    let tx = c.unchecked_transaction()?;
    for i in 1..=100 {
        tx.execute("INSERT INTO users (id, name) VALUES (?1, ?2)", (i, format!("user{i}")))?;
    }
    for i in 1..=20 {
        tx.execute("INSERT INTO rooms (id, name, created_at) VALUES (?1, ?2, ?3)", (i, format!("room {i}"), now_ms()))?;
    }
    tx.commit()
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
