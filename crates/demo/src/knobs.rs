//! The demo target's tuning knobs, named once: `volley target serve`'s flags, `volley sweep
//! --demo --vary NAME=...`, `--demo-knob NAME=VALUE` and `volley demo`'s phases all go
//! through [`KNOBS`] and [`Knobs::set`], so a knob is added in this file alone.

use std::time::Duration;

use crate::db::IdType;
use crate::error::{Error, Repr};

/// The most CPU a request may be set to spend (`cpu-work`).
pub const MAX_CPU_WORK: Duration = Duration::from_secs(10);

/// The tuning knobs.
#[derive(Debug, Clone)]
pub struct Knobs {
    /// Requests handled at once (Tomcat `max-threads`); 0 = no limit.
    pub max_threads: usize,
    /// Connections open at once (Tomcat `max-connections`); more wait in the listen backlog.
    pub max_connections: usize,
    /// Requests that may wait for a worker (Tomcat `accept-count`); beyond it: 503.
    pub accept_count: usize,
    /// DB connections in the pool (HikariCP `maximum-pool-size`).
    pub db_pool: usize,
    /// How long a request waits for a DB connection before failing (HikariCP `connection-timeout`).
    pub db_timeout: Duration,
    /// Round trip added to every query while it holds its connection, as a database on
    /// another host would cost (an embedded SQLite answers in microseconds).
    pub db_rtt: Duration,
    /// Look-aside cache for room lists and pair rooms.
    pub cache: bool,
    /// Message primary keys.
    pub id_type: IdType,
    /// A SQLite database file, or a `postgres://` URL; `None` for a fresh temporary SQLite file.
    pub database: Option<String>,
    /// CPU time each API request spends on its worker (a busy loop on the thread's own CPU
    /// clock, so a CPU limit that throttles the pod makes the request wait, not skip its work).
    pub cpu_work: Duration,
    /// `/health` waits for a worker like any request (and is refused with 503 when the accept
    /// queue is full), so a saturated pod misses its readiness probe, as Spring's did.
    pub health_shares_workers: bool,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            max_threads: 200,
            max_connections: 8192,
            accept_count: 100,
            db_pool: 10,
            db_timeout: Duration::from_secs(30),
            db_rtt: Duration::from_millis(1),
            cache: false,
            id_type: IdType::Sequential,
            database: None,
            cpu_work: Duration::ZERO,
            health_shares_workers: false,
        }
    }
}

/// One knob as users name it.
#[derive(Debug, Clone, Copy)]
pub struct KnobInfo {
    /// Its name: `db-pool` (the flag is `--db-pool`).
    pub name: &'static str,
    /// The placeholder in usage lines (empty for a switch).
    pub value_name: &'static str,
    /// One line of help.
    pub help: &'static str,
}

impl KnobInfo {
    /// A switch (`--cache`) takes no value on the command line.
    pub fn is_switch(&self) -> bool {
        self.value_name.is_empty()
    }
}

/// Every knob, in `--help` order.
pub const KNOBS: &[KnobInfo] = &[
    KnobInfo {
        name: "max-threads",
        value_name: "N",
        help: "Requests handled at once (Tomcat max-threads); 0 = no limit.",
    },
    KnobInfo {
        name: "max-connections",
        value_name: "N",
        help: "Connections open at once (Tomcat max-connections); more wait in the listen backlog.",
    },
    KnobInfo {
        name: "accept-count",
        value_name: "N",
        help: "Requests that may wait for a worker (Tomcat accept-count); beyond it: 503.",
    },
    KnobInfo {
        name: "db-pool",
        value_name: "N",
        help: "DB connection pool size (HikariCP maximum-pool-size).",
    },
    KnobInfo {
        name: "db-timeout",
        value_name: "DURATION",
        help: "How long a request waits for a DB connection (HikariCP connection-timeout).",
    },
    KnobInfo {
        name: "db-rtt",
        value_name: "DURATION",
        help: "Round trip added to every query while it holds a connection (a remote database's cost).",
    },
    KnobInfo {
        name: "cache",
        value_name: "",
        help: "Look-aside cache for room lists and pair rooms.",
    },
    KnobInfo {
        name: "id-type",
        value_name: "sequential|random",
        help: "Message primary keys: sequential integers or random strings.",
    },
    KnobInfo {
        name: "database",
        value_name: "FILE|URL",
        help: "A SQLite database file, or a PostgreSQL URL (postgres://user@127.0.0.1/db); default: a fresh temporary SQLite file.",
    },
    KnobInfo {
        name: "cpu-work",
        value_name: "DURATION",
        help: "CPU time each API request spends on its worker (at most 10s), so CPU limits and an autoscaler matter.",
    },
    KnobInfo {
        name: "health-shares-workers",
        value_name: "",
        help: "/health waits for a worker like any request (503 when the accept queue is full), as a Spring probe does.",
    },
];

impl Knobs {
    /// Sets knob `name` from its text (`db-pool` `10`, `db-rtt` `5ms`, `cache` `on`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), Error> {
        let bad = |why: &str| Repr::KnobValue {
            name: name.to_string(),
            value: value.to_string(),
            why: why.to_string(),
        };
        let count = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| bad("expected a whole number"))
        };
        let duration = || {
            // The one duration rule of volley: a unit always (`5` could be s or ms).
            volley_scenario::parse_duration(value).map_err(|e| bad(&e.to_string()))
        };
        let switch = || match value.trim() {
            "on" | "true" | "yes" | "1" => Ok(true),
            "off" | "false" | "no" | "0" => Ok(false),
            _ => Err(bad("expected on or off")),
        };
        match name {
            "max-threads" => self.max_threads = count()?,
            "max-connections" => self.max_connections = count()?,
            "accept-count" => self.accept_count = count()?,
            "db-pool" => self.db_pool = count()?,
            "db-timeout" => self.db_timeout = duration()?,
            "db-rtt" => self.db_rtt = duration()?,
            "cache" => self.cache = switch()?,
            "health-shares-workers" => self.health_shares_workers = switch()?,
            "cpu-work" => {
                let d = duration()?;
                if d > MAX_CPU_WORK {
                    return Err(bad("at most 10s of CPU a request (write e.g. 2ms)").into());
                }
                self.cpu_work = d;
            }
            "id-type" => {
                self.id_type = match value.trim() {
                    "sequential" => IdType::Sequential,
                    "random" => IdType::Random,
                    _ => return Err(bad("expected sequential or random").into()),
                }
            }
            "database" => self.database = Some(value.to_string()),
            _ => {
                return Err(Repr::UnknownKnob {
                    name: name.to_string(),
                    knobs: KNOBS.iter().map(|k| k.name).collect::<Vec<_>>().join(", "),
                }
                .into());
            }
        }
        Ok(())
    }

    /// Knob `name`'s value as text (what `set` reads back), `None` when unset or unknown.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "max-threads" => self.max_threads.to_string(),
            "max-connections" => self.max_connections.to_string(),
            "accept-count" => self.accept_count.to_string(),
            "db-pool" => self.db_pool.to_string(),
            "db-timeout" => humantime::format_duration(self.db_timeout).to_string(),
            "db-rtt" => humantime::format_duration(self.db_rtt).to_string(),
            "cache" => (if self.cache { "on" } else { "off" }).to_string(),
            "id-type" => (if self.id_type == IdType::Random {
                "random"
            } else {
                "sequential"
            })
            .to_string(),
            "database" => self.database.clone()?,
            "cpu-work" => humantime::format_duration(self.cpu_work).to_string(),
            "health-shares-workers" => (if self.health_shares_workers {
                "on"
            } else {
                "off"
            })
            .to_string(),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_reads_back_what_it_was_set_to() {
        let mut k = Knobs::default();
        for (name, value) in [
            ("max-threads", "50"),
            ("db-pool", "3"),
            ("db-rtt", "5ms"),
            ("cache", "on"),
            ("id-type", "random"),
            ("database", "x.db"),
            ("cpu-work", "2ms"),
            ("health-shares-workers", "on"),
        ] {
            k.set(name, value).unwrap();
            assert_eq!(k.get(name).as_deref(), Some(value), "{name}");
        }
        for info in KNOBS {
            if info.name != "database" {
                assert!(
                    Knobs::default().get(info.name).is_some(),
                    "{} has no default",
                    info.name
                );
            }
        }
        assert!(
            k.set("pool", "3")
                .unwrap_err()
                .to_string()
                .contains("the knobs are max-threads")
        );
        assert_eq!(
            k.set("db-pool", "x").unwrap_err().to_string(),
            "db-pool=x: expected a whole number"
        );
        // Durations by volley's one rule: a unit always.
        assert_eq!(
            k.set("db-rtt", "5").unwrap_err().to_string(),
            "db-rtt=5: `5` has no unit: write 5s, 5ms or 5m"
        );
        assert_eq!(
            k.set("cpu-work", "11s").unwrap_err().to_string(),
            "cpu-work=11s: at most 10s of CPU a request (write e.g. 2ms)"
        );
        assert_eq!(
            k.set("health-shares-workers", "maybe")
                .unwrap_err()
                .to_string(),
            "health-shares-workers=maybe: expected on or off"
        );
        k.set("db-rtt", "1.5ms").unwrap();
        assert_eq!(k.db_rtt, std::time::Duration::from_micros(1500));
    }
}
