//! The bounds of every number a plan holds, in one place.
//!
//! Each follows from what one machine can do, with room to spare, so that no value a user
//! can type (`--vus 99999999999`, `--rate 1e9`, `start: 100000h`) reaches an allocation or
//! an arithmetic overflow: it is refused where it is parsed, with the bound in the message.
//! - VUs: each holds a connection, buffers and a task (a few KiB); a million is several GiB
//!   and more sockets than a host's ports allow without `--source-addrs`.
//! - Connections: no more than VUs can be useful, and the same million at most.
//! - Arrival rate: one worker thread dispatches a few million arrivals per second at best;
//!   ten million per second is beyond any host and still a finite schedule.
//! - Lengths of time: a week, longer than any soak test, and far from `Duration`'s limits.

use std::time::Duration;

use crate::Error;

/// Most virtual users in one plan (also `max_vus`, a stage's target and a population's).
pub const MAX_VUS: u64 = 1_000_000;

/// Most shared connections (`--connections`).
pub const MAX_CONNECTIONS: u64 = MAX_VUS;

/// Highest arrival rate, per second (`--rate`, rate stages, a rate set live, `--target`).
pub const MAX_RATE: f64 = 10_000_000.0;

/// Longest length of time any option takes (durations, stages, timeouts, offsets), and the
/// longest a whole plan may last.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Shortest request timeout: below a millisecond, the event loop's timers cannot tell a
/// response in time from one too late.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// Most populations (`scenarios:`) in one run: each has worker threads of its own.
pub const MAX_POPULATIONS: usize = 100;

/// Longest name of a run or a population (it names a directory, with a time stamp and a
/// group's `-xN` suffix added; file systems take 255 bytes).
pub const MAX_NAME_LEN: usize = 128;

/// Shortest sampling interval (`--interval`): one row of series.csv each.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Longest sampling interval; a run directory whose `interval_s` is beyond it is refused.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Most iterations per VU (`--iterations`).
pub const MAX_ITERATIONS: u64 = 1_000_000_000_000;

/// Most runs in one run group (`--repeat`).
pub const MAX_REPEAT: u64 = 1000;

/// `n` if it is at most `max`, else an error naming what it counts and the bound.
pub fn at_most(n: u64, max: u64, what: &str) -> Result<u64, Error> {
    if n > max {
        return Err(Error::value(format!(
            "{n} {what} is more than volley runs in one plan (at most {max}); give a smaller number{}",
            if what.contains("VU") {
                ", or split the load over processes with --segment (volley k8s manifest does)"
            } else {
                ""
            }
        )));
    }
    Ok(n)
}

/// `rate` (per second) if it is at most [`MAX_RATE`].
pub fn rate_at_most(rate: f64, text: &str) -> Result<f64, Error> {
    if rate > MAX_RATE {
        return Err(Error::value(format!(
            "rate `{text}` is {}/s, more than one machine can send (volley takes at most {MAX_RATE:.0}/s); give a lower rate, or split it over processes with --segment",
            if rate < 1e12 {
                format!("{rate:.0}")
            } else {
                format!("{rate:.3e}")
            }
        )));
    }
    Ok(rate)
}

/// `d` if it is at most [`MAX_DURATION`].
pub fn duration_at_most(d: Duration, text: &str) -> Result<Duration, Error> {
    if d > MAX_DURATION {
        return Err(Error::value(format!(
            "`{text}` is longer than 7 days, the longest length volley takes; give a shorter one (e.g. 24h)"
        )));
    }
    Ok(d)
}

/// Largest request body file (`--body-file`, a step's `body_file`).
pub const MAX_BODY_FILE: u64 = 256 << 20;

/// Largest CSV a feeder or `volley scalability` reads.
pub const MAX_DATA_FILE: u64 = 1 << 30;

/// Opens `path` for reading, refusing what is not a regular file (a FIFO would block
/// forever, `/dev/zero` never ends) or is larger than `max` bytes; the reader it returns
/// stops at `max + 1` bytes whatever the file claims, so a file that grows while it is read
/// is caught too ([`read_bounded`]).
pub fn open_bounded(
    path: &std::path::Path,
    max: u64,
) -> Result<std::io::Take<std::fs::File>, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a pipe or a device)"
        };
        return Err(format!("{} is {what}; give a file", path.display()));
    }
    if meta.len() > max {
        return Err(too_large(path, meta.len(), max));
    }
    use std::io::Read;
    std::fs::File::open(path)
        .map(|f| f.take(max + 1))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Reads all of `path`, at most `max` bytes ([`open_bounded`]).
pub fn read_bounded(path: &std::path::Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    open_bounded(path, max)?
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if out.len() as u64 > max {
        return Err(too_large(path, out.len() as u64, max));
    }
    Ok(out)
}

fn too_large(path: &std::path::Path, len: u64, max: u64) -> String {
    format!(
        "{} is larger than volley reads ({len} bytes or more; at most {} MiB); give a smaller file",
        path.display(),
        max >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_say_what_to_write() {
        assert_eq!(at_most(5, MAX_VUS, "VUs").unwrap(), 5);
        let e = at_most(99_999_999_999, MAX_VUS, "VUs").unwrap_err();
        assert!(
            e.to_string().contains("at most 1000000") && e.to_string().contains("--segment"),
            "{e}"
        );
        assert!(
            rate_at_most(1e9, "1e9")
                .unwrap_err()
                .to_string()
                .contains("at most 10000000/s")
        );
        assert!(duration_at_most(Duration::from_secs(8 * 86400), "8d").is_err());
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        let dir = std::env::temp_dir();
        assert!(read_bounded(&dir, 10).unwrap_err().contains("a directory"));
        let zero = std::path::Path::new("/dev/zero");
        if zero.exists() {
            assert!(
                read_bounded(zero, 10)
                    .unwrap_err()
                    .contains("not a regular file")
            );
        }
        let f = dir.join(format!("volley-limits-{}", std::process::id()));
        std::fs::write(&f, b"0123456789ab").unwrap();
        assert!(
            read_bounded(&f, 10)
                .unwrap_err()
                .contains("larger than volley reads")
        );
        assert_eq!(read_bounded(&f, 12).unwrap(), b"0123456789ab");
        let _ = std::fs::remove_file(&f);
    }
}
