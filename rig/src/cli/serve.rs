//! `sinkhole serve [RESULTS_DIR]`: the results browser
//! ([`sinkhole_rig::serve`]) until Ctrl-C. The address is printed on stdout
//! once the socket listens (with `--port 0`, the port chosen).
use std::io::Write as _;
use std::net::SocketAddr;

use anyhow::anyhow;

use super::args::ServeArgs;
use super::{bad, progress, Failure};

pub async fn run(a: ServeArgs) -> Result<(), Failure> {
    if !a.dir.is_dir() {
        return Err(bad(anyhow!("{}: no such results directory", a.dir.display())));
    }
    if !a.bind.is_loopback() {
        progress(&format!(
            "warning: listening on {}, not loopback: anyone who can reach this host reads the results",
            a.bind
        ));
    }
    let addr = SocketAddr::new(a.bind, a.port);
    let dir = a.dir.clone();
    sinkhole_rig::serve::serve(&a.dir, addr, |bound| {
        println!("serving {} at http://{bound}/", dir.display());
        let _ = std::io::stdout().flush();
    })
    .await
    .map_err(|e| {
        // A port taken or not ours to bind is the user's choice to change.
        if e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::AddrInUse
                        | std::io::ErrorKind::AddrNotAvailable
                        | std::io::ErrorKind::PermissionDenied
                )
            })
        }) {
            bad(e)
        } else {
            Failure::Failed(e)
        }
    })
}
