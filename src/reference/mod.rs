//! Reference implementations of the seeds' other halves, so both features
//! run end to end in this repository:
//!
//! - seed 001's website half: a loop store, a script runner that runs each
//!   loop's check script as the agent account with `CLOUDROOM_LOOP` set,
//!   and the `POST /api/core/automation` and `/api/core/launch` routes that
//!   Core forwards room-cli calls to (binary `room-website`,
//!   docs/website.md);
//! - seed 000's app half: when a start sends `project_copy`, and the status
//!   file the app writes around its copy (binary `room-app`, docs/app.md).
//!
//! **The boundary.** The service never uses this module: no file under
//! `src/` outside `src/reference/` and the two binaries `room-website` and
//! `room-app` names it (the test below reads them to check). The reference
//! uses the service's crate only for small shared pieces (the atomic file
//! write, the clock, the harness names) and talks to Core only through its
//! HTTP API and agent socket, as the real website and app do.

pub mod account;
pub mod app;
pub mod app_copy;
pub mod app_routes;
pub mod automation;
pub mod core_client;
pub mod cron;
pub mod http;
pub mod launch;
pub mod loops;
pub mod records;
pub mod run;
pub mod runner;
pub mod script;
pub mod threads;
pub mod website;
pub mod website_config;
#[cfg(test)]
mod website_tests;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The files allowed to name this module.
    const ALLOWED: [&str; 3] = [
        "src/reference/",
        "src/bin/room-website.rs",
        "src/bin/room-app.rs",
    ];

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn no_service_module_uses_the_reference() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        rust_files(&root.join("src"), &mut files);
        let mut offenders = Vec::new();
        for file in files {
            let rel = file
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if ALLOWED.iter().any(|a| rel.starts_with(a)) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let uses = text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or_default();
                code.contains("reference::") || code.contains("mod reference")
            });
            // lib.rs declares it (`pub mod reference;`) and nothing else.
            let declares_only = rel == "src/lib.rs"
                && text
                    .lines()
                    .filter(|l| l.contains("reference"))
                    .all(|l| l.trim() == "pub mod reference;" || l.trim_start().starts_with("//"));
            if uses && !declares_only {
                offenders.push(rel);
            }
        }
        assert!(
            offenders.is_empty(),
            "service files use the reference implementations: {offenders:?}"
        );
    }
}
