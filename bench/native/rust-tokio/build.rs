//! Records the compiler's and tokio's versions for the program's JSON output.
use std::path::Path;
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "rustc (unknown version)".to_string());
    println!("cargo:rustc-env=RUSTC_VERSION={}", version);

    // Cargo writes the lock file before it runs build scripts: the tokio it resolved is named there.
    let lock = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("Cargo.lock");
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut tokio = "unknown".to_string();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"tokio\"" {
            if let Some(v) = lines.next().and_then(|l| l.trim().strip_prefix("version = ")) {
                tokio = v.trim_matches('"').to_string();
            }
            break;
        }
    }
    println!("cargo:rustc-env=TOKIO_VERSION={}", tokio);
    println!("cargo:rerun-if-changed=Cargo.lock");
}
