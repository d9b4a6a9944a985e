use std::process::ExitStatus;

use super::maven::*;
use super::workdir::*;
use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sinkhole-install-test-{}-{}-{name}", std::process::id(), unique()));
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn touch(path: &Path, bytes: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, vec![b'x'; bytes]).unwrap();
}

// ---- parse_versions

#[test]
fn parse_versions_keeps_order_and_dedups() {
    assert_eq!(parse_versions("4.4.0,4.0.2").unwrap(), ["4.4.0", "4.0.2"]);
    assert_eq!(parse_versions(" 4.4.0 , 4.0.2,4.4.0 ").unwrap(), ["4.4.0", "4.0.2"]);
    assert_eq!(parse_versions("4.0.2 4.4.0").unwrap(), ["4.0.2", "4.4.0"]);
    assert_eq!(parse_versions("4.4.0,").unwrap(), ["4.4.0"]);
    assert_eq!(parse_versions("4.1.0-SNAPSHOT,3.9.1-rc1,0.8.2.2").unwrap(), ["4.1.0-SNAPSHOT", "3.9.1-rc1", "0.8.2.2"]);
}

#[test]
fn parse_versions_names_the_bad_item() {
    let msg = |s: &str| parse_versions(s).unwrap_err().to_string();
    let m = msg("4.4.0,4.x.2");
    assert!(m.starts_with("invalid Kafka version \"4.x.2\":"), "{m}");
    let m = msg("4.4.0,v4.0.2");
    assert!(m.contains("\"v4.0.2\"") && m.contains("without the leading \"v\": 4.0.2"), "{m}");
    assert!(msg("4").contains("\"4\": needs 2 to 4"));
    assert!(msg("4.0.0.0.1").contains("needs 2 to 4"));
    assert!(msg("4..0").contains("\"4..0\""));
    assert!(msg("4.0.0-").contains("-suffix"));
    assert!(msg("4.0.0-rc/1").contains("\"4.0.0-rc/1\""));
    assert!(msg("../4.0.0").contains("\"../4.0.0\""));
    assert_eq!(
            msg("4.4.0,,4.0.2"),
            "invalid Kafka version \"4.4.0,,4.0.2\": item 2 of the list is empty (expected digits and dots with an optional -suffix, e.g. 4.4.0 or 4.1.0-SNAPSHOT)"
        );
    let m = msg("");
    assert_eq!(m, "no Kafka version in \"\" (expected a comma-separated list such as 4.4.0,4.0.2)");
    assert!(matches!(parse_versions("  "), Err(InstallError::EmptyVersionList { .. })));
    assert!(matches!(parse_versions(" , "), Err(InstallError::InvalidVersion { .. })));
}

#[test]
fn versions_sort_numerically() {
    let mut v = vec!["4.10.0", "4.4.0", "4.0.2", "4.4.0-SNAPSHOT", "3.9.1"];
    v.sort_by_key(|v| version_key(v));
    assert_eq!(v, ["3.9.1", "4.0.2", "4.4.0-SNAPSHOT", "4.4.0", "4.10.0"]);
}

// ---- mvn output classification; fixtures are trimmed real output of Maven 3.8.7

/// `mvn -B -U dependency:copy-dependencies` with kafka_2.13 and kafka-tools 9.9.9.
const MVN_UNKNOWN_VERSION: &str = "\
[INFO] Scanning for projects...
[INFO] --------------------------------[ pom ]---------------------------------
[WARNING] The POM for org.apache.kafka:kafka_2.13:jar:9.9.9 is missing, no dependency information available
[WARNING] The POM for org.apache.kafka:kafka-tools:jar:9.9.9 is missing, no dependency information available
[INFO] BUILD FAILURE
[INFO] ------------------------------------------------------------------------
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:9.9.9, org.apache.kafka:kafka-tools:jar:9.9.9: Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2) -> [Help 1]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
[ERROR] Re-run Maven using the -X switch to enable full debug logging.
[ERROR] 
[ERROR] For more information about the errors and possible solutions, please read the following articles:
[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/DependencyResolutionException
";

/// The same, run again without -U: Maven reports its cached "not found".
const MVN_UNKNOWN_VERSION_CACHED: &str = "\
[WARNING] The POM for org.apache.kafka:kafka_2.13:jar:9.9.9 is missing, no dependency information available
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:9.9.9, org.apache.kafka:kafka-tools:jar:9.9.9: org.apache.kafka:kafka_2.13:jar:9.9.9 was not found in https://repo.maven.apache.org/maven2 during a previous attempt. This failure was cached in the local repository and resolution is not reattempted until the update interval of central has elapsed or updates are forced -> [Help 1]
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
";

/// 4.0.2 not in the local repository, settings.xml mirror `central` → http://127.0.0.1:9/.
const MVN_CONNECTION_REFUSED: &str = "\
[INFO] Building kafka-dist 1
[INFO] --------------------------------[ pom ]---------------------------------
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: Failed to collect dependencies at org.apache.kafka:kafka_2.13:jar:4.0.2: Failed to read artifact descriptor for org.apache.kafka:kafka_2.13:jar:4.0.2: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.0.2 from/to central (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.pom: Connect to 127.0.0.1:9 [/127.0.0.1] failed: Connection refused -> [Help 1]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
";

/// The same with the mirror at https://repo.invalid/maven2.
const MVN_UNKNOWN_HOST: &str = "\
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: Failed to collect dependencies at org.apache.kafka:kafka_2.13:jar:4.0.2: Failed to read artifact descriptor for org.apache.kafka:kafka_2.13:jar:4.0.2: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.0.2 from/to central (https://repo.invalid/maven2): transfer failed for https://repo.invalid/maven2/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.pom: Unknown host repo.invalid: Name or service not known -> [Help 1]
";

/// `mvn -o` (or <offline>true</offline>) with 4.0.2 never downloaded.
const MVN_OFFLINE: &str = "\
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:4.0.2, org.apache.kafka:kafka-tools:jar:4.0.2: Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact org.apache.kafka:kafka_2.13:jar:4.0.2 has not been downloaded from it before. -> [Help 1]
[ERROR] 
";

/// An empty local repository and a dead mirror: not even the dependency plugin resolves.
const MVN_NO_PLUGIN: &str = "\
[WARNING] Could not transfer metadata org.apache.maven.plugins/maven-metadata.xml from/to dead (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/apache/maven/plugins/maven-metadata.xml
[WARNING] Could not transfer metadata org.codehaus.mojo/maven-metadata.xml from/to dead (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/codehaus/mojo/maven-metadata.xml
[WARNING] Failed to retrieve plugin descriptor for org.apache.maven.plugins:maven-clean-plugin:2.5: Plugin org.apache.maven.plugins:maven-clean-plugin:2.5 or one of its dependencies could not be resolved: Failed to read artifact descriptor for org.apache.maven.plugins:maven-clean-plugin:jar:2.5
[INFO] BUILD FAILURE
[ERROR] No plugin found for prefix 'dependency' in the current project and in the plugin groups [org.apache.maven.plugins, org.codehaus.mojo] available from the repositories [local (/tmp/emptyrepo), dead (http://127.0.0.1:9/)] -> [Help 1]
[ERROR] 
";

/// Something else: a broken pom.
const MVN_OTHER: &str = "\
[INFO] Scanning for projects...
[ERROR] [ERROR] Some problems were encountered while processing the POMs:
[FATAL] Non-parseable POM /tmp/mvbroken/pom.xml: Unrecognised tag: 'dependenc' (position: START_TAG seen ...<dependencies>\\n    <dependenc>... @9:16)  @ line 9, column 16
 @ 
[ERROR] The build could not read 1 project -> [Help 1]
[ERROR]   
[ERROR]   The project  (/tmp/mvbroken/pom.xml) has 1 error
[ERROR]     Non-parseable POM /tmp/mvbroken/pom.xml: Unrecognised tag: 'dependenc' (position: START_TAG seen ...<dependencies>\\n    <dependenc>... @9:16)  @ line 9, column 16 -> [Help 2]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
[ERROR] Re-run Maven using the -X switch to enable full debug logging.
[ERROR] 
[ERROR] For more information about the errors and possible solutions, please read the following articles:
[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/ProjectBuildingException
[ERROR] [Help 2] http://cwiki.apache.org/confluence/display/MAVEN/ModelParseException
";

#[test]
fn classifies_unknown_version() {
    assert_eq!(
            classify_mvn_output("9.9.9", MVN_UNKNOWN_VERSION),
            MvnFailure::UnknownVersion(
                "Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2)".into()
            )
        );
    match classify_mvn_output("9.9.9", MVN_UNKNOWN_VERSION_CACHED) {
        MvnFailure::UnknownVersion(line) => {
            assert!(line.starts_with("org.apache.kafka:kafka_2.13:jar:9.9.9 was not found in"), "{line}")
        }
        other => panic!("{other:?}"),
    }
    // the version must match: this output does not say 9.9.8 is missing
    assert_eq!(classify_mvn_output("9.9.8", MVN_UNKNOWN_VERSION), MvnFailure::Other);
}

#[test]
fn classifies_unreachable_repository() {
    let line = |out: &str| match classify_mvn_output("4.0.2", out) {
        MvnFailure::Unreachable(line) => line,
        other => panic!("{other:?} for {out}"),
    };
    assert_eq!(
            line(MVN_CONNECTION_REFUSED),
            "Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.0.2 from/to central (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.pom: Connect to 127.0.0.1:9 [/127.0.0.1] failed: Connection refused"
        );
    assert!(line(MVN_UNKNOWN_HOST).ends_with("Unknown host repo.invalid: Name or service not known"));
    assert!(
        line(MVN_OFFLINE).starts_with("Cannot access central (https://repo.maven.apache.org/maven2) in offline mode")
    );
    assert!(line(MVN_NO_PLUGIN)
        .starts_with("Could not transfer metadata org.codehaus.mojo/maven-metadata.xml from/to dead"));
}

#[test]
fn other_failures_keep_exit_code_and_tail() {
    assert_eq!(classify_mvn_output("4.4.0", MVN_OTHER), MvnFailure::Other);
    use std::os::unix::process::ExitStatusExt;
    let err =
        classify_failure("4.4.0", MVN_OTHER, ExitStatus::from_raw(1 << 8), Path::new("/c/kafka/4.4.0.install.log"));
    let msg = err.to_string();
    assert!(
        msg.starts_with("mvn failed (exit code 1) while resolving Kafka 4.4.0; last lines of its output:\n"),
        "{msg}"
    );
    assert!(msg.contains("Non-parseable POM"), "{msg}");
    assert!(!msg.contains("re-run Maven") && !msg.contains("cwiki"), "{msg}");
    assert!(msg.contains("  [ERROR] The build could not read 1 project -> [Help 1]\n"), "{msg}");
    assert!(msg.ends_with("full mvn log: /c/kafka/4.4.0.install.log"), "{msg}");
    let long: String = (0..40).map(|i| format!("[INFO] line {i}\n")).collect();
    let tail = tail_of(&long);
    assert_eq!(tail.lines().count(), TAIL_LINES);
    assert!(tail.ends_with("[INFO] line 39"));
}

#[test]
fn error_messages() {
    let log = PathBuf::from("/c/kafka/9.9.9.install.log");
    let e = classify_failure("9.9.9", MVN_UNKNOWN_VERSION, std::os::unix::process::ExitStatusExt::from_raw(256), &log);
    assert_eq!(
            e.to_string(),
            "Kafka 9.9.9 is not published on Maven Central as org.apache.kafka:kafka_2.13; released 4.x versions look like 4.0.2 or 4.4.0 (mvn: Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2); full log: /c/kafka/9.9.9.install.log)"
        );
    assert!(InstallError::MavenMissing.to_string().contains("apt-get install maven"));
    let e = InstallError::JavaMissing { detail: "JAVA_HOME is not set and there is no `java` on PATH".into() };
    assert!(e.to_string().contains("install a JDK 17+, e.g. apt-get install openjdk-17-jre-headless"));
}

#[test]
fn ansi_and_download_lines() {
    assert_eq!(strip_ansi("\u{1b}[0m\u{1b}[0m[INFO] x\u{1b}[1m"), "[INFO] x");
    assert_eq!(
            downloaded_file("Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.jar (6.6 MB at 12 MB/s)"),
            Some("kafka_2.13-4.0.2.jar")
        );
    assert_eq!(downloaded_file("[INFO] Downloading from central: https://x/y.pom"), None);
}

#[test]
fn java_version_parsing() {
    assert_eq!(
        parse_java_version("openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment"),
        Some(("17.0.15".into(), 17))
    );
    assert_eq!(parse_java_version("java version \"1.8.0_292\""), Some(("1.8.0_292".into(), 8)));
    assert_eq!(parse_java_version("openjdk version \"21\" 2023-09-19"), Some(("21".into(), 21)));
    assert_eq!(parse_java_version("garbage"), None);
}

// ---- KAFKA_HOME

#[test]
fn kafka_home_version_from_jar_names() {
    let v = |names: &[&str]| version_from_jar_names(names.iter().copied());
    assert_eq!(v(&["kafka_2.13-4.4.0.jar", "kafka-clients-4.4.0.jar"]).as_deref(), Some("4.4.0"));
    assert_eq!(
        v(&["kafka-clients-4.5.0-SNAPSHOT.jar", "kafka_2.13-4.5.0-SNAPSHOT-test.jar", "kafka_2.13-4.5.0-SNAPSHOT.jar"])
            .as_deref(),
        Some("4.5.0-SNAPSHOT")
    );
    assert_eq!(v(&["kafka-clients-4.1.1.jar", "kafka-clients-4.1.1-test.jar"]).as_deref(), Some("4.1.1"));
    assert_eq!(v(&["kafka-streams-4.4.0.jar", "kafka_2.13-4.4.0-sources.jar", "scala-library-2.13.18.jar"]), None);
}

#[test]
fn resolve_kafka_home() {
    let cache = scratch("cache");
    let home = scratch("home");
    for jar in ["kafka_2.13-4.5.0-SNAPSHOT.jar", "kafka-clients-4.5.0-SNAPSHOT.jar", "slf4j-api-1.7.36.jar"] {
        touch(&home.join("libs").join(jar), 0);
    }
    let dist = resolve_in(&cache, Some("4.4.0"), Some(&home)).unwrap();
    assert_eq!(dist.version, "4.5.0-SNAPSHOT");
    assert_eq!(dist.source, DistSource::KafkaHome);
    assert_eq!(dist.lib_dir, home.join("libs"));
    assert_eq!(dist.classpath(), format!("{}/libs/*", home.display()));
    // no config/log4j2.yaml: resolve generated one under the cache
    assert_eq!(fs::read_to_string(cache.join(KAFKA_HOME_LOG4J_FILE)).unwrap(), LOG4J2_XML);
    touch(&home.join("config").join("log4j2.yaml"), 10);
    assert_eq!(dist.log4j_config(), home.join("config").join("log4j2.yaml"));

    let err = resolve_in(&cache, None, Some(&cache)).unwrap_err();
    assert!(matches!(err, InstallError::KafkaHomeNoLibs { .. }), "{err}");
    assert!(err.to_string().contains("has no libs/ directory"), "{err}");
    fs::create_dir_all(cache.join("libs")).unwrap();
    touch(&cache.join("libs").join("kafka-streams-4.4.0.jar"), 0);
    let err = resolve_in(&cache, None, Some(&cache)).unwrap_err();
    assert!(matches!(err, InstallError::KafkaHomeNoKafkaJar { .. }), "{err}");
    let err = resolve_in(&cache, None, Some(&cache.join("nope"))).unwrap_err();
    assert!(matches!(err, InstallError::KafkaHomeNotFound { .. }), "{err}");
    let _ = fs::remove_dir_all(cache);
    let _ = fs::remove_dir_all(home);
}

// ---- cached installs and the marker

fn fake_install(cache: &Path, version: &str) -> PathBuf {
    let home = cache.join("kafka").join(version);
    let jars = vec![
        JarEntry { name: core_jar_name(version), size: 7 },
        JarEntry { name: "kafka-clients-x.jar".into(), size: 3 },
    ];
    for j in &jars {
        touch(&home.join("libs").join(&j.name), j.size as usize);
    }
    fs::write(home.join(LOG4J_CONFIG_FILE), LOG4J2_XML).unwrap();
    let marker = Marker {
        format: MARKER_FORMAT,
        version: version.into(),
        installed_at: format_utc(0),
        installed_at_unix: 0,
        artifacts: artifacts(version),
        slf4j_binding: None,
        log4j_config: LOG4J_CONFIG_FILE.into(),
        jars,
    };
    fs::write(home.join(MARKER_FILE), serde_json::to_vec(&marker).unwrap()).unwrap();
    home
}

#[test]
fn marker_validation() {
    let cache = scratch("marker");
    let home = fake_install(&cache, "4.4.0");
    assert!(check_install(&home, "4.4.0").is_ok());
    assert_eq!(check_install(&cache.join("kafka/4.0.2"), "4.0.2"), Err(Incomplete::Absent));
    // wrong version in the marker
    assert!(matches!(check_install(&home, "4.0.2"), Err(Incomplete::Broken(r)) if r.contains("for version 4.4.0")));
    // a truncated jar
    fs::write(home.join("libs/kafka-clients-x.jar"), b"x").unwrap();
    assert_eq!(
        check_install(&home, "4.4.0"),
        Err(Incomplete::Broken("libs/kafka-clients-x.jar has 1 bytes, expected 3".into()))
    );
    // a missing jar
    fs::remove_file(home.join("libs/kafka-clients-x.jar")).unwrap();
    assert_eq!(check_install(&home, "4.4.0"), Err(Incomplete::Broken("libs/kafka-clients-x.jar is missing".into())));
    // no marker
    let home = fake_install(&cache, "4.4.0");
    fs::remove_file(home.join(MARKER_FILE)).unwrap();
    assert_eq!(check_install(&home, "4.4.0"), Err(Incomplete::Broken(format!("{MARKER_FILE} is missing"))));
    // garbage marker
    fs::write(home.join(MARKER_FILE), b"{").unwrap();
    assert!(matches!(check_install(&home, "4.4.0"), Err(Incomplete::Broken(r)) if r.contains("not valid")));
    let _ = fs::remove_dir_all(cache);
}

#[test]
fn resolve_and_list_cached() {
    let cache = scratch("resolve");
    fake_install(&cache, "4.4.0");
    fake_install(&cache, "4.0.2");
    fake_install(&cache, "4.10.0");
    fs::create_dir_all(cache.join("kafka/.4.1.0.partial-1-2")).unwrap();
    fs::create_dir_all(cache.join("kafka/4.1.0/libs")).unwrap(); // incomplete
    assert_eq!(installed_versions_in(&cache), ["4.0.2", "4.4.0", "4.10.0"]);

    let dist = resolve_in(&cache, Some("4.4.0"), None).unwrap();
    assert_eq!(dist.source, DistSource::Cache);
    assert_eq!(dist.home, cache.join("kafka/4.4.0"));
    assert_eq!(dist.lib_dir, cache.join("kafka/4.4.0/libs"));
    assert_eq!(dist.log4j_config(), cache.join("kafka/4.4.0").join(LOG4J_CONFIG_FILE));

    let err = resolve_in(&cache, Some("4.3.1"), None).unwrap_err();
    assert_eq!(
            err.to_string(),
            format!(
                "Kafka 4.3.1 is not installed (looked in {}); run `sinkhole setup --kafka 4.3.1`, or point --kafka-home / KAFKA_HOME at a Kafka distribution",
                cache.join("kafka/4.3.1").display()
            )
        );
    let err = resolve_in(&cache, Some("4.1.0"), None).unwrap_err();
    assert!(
        err.to_string().contains(&format!("an earlier install there is incomplete, {MARKER_FILE} is missing")),
        "{err}"
    );
    let err = resolve_in(&cache, None, None).unwrap_err();
    assert_eq!(
            err.to_string(),
            "no Kafka version chosen: pass --kafka <version> (installed: 4.0.2, 4.4.0, 4.10.0) or --kafka-home <dir> / KAFKA_HOME"
        );
    let _ = fs::remove_dir_all(cache);
}

#[test]
fn stale_work_dirs_are_removed() {
    let cache = scratch("stale");
    let kafka = cache.join("kafka");
    // pid 0x7fff_fff0 does not exist; our own pid does
    let dead = kafka.join(format!(".4.4.0.partial-{}-1", 0x7fff_fff0));
    let alive = kafka.join(format!(".4.4.0.partial-{}-1", std::process::id()));
    let other = kafka.join(format!(".4.0.2.partial-{}-1", 0x7fff_fff0));
    for d in [&dead, &alive, &other] {
        fs::create_dir_all(d).unwrap();
    }
    remove_stale_work_dirs(&kafka, "4.4.0");
    assert!(!dead.exists() && alive.exists() && other.exists());
    let _ = fs::remove_dir_all(cache);
}

#[test]
fn slf4j_binding_follows_the_api() {
    let libs = scratch("slf4j");
    for jar in ["slf4j-api-1.7.36.jar", "log4j-slf4j-impl-2.24.3.jar", "log4j-slf4j2-impl-2.24.3.jar"] {
        touch(&libs.join(jar), 1);
    }
    assert_eq!(prune_slf4j_bindings(&libs).unwrap().as_deref(), Some("log4j-slf4j-impl-2.24.3.jar"));
    assert!(!libs.join("log4j-slf4j2-impl-2.24.3.jar").exists());
    fs::remove_file(libs.join("slf4j-api-1.7.36.jar")).unwrap();
    touch(&libs.join("slf4j-api-2.0.16.jar"), 1);
    touch(&libs.join("log4j-slf4j2-impl-2.24.3.jar"), 1);
    assert_eq!(prune_slf4j_bindings(&libs).unwrap().as_deref(), Some("log4j-slf4j2-impl-2.24.3.jar"));
    assert!(!libs.join("log4j-slf4j-impl-2.24.3.jar").exists());
    let _ = fs::remove_dir_all(libs);
}

#[test]
fn misc_formatting() {
    assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(format_utc(1_795_978_527), "2026-11-29T18:55:27Z");
    assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(format_mib(56_623_104), "54 MiB");
    assert_eq!(format_mib(1_572_864), "1.5 MiB");
    assert!(is_kafka_uuid("DLNpEUHCQbiOFtDM8Iga8A"));
    assert!(!is_kafka_uuid("DLNpEUHCQbiOFtDM8Iga8"));
    assert!(pom_xml("4.4.0")
        .contains("<groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>4.4.0</version>"));
}

#[test]
fn a_range_of_releases_is_the_known_ones_and_the_cached_ones_between() {
    let cache = std::env::temp_dir().join(format!("sinkhole-releases-{}", std::process::id()));
    std::fs::create_dir_all(cache.join("kafka")).unwrap();
    let all = releases_between_in(&cache, "4.0.0", "4.4.0").unwrap();
    assert_eq!(all.first().map(String::as_str), Some("4.0.0"));
    assert_eq!(all.last().map(String::as_str), Some("4.4.0"));
    assert_eq!(all.len(), KAFKA_RELEASES.len());
    assert_eq!(releases_between_in(&cache, "4.2.2", "4.3.1").unwrap(), ["4.2.2", "4.3.0", "4.3.1"]);
    assert!(releases_between_in(&cache, "4.4.0", "4.0.0").unwrap_err().to_string().contains("backwards"));
    assert!(releases_between_in(&cache, "x", "4.0.0").is_err());
    // Nothing released in the range: an empty list (bisect refuses it).
    assert!(releases_between_in(&cache, "4.4.1", "4.4.9").unwrap().is_empty());
    std::fs::remove_dir_all(&cache).unwrap();
}
