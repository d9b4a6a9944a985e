//! The wire client's TLS against a local TLS listener: certificates made by `openssl` for the
//! test (a CA, a broker certificate for `localhost` and 127.0.0.1, one for another name, and a
//! second CA). The handshake succeeds with the right CA and name; an unknown issuer and a name
//! the certificate does not carry are refused as TLS errors (fatal, not retried), as Java's
//! `SslFactory` with endpoint identification `https` refuses them.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sinkhole_client::wire::security::{Protocol, ResolveSecurity, Security};
use sinkhole_client::wire::{Connection, WireError};
use sinkhole_testkit::tls::{ca, leaf};

/// A TLS listener serving `name`'s certificate; accepts and holds connections.
async fn listener(dir: &Path, name: &str) -> String {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join(format!("{name}.pem"))).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = l.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 64];
                    let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
                }
            });
        }
    });
    format!("{port}")
}

fn tls(ca_file: PathBuf) -> sinkhole_client::wire::security::Tls {
    let s = Security { protocol: Protocol::Ssl, ca_file: Some(ca_file), ..Security::default() };
    s.resolve().unwrap().tls.unwrap()
}

#[tokio::test]
async fn the_handshake_checks_the_ca_and_the_name() {
    let dir = std::env::temp_dir().join(format!("sinkhole-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    ca(&dir, "ca");
    ca(&dir, "other-ca");
    leaf(&dir, "ca", "broker", "DNS:localhost,IP:127.0.0.1");
    leaf(&dir, "ca", "elsewhere", "DNS:kafka.example");
    let t = Duration::from_secs(10);

    let port = listener(&dir, "broker").await;
    let good = tls(dir.join("ca.pem"));
    for host in ["127.0.0.1", "localhost"] {
        let c = Connection::connect_tls(&format!("{host}:{port}"), "t", t, &good).await;
        assert!(c.is_ok(), "{host}: {c:?}");
    }
    let wrong_ca = tls(dir.join("other-ca.pem"));
    let e = Connection::connect_tls(&format!("127.0.0.1:{port}"), "t", t, &wrong_ca).await.unwrap_err();
    assert!(matches!(&e, WireError::Tls { detail, .. } if detail.contains("UnknownIssuer")), "{e}");
    assert!(e.is_authentication_error(), "a refused certificate is not retried");

    let port = listener(&dir, "elsewhere").await;
    let e = Connection::connect_tls(&format!("127.0.0.1:{port}"), "t", t, &good).await.unwrap_err();
    assert!(matches!(&e, WireError::Tls { detail, .. } if detail.contains("not valid for name")), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
