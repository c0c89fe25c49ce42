//! room-app: the app's start order (seed 000's app half) as a small CLI.
//! See docs/app.md.

use std::path::PathBuf;

use room_reference::app::{self, Plan, StartRequest};
use room_reference::automation::parse_agent;
use room_reference::core_client::CoreClient;
use serde_json::json;

const USAGE: &str =
    "Usage: room-app start --core URL --workspace ID --folder PATH --harness claude|codex
         [--clone URL | --upload DIR | --child PARENT --from DIR | --shared-child PARENT]
         [--prompt TEXT] [--request-id ID] [--attempts N]
Core's API token comes from ROOM_CORE_TOKEN or --token-file FILE, never the command line.
Prints {\"session\": …, \"project_copy\": bool, \"copy\": \"ready\" | \"failed: …\" | null}.
Exit 0; 1 when Core refused the start or the copy failed; 2 on bad usage.";

fn usage(problem: &str) -> ! {
    eprintln!("room-app: {problem}\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(("start", rest)) = args.split_first().map(|(a, r)| (a.as_str(), r)) else {
        usage("the only command is start");
    };
    let mut opts = std::collections::HashMap::new();
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let Some(name) = flag.strip_prefix("--") else {
            usage(&format!("unexpected {flag:?}"));
        };
        let Some(value) = it.next() else {
            usage(&format!("--{name} needs a value"));
        };
        if opts.insert(name.to_string(), value.clone()).is_some() {
            usage(&format!("--{name} is given twice"));
        }
    }
    let mut take = |k: &str| opts.remove(k);
    let need =
        |v: Option<String>, k: &str| v.unwrap_or_else(|| usage(&format!("--{k} is required")));
    let core_url = need(take("core"), "core");
    let workspace = need(take("workspace"), "workspace");
    let folder = PathBuf::from(need(take("folder"), "folder"));
    let harness = parse_agent(&need(take("harness"), "harness"))
        .unwrap_or_else(|| usage("--harness must be claude or codex"));
    let plan = match (
        take("clone"),
        take("upload"),
        take("child"),
        take("from"),
        take("shared-child"),
    ) {
        (None, None, None, None, None) => Plan::Blank,
        (Some(url), None, None, None, None) => Plan::Clone { url },
        (None, Some(from), None, None, None) => Plan::Upload { from: from.into() },
        (None, None, Some(parent), Some(from), None) => Plan::Child {
            parent,
            from: from.into(),
        },
        (None, None, None, None, Some(parent)) => Plan::SharedChild { parent },
        _ => usage("give one of --clone, --upload, --child with --from, --shared-child"),
    };
    let prompt = take("prompt");
    let request_id = take("request-id");
    let attempts = take("attempts")
        .map(|a| {
            a.parse()
                .unwrap_or_else(|_| usage("--attempts must be a number"))
        })
        .unwrap_or(3);
    let token = match (take("token-file"), std::env::var("ROOM_CORE_TOKEN")) {
        (Some(f), _) => std::fs::read_to_string(&f)
            .map(|t| t.trim().to_string())
            .unwrap_or_else(|e| usage(&format!("cannot read {f}: {e}"))),
        (None, Ok(t)) if !t.is_empty() => t,
        _ => usage("set ROOM_CORE_TOKEN or --token-file"),
    };
    if let Some(k) = opts.keys().next() {
        usage(&format!("unknown option --{k}"));
    }
    let core = CoreClient::new(&core_url, &token);
    let req = StartRequest {
        workspace,
        folder,
        harness,
        prompt,
        request_id,
        plan,
    };
    match app::start(&core, &req, attempts) {
        Ok(started) => {
            let copy = match &started.copy {
                None => json!(null),
                Some(Ok(())) => json!("ready"),
                Some(Err(reason)) => json!(app::failed_mark(reason)),
            };
            println!(
                "{}",
                json!({"session": started.session, "project_copy": started.project_copy, "copy": copy})
            );
            std::process::exit(i32::from(matches!(started.copy, Some(Err(_)))));
        }
        Err(e) => {
            eprintln!("room-app: {e}");
            std::process::exit(1);
        }
    }
}
