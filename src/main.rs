//! `ctxfold`: the porcelain dispatcher (see `ctxfold::dispatch`).

fn main() -> std::process::ExitCode {
    ctxfold::dispatch::main()
}
