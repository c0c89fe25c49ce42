//! The workspace's binaries (room-core, room-cli, room-website, …) for the
//! programs here that start them: the demo and this crate's tests.
//!
//! Cargo builds only the binaries of the package it runs, and room-core's
//! belong to another package. So when cargo ran this program (`CARGO` is
//! set) they are built first, in its profile and into its target folder,
//! which does nothing when they are fresh; otherwise they must already be
//! there (`cargo build --release --bins`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the binaries could not be had.
pub type Error = Box<dyn std::error::Error>;

/// The profile folder the running program was built into
/// (`target/release` for `target/release/room-demo`, `target/debug` for
/// a test at `target/debug/deps/loop_e2e-…`), where cargo puts every
/// binary of the workspace.
pub fn profile_dir() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().ok_or("the running program has no folder")?;
    Ok(match dir.file_name() {
        Some(name) if name == "deps" => dir.parent().unwrap_or(dir),
        _ => dir,
    }
    .to_path_buf())
}

/// The paths of `names` in [`profile_dir`], built by cargo first when cargo
/// ran this program.
pub fn binaries<const N: usize>(names: [&str; N]) -> Result<[PathBuf; N], Error> {
    let dir = profile_dir()?;
    if let Some(cargo) = std::env::var_os("CARGO") {
        build(Path::new(&cargo), &dir, &names)?;
    }
    let paths = names.map(|name| dir.join(name));
    if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
        return Err(format!(
            "{} is not built; run `cargo build --release --bins` first",
            missing.display()
        )
        .into());
    }
    Ok(paths)
}

/// `cargo build` of `names` in the profile of `dir`, into the target folder
/// that holds `dir`, so the binaries land beside the running program.
fn build(cargo: &Path, dir: &Path, names: &[&str]) -> Result<(), Error> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("the reference crate has no workspace")?
        .join("Cargo.toml");
    let target_dir = dir.parent().ok_or("the profile folder has no parent")?;
    let mut cmd = Command::new(cargo);
    // What cargo set for the running program is not the user's environment:
    // build scripts that watch a variable (ring's, `CARGO_MANIFEST_DIR`)
    // would rebuild the whole chain above them here and again in the next
    // plain `cargo build`.
    for (name, _) in std::env::vars_os() {
        let set_by_cargo = name.to_str().is_some_and(|n| {
            n.starts_with("CARGO_PKG_")
                || n.starts_with("CARGO_MANIFEST_")
                || [
                    "CARGO_CRATE_NAME",
                    "CARGO_BIN_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "OUT_DIR",
                ]
                .contains(&n)
        });
        if set_by_cargo {
            cmd.env_remove(name);
        }
    }
    cmd.args(["build", "--quiet", "--workspace"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    for name in names {
        cmd.args(["--bin", name]);
    }
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd.status()?;
    if !status.success() {
        return Err(format!("building {} failed ({status})", names.join(", ")).into());
    }
    Ok(())
}
