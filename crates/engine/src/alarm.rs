//! Waking a worker's event loop at an exact instant, for the open model's arrivals.
//!
//! tokio's timers tick in whole milliseconds, which alone would send every arrival up to a
//! millisecond late. A thread that sleeps with the OS's precision and hands each arrival
//! over (what the pacer did before) costs two thread wake-ups per arrival, one of them
//! across cores — most of the CPU an arrival cost at a few thousand per second. A Linux
//! `timerfd` is the kernel's high-resolution timer seen as a file: the worker's own epoll
//! waits on it beside the sockets, so the arrival wakes only the thread that sends it, to
//! the microsecond. Elsewhere the alarm falls back to tokio's millisecond timer.

use std::time::Instant;

/// A one-shot timer on the current thread's event loop, re-armed for each instant.
pub(crate) struct Alarm {
    #[cfg(target_os = "linux")]
    timer: Option<linux::Timerfd>,
}

impl Alarm {
    /// An alarm for the current event loop (which must have IO enabled).
    pub(crate) fn new() -> Self {
        #[cfg(target_os = "linux")]
        let timer = match linux::Timerfd::new() {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!(
                    "volley: no high-resolution timer ({e}); arrivals are timed to the millisecond"
                );
                None
            }
        };
        Alarm {
            #[cfg(target_os = "linux")]
            timer,
        }
    }

    /// Returns at `due` (at once when it is past).
    pub(crate) async fn until(&mut self, due: Instant) {
        if due <= Instant::now() {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            if let Some(t) = &mut self.timer {
                match t.until(due).await {
                    Ok(()) => return,
                    Err(e) => {
                        eprintln!(
                            "volley: the high-resolution timer failed ({e}); arrivals are timed to the millisecond from now on"
                        );
                        self.timer = None;
                    }
                }
            }
        }
        tokio::time::sleep_until(due.into()).await;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::OwnedFd;
    use std::time::Instant;

    use rustix::time::{
        ClockId, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
        clock_gettime, timerfd_create, timerfd_settime,
    };
    use tokio::io::unix::AsyncFd;

    /// A non-blocking `CLOCK_MONOTONIC` timerfd registered with the event loop.
    pub(super) struct Timerfd {
        fd: AsyncFd<OwnedFd>,
        /// One instant and the same moment on `CLOCK_MONOTONIC` (which `Instant` reads on
        /// Linux): instants become absolute timer values, so arming never drifts.
        base: (Instant, Timespec),
        /// The instant the timer is armed for, so waiting again for it does not re-arm.
        armed: Option<Instant>,
    }

    impl Timerfd {
        pub(super) fn new() -> io::Result<Self> {
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            let base = (Instant::now(), clock_gettime(ClockId::Monotonic));
            // `AsyncFd::new` is deprecated for file descriptors someone else may close; this
            // one is an `OwnedFd` made here and owned by the `AsyncFd` alone (the safe
            // alternative, `register`, is `unsafe`, which the workspace denies).
            #[allow(deprecated)]
            let fd = AsyncFd::new(fd)?;
            Ok(Timerfd {
                fd,
                base,
                armed: None,
            })
        }

        /// `due` as an absolute `CLOCK_MONOTONIC` time.
        fn timespec(&self, due: Instant) -> Timespec {
            let d = due.saturating_duration_since(self.base.0);
            let nanos = self.base.1.tv_nsec as u64 + u64::from(d.subsec_nanos());
            Timespec {
                tv_sec: self.base.1.tv_sec + d.as_secs() as i64 + (nanos / 1_000_000_000) as i64,
                tv_nsec: (nanos % 1_000_000_000) as _,
            }
        }

        pub(super) async fn until(&mut self, due: Instant) -> io::Result<()> {
            if self.armed != Some(due) {
                let zero = Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                timerfd_settime(
                    self.fd.get_ref(),
                    TimerfdTimerFlags::ABSTIME,
                    &Itimerspec {
                        it_interval: zero,
                        it_value: self.timespec(due),
                    },
                )?;
                self.armed = Some(due);
            }
            loop {
                let mut ready = self.fd.readable().await?;
                // Reads the expiration count; nothing to read yet means a readiness left
                // from an earlier arming (re-arming resets the count), so wait on.
                match ready.try_io(|fd| {
                    rustix::io::read(fd.get_ref(), &mut [0u8; 8]).map_err(io::Error::from)
                }) {
                    Ok(read) => {
                        read?;
                        self.armed = None;
                        return Ok(());
                    }
                    Err(_would_block) => continue,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_alarm_never_returns_before_its_instant() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut alarm = Alarm::new();
            #[cfg(target_os = "linux")]
            assert!(alarm.timer.is_some(), "a timerfd on Linux");
            let start = Instant::now();
            // Instants in order, one re-used, one already past.
            for us in [300u64, 300, 1_200, 50, 2_000, 2_500] {
                let due = start + Duration::from_micros(us);
                alarm.until(due).await;
                assert!(Instant::now() >= due, "returned before {us} µs");
            }
            // A wait given up half-way (its expiry left unread) does not end the next one early.
            let early = start + Duration::from_millis(4);
            let _ = tokio::time::timeout(Duration::from_micros(10), alarm.until(early)).await;
            std::thread::sleep(Duration::from_millis(3));
            let due = start + Duration::from_millis(8);
            alarm.until(due).await;
            assert!(Instant::now() >= due);
        });
    }
}
