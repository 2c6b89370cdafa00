//! `--connections N`: a worker's VUs share a fixed set of connections instead of each
//! holding its own.
//!
//! - HTTP/2: each VU is given one of the connections (round robin, as h2load gives each of
//!   its `-c` clients `-m` streams) and opens its requests as streams on it, as many at
//!   once as the server's `SETTINGS_MAX_CONCURRENT_STREAMS` allows ([`crate::http2`]).
//!   HTTP/3 the same, as many streams at once as the server's QUIC stream limit allows
//!   ([`crate::http3`]; a wait for that limit is inside the request's time, not apart).
//! - HTTP/1.1: the connections are a pool the VUs take turns on, first come first served,
//!   as an application's HTTP client pool is: a VU borrows an idle connection for one
//!   exchange and gives it back.
//!
//! Which of the two is learnt from the first connection (over TLS the server chooses by
//! ALPN); until then VUs wait for that one connection. Time spent waiting for a connection
//! or a stream is measured apart from the request's own timings.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use rustls::ClientConfig;
use tokio::sync::{Mutex, OnceCell, OwnedSemaphorePermit, Semaphore};

use crate::connection::{Connection, connect_with};
use crate::dial::ConnectTimes;
use crate::failure::Failure;
use crate::h1::Stream;
use crate::http2::H2Conn;
use crate::http3::H3Conn;
use crate::target::Target;

/// One worker's shared connections.
pub(crate) struct Pool {
    pub(crate) target: Rc<Target>,
    tls: Option<Arc<ClientConfig>>,
    force_h2: bool,
    /// The connections; `None` until opened, or after one failed.
    slots: Vec<Arc<Mutex<Option<Connection>>>>,
    /// Whether each slot had a connection before (a new one there is a reconnect).
    used: Vec<Cell<bool>>,
    /// Whether the connections speak HTTP/2, learnt from the first one.
    h2: OnceCell<bool>,
    /// HTTP/1.1: one turn per connection, handed out in the order VUs asked.
    turns: Arc<Semaphore>,
    /// Round robin of VUs over connections (HTTP/2).
    next: Cell<usize>,
}

/// A connection opened for a lease: what it took, and whether its slot had one before.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opened {
    pub(crate) times: ConnectTimes,
    pub(crate) reconnect: bool,
}

/// Both connections' set-up, when a request waited for two (the first connection, then its own).
fn add(a: Option<Opened>, b: Opened) -> Opened {
    match a {
        None => b,
        Some(a) => Opened {
            times: ConnectTimes {
                tcp_us: a.times.tcp_us + b.times.tcp_us,
                tls_us: a.times.tls_us + b.times.tls_us,
            },
            reconnect: a.reconnect || b.reconnect,
        },
    }
}

/// What a VU gets to send one request on.
pub(crate) enum Lease {
    /// An HTTP/2 connection shared with other VUs.
    H2(H2Conn, Option<Opened>),
    /// An HTTP/3 connection shared with other VUs (its requests are streams on it).
    H3(H3Conn, Option<Opened>),
    /// An HTTP/1.1 connection the VU holds alone until the lease is dropped.
    H1(H1Lease),
}

/// A borrowed HTTP/1.1 connection and the turn it came with.
pub(crate) struct H1Lease {
    pub(crate) slot: tokio::sync::OwnedMutexGuard<Option<Connection>>,
    _turn: OwnedSemaphorePermit,
    pub(crate) opened: Option<Opened>,
}

impl H1Lease {
    /// The connection's stream (the lease always holds an open HTTP/1.1 connection).
    pub(crate) fn stream(&mut self) -> &mut Stream {
        match self.slot.as_mut() {
            Some(Connection::H1(s)) => s,
            _ => unreachable!("an HTTP/1.1 lease holds an HTTP/1.1 connection"),
        }
    }

    /// Closes the connection (after a failure, or a response that ends it).
    pub(crate) fn discard(&mut self) {
        *self.slot = None;
    }
}

impl Pool {
    /// What its connections speak (the first one tells which of the two under TLS).
    pub(crate) fn speaks(&self) -> crate::connection::Speaks {
        crate::connection::Speaks::of(self.force_h2, self.tls.as_ref())
    }

    /// A pool of `size` connections (at least one) to `target`.
    pub(crate) fn new(
        target: Rc<Target>,
        tls: Option<Arc<ClientConfig>>,
        force_h2: bool,
        size: usize,
    ) -> Rc<Pool> {
        let size = size.max(1);
        Rc::new(Pool {
            target,
            tls,
            force_h2,
            // An `Arc` although the pool never leaves its worker's thread: tokio's owned
            // guard (`try_lock_owned`, a lease that outlives the borrow) takes one.
            #[allow(clippy::arc_with_non_send_sync)]
            slots: (0..size).map(|_| Arc::new(Mutex::new(None))).collect(),
            used: (0..size).map(|_| Cell::new(false)).collect(),
            h2: OnceCell::new(),
            turns: Arc::new(Semaphore::new(size)),
            next: Cell::new(0),
        })
    }

    /// The connection a new VU's HTTP/2 streams go on.
    pub(crate) fn assign(&self) -> usize {
        let i = self.next.get();
        self.next.set(i + 1);
        i % self.slots.len()
    }

    /// Opens a connection into empty slot `i`.
    async fn open(&self, i: usize, slot: &mut Option<Connection>) -> Result<Opened, Failure> {
        let (conn, times) = connect_with(&self.target, self.tls.as_ref(), self.force_h2).await?;
        *slot = Some(conn);
        Ok(Opened {
            times,
            reconnect: self.used[i].replace(true),
        })
    }

    /// Learns the protocol from the first connection, opened into slot 0.
    async fn protocol(&self) -> Result<(bool, Option<Opened>), Failure> {
        let mut times = None;
        let h2 = *self
            .h2
            .get_or_try_init(|| async {
                let mut slot = self.slots[0].lock().await;
                if slot.is_none() {
                    times = Some(Box::pin(self.open(0, &mut slot)).await?);
                }
                // HTTP/3 multiplexes as HTTP/2 does: a VU's requests are streams on its one.
                Ok::<_, Failure>(matches!(*slot, Some(Connection::H2(_) | Connection::H3(_))))
            })
            .await?;
        Ok((h2, times))
    }

    /// The connection for one request: HTTP/2 connection `assigned` (opened if it is not
    /// open), or the first free HTTP/1.1 connection once it is this VU's turn.
    /// Opening a connection runs in a box (once per connection): inline, its state would
    /// size every waiting VU's future.
    pub(crate) async fn lease(&self, assigned: usize) -> Result<Lease, Failure> {
        let (h2, first) = self.protocol().await?;
        if h2 {
            let i = assigned % self.slots.len();
            let mut slot = self.slots[i].lock().await;
            let mut times = first;
            let open = match &*slot {
                Some(Connection::H2(c)) => !c.is_closed(),
                Some(Connection::H3(c)) => !c.is_closed(),
                _ => false,
            };
            if !open {
                *slot = None;
                times = Some(add(times, Box::pin(self.open(i, &mut slot)).await?));
            }
            return match &*slot {
                Some(Connection::H2(c)) => Ok(Lease::H2(c.clone(), times)),
                Some(Connection::H3(c)) => Ok(Lease::H3(c.clone(), times)),
                _ => Err(Failure::new(
                    volley_stats::ErrorKind::Protocol,
                    "the server answered HTTP/1.1 on a connection of an HTTP/2 pool",
                )),
            };
        }
        let turn = self
            .turns
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        // Each turn holds at most one connection, so one is free.
        let free = self
            .slots
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.clone().try_lock_owned().ok().map(|g| (i, g)));
        let (i, mut slot) = free.expect("a turn always finds a free connection");
        let mut opened = first;
        if slot.is_none() {
            opened = Some(add(opened, Box::pin(self.open(i, &mut slot)).await?));
        }
        Ok(Lease::H1(H1Lease {
            slot,
            _turn: turn,
            opened,
        }))
    }
}

/// A VU's place in the pool: the pool, the shared connection it was given, and that
/// connection as it last used it, so that a request skips the slot's lock while the
/// connection stays open.
pub(crate) struct Seat {
    pub(crate) pool: Rc<Pool>,
    pub(crate) assigned: usize,
    pub(crate) cached: Option<Shared>,
}

/// A connection VUs share, as a seat keeps it: HTTP/2's or HTTP/3's.
#[derive(Clone)]
pub(crate) enum Shared {
    H2(H2Conn),
    H3(H3Conn),
}

impl Shared {
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Shared::H2(c) => c.is_closed(),
            Shared::H3(c) => c.is_closed(),
        }
    }
}

impl Seat {
    /// A seat for a new VU.
    pub(crate) fn new(pool: &Rc<Pool>) -> Seat {
        Seat {
            assigned: pool.assign(),
            pool: pool.clone(),
            cached: None,
        }
    }
}
