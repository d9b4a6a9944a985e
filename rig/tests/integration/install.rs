//! Installing Kafka from Maven Central with the machine's `mvn`, into a fresh
//! `SINKHOLE_CACHE` (the Maven local repository stays the user's ~/.m2, so after the
//! first run anywhere this is quick).
//!
//! One test function: the cache location comes from the environment, which is set
//! once here before anything else runs in this test binary.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sinkhole_install::{DistSource, InstallError, InstallOutcome};

fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sinkhole-install-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn install_from_maven_central() {
    let cache = fresh_dir("cache");
    std::env::set_var(sinkhole_install::CACHE_ENV, &cache);
    std::env::remove_var(sinkhole_install::MAVEN_REPO_ENV);
    assert_eq!(sinkhole_install::cache_root(), cache);

    // 1. a fresh install
    let mut lines = Vec::new();
    let started = Instant::now();
    let outcome = sinkhole_install::install("4.4.0", &mut |l| {
        eprintln!("setup: {l}");
        lines.push(l.to_string());
    })
    .expect("install 4.4.0");
    eprintln!("install 4.4.0 took {:.1} s", started.elapsed().as_secs_f64());
    let InstallOutcome::Installed { dist, jars, .. } = outcome else {
        panic!("a fresh cache must install: {outcome:?}");
    };
    assert!(jars > 50, "only {jars} jars");
    assert!(lines.iter().any(|l| l.starts_with("resolving org.apache.kafka:kafka_2.13:4.4.0 with Maven")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("copied ") && l.contains(" jars (")), "{lines:?}");
    assert_eq!(dist.version, "4.4.0");
    assert_eq!(dist.source, DistSource::Cache);
    assert_eq!(dist.home, cache.join("kafka").join("4.4.0"));
    assert!(dist.lib_dir.join("kafka_2.13-4.4.0.jar").is_file());
    // Kafka 4.x uses slf4j-api 1.7, so the slf4j 1.x binding, and only that one
    let lib = |name: &str| dist.lib_dir.join(name.replace("{}", sinkhole_install::LOG4J_VERSION));
    assert!(dist.lib_dir.join("slf4j-api-1.7.36.jar").is_file());
    assert!(lib("log4j-slf4j-impl-{}.jar").is_file());
    assert!(lib("log4j-core-{}.jar").is_file() && lib("log4j-api-{}.jar").is_file());
    assert!(!lib("log4j-slf4j2-impl-{}.jar").exists());
    assert!(dist.home.join(sinkhole_install::MARKER_FILE).is_file());
    let log4j = std::fs::read_to_string(dist.log4j_config()).expect("log4j2 config");
    assert!(log4j.contains("SYSTEM_OUT") && log4j.contains("kafka.request.logger"));
    assert!(cache.join("kafka").join("4.4.0.install.log").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(cache.join("kafka"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-") || n.contains(".old-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary directories left: {leftovers:?}");

    // 2. the classpath runs Kafka's storage tool
    let out = Command::new(dist.java())
        .arg(format!("-Dlog4j2.configurationFile={}", dist.log4j_config().display()))
        .args(["-cp", &dist.classpath(), sinkhole_install::STORAGE_TOOL_CLASS, "random-uuid"])
        .output()
        .expect("run java");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // the id is the last line (log4j may log a line before it)
    let id = stdout.lines().last().unwrap_or("").trim();
    assert_eq!(id.len(), 22, "not a Kafka uuid: {stdout:?}");
    assert!(sinkhole_install::is_kafka_uuid(id), "{id}");

    // 3. a second install does nothing, quickly
    let started = Instant::now();
    let again = sinkhole_install::install("4.4.0", &mut |l| eprintln!("setup: {l}")).expect("second install");
    let took = started.elapsed();
    eprintln!("already-installed check took {took:?}");
    assert!(matches!(&again, InstallOutcome::AlreadyInstalled { dist: d } if *d == dist), "{again:?}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_eq!(sinkhole_install::installed_versions(), ["4.4.0"]);
    assert_eq!(sinkhole_install::resolve(Some("4.4.0"), None).unwrap(), dist);
    assert_eq!(sinkhole_install::ensure("4.4.0", &mut |_| {}).unwrap(), dist);

    // 4. a damaged install is noticed by resolve and repaired by install; two concurrent
    //    installs of the same version take turns, and the second reuses the first's work
    let clients = std::fs::read_dir(&dist.lib_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("kafka-clients-"))
        .unwrap();
    std::fs::remove_file(&clients).unwrap();
    let err = sinkhole_install::resolve(Some("4.4.0"), None).unwrap_err();
    assert!(matches!(err, InstallError::NotInstalled { incomplete: Some(_), .. }), "{err}");
    eprintln!("damaged: {err}");
    let racers: Vec<_> = (0..2)
        .map(|i| std::thread::spawn(move || sinkhole_install::install("4.4.0", &mut |l| eprintln!("setup[{i}]: {l}"))))
        .collect();
    let outcomes: Vec<InstallOutcome> = racers.into_iter().map(|t| t.join().unwrap().expect("reinstall")).collect();
    let installed = outcomes.iter().filter(|o| matches!(o, InstallOutcome::Installed { .. })).count();
    assert_eq!(installed, 1, "{outcomes:?}");
    assert!(clients.is_file());
    assert_eq!(sinkhole_install::resolve(Some("4.4.0"), None).unwrap(), dist);

    // 5. a version that Maven Central does not have
    let err = sinkhole_install::install("9.9.9", &mut |l| eprintln!("setup: {l}")).unwrap_err();
    eprintln!("9.9.9: {err}");
    assert!(matches!(err, InstallError::UnknownVersion { .. }), "{err}");
    assert!(err.to_string().starts_with(
        "Kafka 9.9.9 is not published on Maven Central as org.apache.kafka:kafka_2.13; released 4.x versions look like 4.0.2 or 4.4.0"
    ));
    assert!(err.is_bad_input());
    assert!(!cache.join("kafka").join("9.9.9").exists());
    assert!(cache.join("kafka").join("9.9.9.install.log").is_file());
    let err = sinkhole_install::resolve(Some("9.9.9"), None).unwrap_err();
    assert!(err.to_string().contains("run `sinkhole setup --kafka 9.9.9`"), "{err}");

    // 6. KAFKA_HOME wins over the version, and is checked
    let home = fresh_dir("kafka-home");
    for jar in ["kafka_2.13-4.5.0-SNAPSHOT.jar", "kafka-clients-4.5.0-SNAPSHOT.jar"] {
        touch(&home.join("libs").join(jar));
    }
    let fake = sinkhole_install::resolve(Some("4.4.0"), Some(&home)).expect("resolve KAFKA_HOME");
    assert_eq!(fake.version, "4.5.0-SNAPSHOT");
    assert_eq!(fake.source, DistSource::KafkaHome);
    assert_eq!(fake.lib_dir, home.join("libs"));
    assert!(fake.log4j_config().starts_with(&cache), "{}", fake.log4j_config().display());
    touch(&home.join("config").join("log4j2.yaml"));
    assert_eq!(fake.log4j_config(), home.join("config").join("log4j2.yaml"));
    let empty = fresh_dir("empty-home");
    let err = sinkhole_install::resolve(None, Some(&empty)).unwrap_err();
    assert!(matches!(err, InstallError::KafkaHomeNoLibs { .. }), "{err}");
    std::fs::create_dir_all(empty.join("libs")).unwrap();
    let err = sinkhole_install::resolve(None, Some(&empty)).unwrap_err();
    assert!(matches!(err, InstallError::KafkaHomeNoKafkaJar { .. }), "{err}");

    for d in [&cache, &home, &empty] {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"").unwrap();
}
