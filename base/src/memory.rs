//! The rig's own memory: what the process holds (its resident set), and handing back to the
//! kernel what it freed.
//!
//! Why: a long campaign (`sinkhole explore --time 8h`) runs one scenario after another in one
//! process, each run's drains, histories and checks allocated on several threads and freed at
//! its end. glibc's allocator keeps freed memory in per-thread arenas for reuse rather than
//! returning it, so the resident set after a run says little about what the process still
//! uses; `malloc_trim` returns the free pages of every arena, and what stays resident after it
//! is what is still held. Between runs is the natural moment: nothing is in flight.
//!
//! `malloc_trim` misses one kind of free memory: the top chunk of an arena other than the main
//! one (the free space at its end, where its heap grows). glibc shrinks that top only when a
//! `free` leaves it above the trim threshold, and by default the threshold moves: each freed
//! block bigger than the mmap threshold raises the mmap threshold to that block's size (up to
//! 32 MiB) and the trim threshold to twice it. After the first big buffer a run frees, every
//! thread arena (up to eight per core, one for each thread that ever allocated at once with
//! the others: the runtime's, the blocking pool's, librdkafka's) keeps up to that much free
//! memory resident for good. That was the climb of a campaign's resident set with its in-use
//! bytes flat (`mallinfo2` counts every arena: what they kept was free). [`fix_thresholds`]
//! holds both thresholds at glibc's starting values, so a thread arena gives its free top
//! back as soon as it passes 128 KiB, and blocks above 128 KiB come from their own mapping,
//! unmapped when freed.

/// glibc's starting mmap threshold and trim threshold (`M_MMAP_THRESHOLD`, `M_TRIM_THRESHOLD`),
/// held fixed by [`fix_thresholds`].
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const THRESHOLD_BYTES: i32 = 128 << 10;

/// Holds glibc's mmap and trim thresholds at 128 KiB for the life of the process
/// (setting either turns glibc's moving thresholds off): see the module docs. Called once at
/// start, before the threads, by a process that runs run after run (the binary does, but for
/// a worker); a no-op where the allocator is another.
pub fn fix_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters, under its own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD_BYTES);
    }
}

/// The process's resident set, bytes (`/proc/self/statm`), if the system says.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// The bytes the allocator has handed out and not had back (glibc's `mallinfo2`: in use in
/// every arena, the main one and the threads', plus its own mmapped blocks), if the allocator
/// says. Beside [`rss_bytes`] it tells a leak (this grows) from an allocator that keeps what
/// was freed (this stays, the resident set grows).
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

/// Returns the allocator's free pages to the kernel (glibc's `malloc_trim`: the whole free pages
/// of every arena and the main arena's free top; a thread arena's top is [`fix_thresholds`]'s);
/// a no-op where the allocator is another.
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

    /// Set in the child process `a_finished_threads_freed_memory_goes_back` runs itself in.
    const ALONE: &str = "SINKHOLE_MEMORY_TEST_ALONE";

    /// A run's pattern on one of its threads: a big buffer freed (by default glibc then raises
    /// its trim threshold to twice its size), then many small blocks, all freed. The thread's
    /// arena must not keep them resident once the thread is gone and freed memory handed back.
    #[test]
    fn a_finished_threads_freed_memory_goes_back() {
        if std::env::var_os(ALONE).is_none() {
            // In a process of its own: the allocator's thresholds and the resident set are the
            // whole process's, and the other tests run beside this one.
            let name = "memory::tests::a_finished_threads_freed_memory_goes_back";
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{said}");
            assert!(said.contains("1 passed"), "the child ran no test: {said}");
            return;
        }
        fix_thresholds();
        let before = rss_bytes().expect("/proc/self/statm");
        std::thread::spawn(|| {
            drop(std::hint::black_box(vec![1u8; 8 << 20]));
            let blocks: Vec<Vec<u8>> = (0..24_000).map(|i| vec![i as u8; 500]).collect();
            drop(std::hint::black_box(blocks));
        })
        .join()
        .unwrap();
        release_freed();
        let after = rss_bytes().unwrap();
        // 12 MiB were in the arena; glibc's moving thresholds kept all of it resident.
        assert!(after < before + (4 << 20), "still resident: {before} → {after}");
    }

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
