//! The node-control adapter: a command template filled in for one node, run with `sh -c`
//! under a timeout, its exit and the last lines of its output kept (secrets taken out). The
//! rig owns the shell it starts (`procs`: it dies with the rig); what the command itself
//! starts on a remote machine (an SSH session's `systemctl`, a pod) is that machine's.
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use sinkhole_base::procs::{self, Lifetime};
use sinkhole_scenario::NodeTarget;

/// How many lines of a command's output are kept.
const OUTPUT_LINES: usize = 8;

/// `template` with `{id}`, `{host}` and `{pod}` filled in for node `id` (`{{`/`}}` are
/// braces). Values are shell-quoted unless they are plain names, so a host or pod name can
/// never run as a command of its own.
pub fn render(template: &str, id: i32, target: Option<&NodeTarget>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let (c, after) = (rest.as_bytes()[i] as char, &rest[i + 1..]);
        if after.starts_with(c) {
            out.push(c);
            rest = &after[1..];
            continue;
        }
        if c == '}' {
            return Err("a '}' without its '{'".into());
        }
        let end = after.find('}').ok_or("a '{' that is never closed")?;
        let name = &after[..end];
        let value = match name {
            "id" => id.to_string(),
            "host" => target
                .and_then(|t| t.host.clone())
                .ok_or_else(|| format!("node {id} has no host under external.nodes"))?,
            "pod" => target
                .and_then(|t| t.pod.clone())
                .ok_or_else(|| format!("node {id} has no pod under external.nodes"))?,
            other => return Err(format!("{{{other}}}: templates know {{id}}, {{host}} and {{pod}}")),
        };
        out.push_str(&quote(&value));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A value as one shell word.
fn quote(v: &str) -> String {
    if !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || "._-:/@=+,".contains(c)) {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', r"'\''"))
    }
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// None: killed at the timeout, or it could not be started (see `output`).
    pub exit: Option<i32>,
    pub ran_ms: u64,
    /// The last lines of stdout and stderr, redacted.
    pub output: String,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.exit == Some(0)
    }
}

/// Runs `command` with `sh -c` and waits for it, at most `timeout` (then its process group is
/// killed). `redact` is applied to everything kept of its output.
pub async fn run(command: &str, timeout: Duration, redact: &(dyn Fn(&str) -> String + Sync)) -> Ran {
    let started = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (child, id) = match procs::spawn(cmd, Lifetime::Owned) {
        Ok(c) => c,
        Err(e) => return Ran { exit: None, ran_ms: 0, output: redact(&format!("could not start sh: {e}")) },
    };
    let mut waiting = tokio::task::spawn_blocking(move || child.wait_with_output());
    let (out, timed_out) = match tokio::time::timeout(timeout, &mut waiting).await {
        Ok(r) => (r, false),
        Err(_) => {
            // Its pipes close when the group dies, and the wait returns.
            let _ = id.signal_group(Signal::SIGKILL, Duration::from_secs(5));
            (waiting.await, true)
        }
    };
    procs::forget(id.pid);
    let ran_ms = started.elapsed().as_millis() as u64;
    match out {
        Ok(Ok(o)) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let mut output = lines[lines.len().saturating_sub(OUTPUT_LINES)..].join("\n");
            if timed_out {
                output = format!(
                    "killed after {} ms (command_timeout_ms){}",
                    timeout.as_millis(),
                    if output.is_empty() { String::new() } else { format!("\n{output}") }
                );
            }
            Ran { exit: if timed_out { None } else { o.status.code() }, ran_ms, output: redact(&output) }
        }
        Ok(Err(e)) => Ran { exit: None, ran_ms, output: redact(&format!("waiting for the command: {e}")) },
        Err(e) => Ran { exit: None, ran_ms, output: format!("waiting for the command: {e}") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_filled_in_and_values_quoted() {
        let t = NodeTarget { host: Some("kafka-1.example".into()), pod: Some("my pod; rm -rf /".into()) };
        assert_eq!(
            render("ssh {host} sudo systemctl kill -s KILL kafka # {id}", 1, Some(&t)).unwrap(),
            "ssh kafka-1.example sudo systemctl kill -s KILL kafka # 1"
        );
        assert_eq!(render("kubectl delete pod {pod}", 1, Some(&t)).unwrap(), "kubectl delete pod 'my pod; rm -rf /'");
        assert_eq!(render("awk '{{print $1}}' {id}", 3, None).unwrap(), "awk '{print $1}' 3");
        assert_eq!(render("x {host}", 2, None).unwrap_err(), "node 2 has no host under external.nodes");
        assert!(render("x {nope}", 2, None).unwrap_err().contains("{nope}"));
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[tokio::test]
    async fn a_command_reports_its_exit_and_redacted_output_and_is_killed_at_its_timeout() {
        let redact = |s: &str| s.replace("s3cret", "***");
        let r = run("echo one; echo token=s3cret >&2; exit 3", Duration::from_secs(10), &redact).await;
        assert_eq!(r.exit, Some(3));
        assert_eq!(r.output, "one\ntoken=***");
        assert!(!r.ok());
        let r = run("sleep 30", Duration::from_millis(300), &redact).await;
        assert_eq!(r.exit, None);
        assert!(r.output.starts_with("killed after 300 ms"), "{}", r.output);
        assert!(r.ran_ms < 10_000, "{}", r.ran_ms);
        assert!(run("true", Duration::from_secs(5), &redact).await.ok());
    }
}
