//! The JobManager's REST API, as the subject uses it (shapes as Flink 2.2.1 answers; the
//! same on 2.0.1 and 1.20.3 for these endpoints): `/overview` for readiness, jar upload and
//! run (`WebSubmissionExtension`, in flink-runtime-web), a job's status, checkpoints and
//! exceptions.
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context};
use serde_json::{json, Value};

/// A client of one JobManager's REST endpoint (loopback, plain HTTP).
#[derive(Debug, Clone)]
pub struct Rest {
    base: String,
    http: reqwest::Client,
}

/// `/overview`: what a ready cluster shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overview {
    pub taskmanagers: u64,
    pub slots_total: u64,
}

/// A job's state and how many of its tasks run (`state` is RUNNING while tasks still wait
/// for slots: only the tasks tell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    pub state: String,
    pub tasks_running: u64,
    pub tasks_total: u64,
}

impl JobStatus {
    pub fn all_running(&self) -> bool {
        self.state == "RUNNING" && self.tasks_total > 0 && self.tasks_running == self.tasks_total
    }
    pub fn terminal(&self) -> bool {
        matches!(self.state.as_str(), "FINISHED" | "FAILED" | "CANCELED")
    }
}

/// What a run request is for.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub args: Vec<String>,
    pub parallelism: u32,
    /// A retained checkpoint (`…/chk-N`) to start from.
    pub savepoint: Option<String>,
}

impl Rest {
    pub fn new(port: u16) -> Rest {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(2))
            .no_proxy()
            .build()
            .expect("a plain HTTP client builds");
        Rest { base: format!("http://127.0.0.1:{port}"), http }
    }

    async fn get(&self, path: &str, timeout: Duration) -> anyhow::Result<Value> {
        let r = self.http.get(format!("{}{path}", self.base)).timeout(timeout).send().await?;
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status.is_success(), "GET {path}: {status}: {body}");
        Ok(body)
    }

    pub async fn overview(&self) -> anyhow::Result<Overview> {
        let v = self.get("/overview", Duration::from_secs(2)).await?;
        Ok(Overview {
            taskmanagers: v["taskmanagers"].as_u64().unwrap_or(0),
            slots_total: v["slots-total"].as_u64().unwrap_or(0),
        })
    }

    /// `POST /jars/upload` (multipart, part `jarfile`): the jar's id on the JobManager.
    pub async fn upload(&self, jar: &Path) -> anyhow::Result<String> {
        let bytes = tokio::fs::read(jar).await.with_context(|| format!("reading {}", jar.display()))?;
        let name = jar.file_name().and_then(|n| n.to_str()).unwrap_or("job.jar").to_string();
        let part = reqwest::multipart::Part::bytes(bytes).file_name(name).mime_str("application/x-java-archive")?;
        let form = reqwest::multipart::Form::new().part("jarfile", part);
        let r = self.http.post(format!("{}/jars/upload", self.base)).multipart(form).send().await?;
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status.is_success(), "POST /jars/upload: {status}: {body}");
        let file = body["filename"].as_str().ok_or_else(|| anyhow!("POST /jars/upload: no filename in {body}"))?;
        Ok(file.rsplit('/').next().unwrap_or(file).to_string())
    }

    /// `POST /jars/:id/run`: the new job's id. A failing `main` answers 400 with the whole
    /// stack trace in one string: its `Caused by:` lines say why.
    pub async fn run(&self, jar_id: &str, req: &RunRequest) -> anyhow::Result<String> {
        let mut body = json!({
            "entryClass": sinkhole_install::flink::JOB_MAIN_CLASS,
            "programArgsList": req.args,
            "parallelism": req.parallelism,
        });
        if let Some(s) = &req.savepoint {
            body["savepointPath"] = json!(s);
            body["allowNonRestoredState"] = json!(true);
        }
        let r = self.http.post(format!("{}/jars/{jar_id}/run", self.base)).json(&body).send().await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(anyhow!("POST /jars/{jar_id}/run: {status}: {}", run_error(&v)));
        }
        v["jobid"].as_str().map(str::to_string).ok_or_else(|| anyhow!("POST /jars/:id/run: no jobid in {v}"))
    }

    pub async fn job(&self, job: &str) -> anyhow::Result<JobStatus> {
        let v = self.get(&format!("/jobs/{job}"), Duration::from_secs(2)).await?;
        Ok(job_status(&v))
    }

    /// `/jobs/:id/checkpoints` as Flink answers it (counts, latest, history with ids,
    /// statuses, durations), kept as evidence.
    pub async fn checkpoints(&self, job: &str) -> anyhow::Result<Value> {
        self.get(&format!("/jobs/{job}/checkpoints"), Duration::from_secs(5)).await
    }

    /// The newest root exception of the job, for a failure's reason.
    pub async fn root_exception(&self, job: &str) -> Option<String> {
        let v = self.get(&format!("/jobs/{job}/exceptions"), Duration::from_secs(5)).await.ok()?;
        root_cause(&v["exceptionHistory"]["entries"][0])
    }
}

/// A failed job's exception as a reason: its class, then the deepest `Caused by:` of its
/// stack trace (Flink's root exception is usually the restart strategy's JobException, which
/// says only that recovery was suppressed; the cause says why the job failed).
pub fn root_cause(entry: &Value) -> Option<String> {
    let name = entry["exceptionName"].as_str()?;
    let trace = entry["stacktrace"].as_str().unwrap_or("");
    Some(match causes(trace).last() {
        Some(c) => {
            let c: String = c.trim_start_matches("Caused by:").trim().chars().take(300).collect();
            format!("{name}, caused by {c}")
        }
        None => name.to_string(),
    })
}

/// The `Caused by:` lines of a Java stack trace, outermost first, trimmed.
fn causes(trace: &str) -> Vec<&str> {
    trace.lines().map(str::trim).filter(|l| l.starts_with("Caused by:")).collect()
}

/// The `Caused by:` lines of a failed run request (or its errors as they are).
pub fn run_error(v: &Value) -> String {
    let text: Vec<String> = v["errors"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e.as_str()).map(str::to_string).collect())
        .unwrap_or_default();
    let joined = text.join("\n");
    let found = causes(&joined);
    if found.is_empty() {
        joined.lines().next().unwrap_or("no error text").to_string()
    } else {
        found.join("; ")
    }
}

/// A `/jobs/:id` answer read.
pub fn job_status(v: &Value) -> JobStatus {
    let mut running = 0;
    let mut total = 0;
    for vertex in v["vertices"].as_array().into_iter().flatten() {
        total += vertex["parallelism"].as_u64().unwrap_or(0);
        running += vertex["tasks"]["RUNNING"].as_u64().unwrap_or(0);
    }
    JobStatus {
        state: v["state"].as_str().unwrap_or("UNKNOWN").to_string(),
        tasks_running: running,
        tasks_total: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_up_only_when_its_tasks_run() {
        let v = json!({"jid": "j", "state": "RUNNING", "vertices": [
            {"id": "v", "parallelism": 2, "status": "CREATED", "tasks": {"RUNNING": 0, "SCHEDULED": 2}}]});
        let s = job_status(&v);
        assert_eq!(s, JobStatus { state: "RUNNING".into(), tasks_running: 0, tasks_total: 2 });
        assert!(!s.all_running() && !s.terminal());
        let v = json!({"state": "RUNNING", "vertices": [{"parallelism": 2, "tasks": {"RUNNING": 2}}]});
        assert!(job_status(&v).all_running());
        assert!(job_status(&json!({"state": "FINISHED", "vertices": []})).terminal());
    }

    #[test]
    fn a_failed_job_names_its_deepest_cause() {
        let e = json!({"exceptionName": "org.apache.flink.runtime.JobException",
            "stacktrace": "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy\n\tat a\nCaused by: java.lang.IllegalStateException: Failed to commit KafkaCommittable{producerId=0, epoch=32766}\n\tat b\nCaused by: org.apache.kafka.common.errors.InvalidPidMappingException: The producer attempted to use a producer id which is not currently assigned to its transactional id.\n\tat c"});
        assert_eq!(
            root_cause(&e).unwrap(),
            "org.apache.flink.runtime.JobException, caused by org.apache.kafka.common.errors.InvalidPidMappingException: The producer attempted to use a producer id which is not currently assigned to its transactional id."
        );
        assert_eq!(root_cause(&json!({"exceptionName": "X"})).unwrap(), "X");
        assert_eq!(root_cause(&json!({})), None);
    }

    #[test]
    fn a_failed_run_says_what_caused_it() {
        let v = json!({"errors": ["org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n\tat x\nCaused by: java.lang.IllegalArgumentException: --naming: INCREMENTING or POOLING, got 'X'\n\tat y"]});
        assert_eq!(
            run_error(&v),
            "Caused by: java.lang.IllegalArgumentException: --naming: INCREMENTING or POOLING, got 'X'"
        );
        assert_eq!(run_error(&json!({"errors": ["plain"]})), "plain");
    }
}
