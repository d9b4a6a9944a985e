//! Certificates for TLS tests, made by the `openssl` command in a test's own directory: a CA
//! (`<ca>.pem`, `<ca>.key`) and leaf certificates it signs for the names a test wants. Each
//! key is an EC P-256 key in PKCS#8 (what `openssl req -newkey` writes, and what Kafka's PEM
//! keystore, `ssl.keystore.type=PEM` in `DefaultSslEngineFactory`, reads); each certificate is
//! valid for two days: long enough for any test, short enough to be worthless when left behind.
use std::path::Path;
use std::process::Command;

/// Runs `openssl ARGS` in `dir`; panics with its stderr when it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl (apt-get install openssl)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A self-signed CA in `dir`: `<ca>.pem` (its certificate, subject `CN=<ca>`) and `<ca>.key`.
pub fn ca(dir: &Path, ca: &str) {
    let (key, pem, subj) = (format!("{ca}.key"), format!("{ca}.pem"), format!("/CN={ca}"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &pem,
            "-days",
            "2",
            "-subj",
            &subj,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// A leaf certificate in `dir` signed by the CA `ca` (made by [`ca`] in the same directory):
/// `<name>.pem` and `<name>.key`, subject `CN=<name>`, for the subject alternative names `san`
/// (`DNS:localhost,IP:127.0.0.1`, as openssl's `subjectAltName` writes them).
pub fn leaf(dir: &Path, ca: &str, name: &str, san: &str) {
    let (key, csr, pem, ext) =
        (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"), format!("{name}.ext"));
    let subj = format!("/CN={name}");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subj,
        ],
    );
    std::fs::write(dir.join(&ext), format!("subjectAltName={san}\nbasicConstraints=CA:FALSE\n")).unwrap();
    let (ca_pem, ca_key) = (format!("{ca}.pem"), format!("{ca}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            &ext,
        ],
    );
}
