fn main() -> std::process::ExitCode {
    // A closed pipe (`pacauc fit … | head`) ends the program as it ends other
    // Unix tools, silently with SIGPIPE, rather than as a panic in println!.
    #[cfg(unix)]
    // SAFETY: at the start of main, before any thread exists; SIG_DFL is a
    // valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    pacauc::cli::main()
}
