//! The database: SQLite in a file (or PostgreSQL), behind a connection pool that behaves like HikariCP —
//! a fixed number of connections, requests that queue for one (counted as *pending*),
//! and an acquire timeout after which the request fails.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::Semaphore;

use crate::Knobs;
use crate::error::{Error, Repr};

/// How message rows are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdType {
    /// `INTEGER PRIMARY KEY`: new rows append to the end of the table's B-tree.
    Sequential,
    /// A random 32-character string key (`WITHOUT ROWID`): every insert lands at a random
    /// place in the B-tree, as the seeds' random string ids did in MySQL/InnoDB.
    Random,
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

/// A value passed to or read from a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// An integer (BIGINT).
    Int(i64),
    /// Text.
    Text(String),
    /// NULL.
    Null,
}

impl Val {
    /// The integer, or 0.
    pub fn int(&self) -> i64 {
        match self {
            Val::Int(n) => *n,
            _ => 0,
        }
    }

    /// The value as JSON.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Val::Int(n) => serde_json::json!(n),
            Val::Text(t) => serde_json::json!(t),
            Val::Null => serde_json::Value::Null,
        }
    }
}

/// A result row.
pub type Row = Vec<Val>;

enum Backend {
    Sqlite(Arc<Mutex<Vec<Connection>>>),
    Postgres(Mutex<Vec<tokio_postgres::Client>>),
}

/// The pool and the database.
pub struct Db {
    backend: Backend,
    permits: Arc<Semaphore>,
    /// Pool size.
    pub max: usize,
    timeout: Duration,
    rtt: Duration,
    /// Message key type.
    pub id_type: IdType,
    /// Gauges.
    pub stats: PoolStats,
    /// Where the data lives (a file, or the PostgreSQL URL without its password).
    pub location: String,
    _tempdir: Option<TempDir>,
}

/// A temporary directory removed when the database is dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SQLITE_SCHEMA: &str = "
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

/// The same schema for PostgreSQL: BIGINT everywhere (so one integer type crosses the wire),
/// and a plain heap table for random keys (no `WITHOUT ROWID`; the B-tree is the index).
const POSTGRES_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS users (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rooms (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS messages_seq (
  id BIGSERIAL PRIMARY KEY, room_id BIGINT NOT NULL REFERENCES rooms(id),
  user_id BIGINT NOT NULL, content TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS messages_seq_room ON messages_seq (room_id, id);
CREATE TABLE IF NOT EXISTS messages_rand (
  id TEXT PRIMARY KEY, room_id BIGINT NOT NULL REFERENCES rooms(id),
  user_id BIGINT NOT NULL, content TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS messages_rand_room ON messages_rand (room_id, created_at);
CREATE TABLE IF NOT EXISTS pair_rooms (
  id BIGSERIAL PRIMARY KEY, access_code TEXT NOT NULL UNIQUE, driver TEXT NOT NULL,
  navigator TEXT NOT NULL, status TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS todos (
  id BIGSERIAL PRIMARY KEY, pair_room_id BIGINT NOT NULL REFERENCES pair_rooms(id),
  content TEXT NOT NULL, checked BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS todos_room ON todos (pair_room_id);
CREATE TABLE IF NOT EXISTS categories (
  id BIGSERIAL PRIMARY KEY, pair_room_id BIGINT NOT NULL REFERENCES pair_rooms(id), name TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS categories_room ON categories (pair_room_id);
CREATE TABLE IF NOT EXISTS reference_links (
  id BIGSERIAL PRIMARY KEY, pair_room_id BIGINT NOT NULL REFERENCES pair_rooms(id),
  url TEXT NOT NULL, category TEXT);
CREATE INDEX IF NOT EXISTS links_room ON reference_links (pair_room_id);
CREATE TABLE IF NOT EXISTS timers (
  pair_room_id BIGINT PRIMARY KEY REFERENCES pair_rooms(id), duration_ms BIGINT NOT NULL,
  remaining_ms BIGINT NOT NULL, started_at BIGINT);
";

/// A gauge of the pool's stats held up while its guard lives (dropped with a request that
/// is cancelled, too).
struct Gauge<'a>(&'a AtomicI64);

impl<'a> Gauge<'a> {
    fn up(g: &'a AtomicI64) -> Gauge<'a> {
        g.fetch_add(1, Ordering::Relaxed);
        Gauge(g)
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A PostgreSQL client taken from the pool, put back when dropped.
struct PgLease<'a> {
    pool: &'a Mutex<Vec<tokio_postgres::Client>>,
    client: Option<tokio_postgres::Client>,
}

impl PgLease<'_> {
    fn client(&self) -> &tokio_postgres::Client {
        self.client.as_ref().expect("held until dropped")
    }
}

impl Drop for PgLease<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            self.pool.lock().unwrap_or_else(|p| p.into_inner()).push(c);
        }
    }
}

impl Db {
    /// Opens (creating if needed) the database and its pool: SQLite in a file, or
    /// PostgreSQL when `knobs.database` is a `postgres://` URL.
    pub async fn open(knobs: &Knobs) -> Result<Db, Error> {
        let size = knobs.db_pool.max(1);
        let (backend, location, tempdir) = match &knobs.database {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                (open_postgres(url, size).await?, redact(url), None)
            }
            other => {
                let (path, tempdir) = match other {
                    Some(p) => (PathBuf::from(p), None),
                    None => {
                        let dir = std::env::temp_dir().join(format!(
                            "volley-demo-{}-{}",
                            std::process::id(),
                            fastrand::u64(..)
                        ));
                        std::fs::create_dir_all(&dir).map_err(Repr::DbFile)?;
                        (dir.join("demo.sqlite"), Some(TempDir(dir)))
                    }
                };
                (
                    open_sqlite(&path, size)?,
                    path.display().to_string(),
                    tempdir,
                )
            }
        };
        let db = Db {
            backend,
            permits: Arc::new(Semaphore::new(size)),
            max: size,
            timeout: knobs.db_timeout,
            rtt: knobs.db_rtt,
            id_type: knobs.id_type,
            stats: PoolStats::default(),
            location,
            _tempdir: tempdir,
        };
        db.seed().await?;
        Ok(db)
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// Runs a query (`$1`, `$2` ... placeholders) on a pooled connection: waits for one
    /// (pending), holds it for the simulated round trip and the query, and gives it back.
    ///
    /// A request dropped half-way (its client timed out or went away) still gives its
    /// connection back and leaves the counters right: the SQLite query's blocking task
    /// returns the connection and the permit itself, and the gauges are guards.
    pub async fn query(&self, sql: &str, params: Vec<Val>) -> Result<Vec<Row>, Error> {
        let waited = Instant::now();
        let pending = Gauge::up(&self.stats.pending);
        let permit = tokio::time::timeout(self.timeout, self.permits.clone().acquire_owned()).await;
        drop(pending);
        self.stats.acquires.fetch_add(1, Ordering::Relaxed);
        self.stats
            .acquire_us
            .fetch_add(waited.elapsed().as_micros() as u64, Ordering::Relaxed);
        let Ok(Ok(permit)) = permit else {
            self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            return Err(Repr::PoolTimeout(self.timeout.as_millis()).into());
        };
        let active = Gauge::up(&self.stats.active);
        if !self.rtt.is_zero() {
            tokio::time::sleep(self.rtt).await;
        }
        let result = match &self.backend {
            Backend::Sqlite(pool) => {
                let conn = pool
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .pop()
                    .ok_or(Repr::PoolTimeout(self.timeout.as_millis()))?;
                let sql = sql.to_string();
                let pool = pool.clone();
                tokio::task::spawn_blocking(move || {
                    let r = sqlite_query(&conn, &sql, &params);
                    pool.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
                    drop(permit);
                    r
                })
                .await
                .map_err(|e| Repr::Task(e.to_string()))?
                .map_err(Error::from)
            }
            Backend::Postgres(pool) => {
                let client = pool
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .pop()
                    .ok_or(Repr::PoolTimeout(self.timeout.as_millis()))?;
                // Back to the pool on every way out, a dropped request's too.
                let lease = PgLease {
                    pool,
                    client: Some(client),
                };
                let result = postgres_query(lease.client(), sql, &params).await;
                drop(lease);
                drop(permit);
                result
            }
        };
        drop(active);
        result
    }

    /// Runs a statement; returns its rows (use `RETURNING` for ids).
    pub async fn execute(&self, sql: &str, params: Vec<Val>) -> Result<Vec<Row>, Error> {
        self.query(sql, params).await
    }

    /// Messages stored in all message tables (for tests and the demo's final check).
    pub async fn count_messages(&self) -> Result<i64, Error> {
        let rows = self
            .query(
                "SELECT (SELECT count(*) FROM messages_seq) + (SELECT count(*) FROM messages_rand)",
                vec![],
            )
            .await?;
        Ok(rows.first().and_then(|r| r.first()).map_or(0, Val::int))
    }

    /// A small starting data set: users and rooms, as a chat service would have.
    async fn seed(&self) -> Result<(), Error> {
        let rooms = self.query("SELECT count(*) FROM rooms", vec![]).await?;
        if rooms.first().and_then(|r| r.first()).map_or(0, Val::int) > 0 {
            return Ok(());
        }
        let users: Vec<String> = (1..=100).map(|i| format!("('user{i}')")).collect();
        self.query(
            &format!("INSERT INTO users (name) VALUES {}", users.join(",")),
            vec![],
        )
        .await?;
        let now = now_ms();
        let rooms: Vec<String> = (1..=20).map(|i| format!("('room {i}', {now})")).collect();
        self.query(
            &format!(
                "INSERT INTO rooms (name, created_at) VALUES {}",
                rooms.join(",")
            ),
            vec![],
        )
        .await?;
        Ok(())
    }
}

fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{}:***{}", &url[..s + 3], user, &url[at..]),
            None => url.to_string(),
        },
        _ => url.to_string(),
    }
}

fn open_sqlite(path: &std::path::Path, size: usize) -> Result<Backend, Error> {
    let mut conns = Vec::with_capacity(size);
    for i in 0..size {
        let c = Connection::open(path)?;
        c.busy_timeout(Duration::from_secs(30))?;
        c.pragma_update(None, "synchronous", "NORMAL")?;
        if i == 0 {
            c.execute_batch(SQLITE_SCHEMA)?;
        }
        conns.push(c);
    }
    Ok(Backend::Sqlite(Arc::new(Mutex::new(conns))))
}

async fn open_postgres(url: &str, size: usize) -> Result<Backend, Error> {
    let mut clients = Vec::with_capacity(size);
    for i in 0..size {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        if i == 0 {
            client.batch_execute(POSTGRES_SCHEMA).await?;
        }
        clients.push(client);
    }
    Ok(Backend::Postgres(Mutex::new(clients)))
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Val::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            Val::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Val::Null => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

fn sqlite_query(c: &Connection, sql: &str, params: &[Val]) -> rusqlite::Result<Vec<Row>> {
    let mut st = c.prepare_cached(sql)?;
    let cols = st.column_count();
    let mut rows = st.query(rusqlite::params_from_iter(params.iter()))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut row = Vec::with_capacity(cols);
        for i in 0..cols {
            row.push(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Integer(n) => Val::Int(n),
                rusqlite::types::ValueRef::Text(t) => {
                    Val::Text(String::from_utf8_lossy(t).into_owned())
                }
                rusqlite::types::ValueRef::Real(f) => Val::Int(f as i64),
                _ => Val::Null,
            });
        }
        out.push(row);
    }
    Ok(out)
}

async fn postgres_query(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[Val],
) -> Result<Vec<Row>, Error> {
    use tokio_postgres::types::{ToSql, Type};
    let boxed: Vec<Box<dyn ToSql + Sync + Send>> = params
        .iter()
        .map(|p| -> Box<dyn ToSql + Sync + Send> {
            match p {
                Val::Int(n) => Box::new(*n),
                Val::Text(t) => Box::new(t.clone()),
                Val::Null => Box::new(None::<String>),
            }
        })
        .collect();
    let refs: Vec<&(dyn ToSql + Sync)> = boxed
        .iter()
        .map(|b| b.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let rows = client.query(sql, &refs).await?;
    Ok(rows
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| match *r.columns()[i].type_() {
                    Type::INT8 => r.get::<_, Option<i64>>(i).map_or(Val::Null, Val::Int),
                    Type::INT4 => r
                        .get::<_, Option<i32>>(i)
                        .map_or(Val::Null, |n| Val::Int(n as i64)),
                    Type::NUMERIC => Val::Null,
                    _ => r.get::<_, Option<String>>(i).map_or(Val::Null, Val::Text),
                })
                .collect()
        })
        .collect())
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
