//! room-cli run against a service's agent socket the way a loop's check
//! script runs it.

use std::process::Command;

use crate::service::Service;
use crate::shell::{quote, Out};

/// A loop ID of the right shape.
pub const LOOP_ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

impl Service {
    /// Runs room-cli the way a loop's check script does:
    /// `env CLOUDROOM_LOOP=<marker> sh -c 'env -i ROOM_CORE_SOCKET=… room-cli …'`,
    /// so the marker is only on the parent shell. `None`: no marker anywhere.
    pub fn script(&self, marker: Option<&str>, args: &[&str]) -> Out {
        let inner = format!(
            "env -i ROOM_CORE_SOCKET={} {} {}",
            quote(&self.socket().to_string_lossy()),
            quote(&self.room_cli().to_string_lossy()),
            args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
        );
        let mut cmd = match marker {
            Some(m) => {
                let mut c = Command::new("env");
                c.arg(format!("CLOUDROOM_LOOP={m}")).arg("sh");
                c
            }
            None => Command::new("sh"),
        };
        cmd.arg("-c")
            .arg(inner)
            .env_remove("CLOUDROOM_LOOP")
            .stdin(std::process::Stdio::null());
        cmd.output().expect("run sh").into()
    }
}
