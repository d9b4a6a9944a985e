//! Which connector jar the TaskManagers loaded: the run's proof that the jar it put on their
//! classpath (the released one, or a contributor's) is the one that ran.
use super::Loop;

impl Loop {
    /// Which connector jar the TaskManagers loaded KafkaSink from, against the one this run
    /// put on their classpath: `flink/provenance.json` and a note.
    pub(super) fn provenance(&self) -> anyhow::Result<()> {
        let expected = match &self.cfg.connector_jar {
            Some(j) => {
                (self.cluster.lib.join(j.path.file_name().unwrap_or_default()), j.sha256.clone(), "the contributor's")
            }
            None => {
                let sha = sinkhole_install::flink::sha256_file(&self.cfg.dist.connector_jar).unwrap_or_default();
                (
                    self.cluster.lib.join(self.cfg.dist.connector_jar.file_name().unwrap_or_default()),
                    sha,
                    "the released",
                )
            }
        };
        let sink = "org.apache.flink.connector.kafka.sink.KafkaSink";
        let loaded: Vec<_> = self.evidence.loaded.iter().filter(|l| l.class == sink).collect();
        // The JVM names a jar by its real path: the released one through lib/'s symlink.
        let real = std::fs::canonicalize(&expected.0).unwrap_or_else(|_| expected.0.clone());
        let proven = !loaded.is_empty()
            && loaded
                .iter()
                .all(|l| l.sha256 == expected.1 && l.jar.strip_prefix("file:") == Some(&*real.display().to_string()));
        let classpath = !self.evidence.classpath.is_empty() && self.evidence.classpath.values().all(|h| *h);
        let doc = serde_json::json!({
            "expected": {"jar": expected.0, "real_path": real, "sha256": expected.1, "which": expected.2,
                         "source": self.cfg.connector_jar.as_ref().map(|j| j.path.clone())},
            "loaded": self.evidence.loaded,
            "taskmanager_classpath_holds_it": self.evidence.classpath,
            "proven": proven && classpath,
        });
        std::fs::write(self.cfg.dir.flink_provenance(), serde_json::to_vec_pretty(&doc)?)?;
        self.note(format!(
            "connector provenance: {} jar {} (sha256 {}) {} (KafkaSink loaded from it by every subtask: {proven}; on every TaskManager's Classpath line: {classpath})",
            expected.2,
            expected.0.display(),
            expected.1,
            if proven && classpath { "was loaded" } else { "was NOT shown to be loaded" }
        ))?;
        self.progress(&format!("connector jar {} loaded: {}", expected.0.display(), proven && classpath));
        Ok(())
    }
}
