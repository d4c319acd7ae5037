//! CPU seconds of this process (user + system, every thread): the records
//! split a run's CPU by phase (certificate, IS check) with it, since on a
//! shared machine wall seconds say more about the other processes.

/// CPU seconds used by the process so far; NaN where unknown.
pub fn process_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    f64::NAN
}
