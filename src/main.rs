fn main() -> std::process::ExitCode {
    pacauc::cli::main()
}
