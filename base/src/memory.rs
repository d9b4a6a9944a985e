//! The rig's own memory: what the process holds (its resident set), and handing back to the
//! kernel what it freed.
//!
//! Why: a long campaign (`sinkhole explore --time 8h`) runs one scenario after another in one
//! process, each run's drains, histories and checks allocated on several threads and freed at
//! its end. glibc's allocator keeps freed memory in per-thread arenas for reuse rather than
//! returning it, so the resident set after a run says little about what the process still
//! uses; `malloc_trim` returns the free pages of every arena, and what stays resident after it
//! is what is still held. Between runs is the natural moment: nothing is in flight.

/// The process's resident set, bytes (`/proc/self/statm`), if the system says.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// The bytes the allocator has handed out and not had back (glibc's `mallinfo2`: in use in
/// its arenas plus its own mmapped blocks), if the allocator says. Beside [`rss_bytes`] it
/// tells a leak (this grows) from an allocator that keeps what was freed (this stays, the
/// resident set grows).
pub fn heap_in_use_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's own counters.
        let m = unsafe { libc::mallinfo2() };
        Some((m.uordblks + m.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// Returns the allocator's free pages to the kernel (glibc's `malloc_trim`); a no-op where the
/// allocator is another.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; 0 keeps no padding.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_memory_goes_back_and_the_resident_set_says_so() {
        let before = rss_bytes().expect("/proc/self/statm");
        assert!(before > 0);
        // 64 MiB in 32 KiB blocks (under the allocator's mmap threshold: they come from an
        // arena), then all freed but the last, which pins the arena's top: a plain free cannot
        // shrink it, as after a run whose last allocation outlives the rest.
        let mut blocks: Vec<Vec<u8>> = (0..2048).map(|i| vec![i as u8; 32 << 10]).collect();
        let held = rss_bytes().unwrap();
        assert!(held >= before + (48 << 20), "{before} → {held}");
        let in_use = heap_in_use_bytes().expect("glibc's counters");
        assert!(in_use >= 64 << 20, "{in_use}");
        let last = blocks.pop();
        drop(blocks);
        release_freed();
        let after = rss_bytes().unwrap();
        assert!(after < held - (32 << 20), "freed and trimmed: {held} → {after}");
        assert!(heap_in_use_bytes().unwrap() < in_use - (60 << 20), "freed blocks are not in use");
        drop(last);
    }
}
