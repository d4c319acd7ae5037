fn main() -> std::process::ExitCode {
    // A closed pipe (`pacauc fit … | head`) ends the program as it ends other
    // Unix tools, silently with SIGPIPE, rather than as a panic in println!.
    #[cfg(unix)]
    // SAFETY: at the start of main, before any thread exists; SIG_DFL is a
    // valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // glibc hands the heap's top back to the system whenever it is freed, so the
    // samplers' per-stage scratch is faulted in again every stage (the fixed
    // Pima benchmark: 25 k minor faults against 2 k with a pad; ≈ 4% of its CPU).
    // Keeping 64 MB of freed top costs at most that much resident memory.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: at the start of main, before any thread or allocation race;
    // mallopt only tunes the allocator.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
    pacauc::cli::main()
}
