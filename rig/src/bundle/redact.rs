//! What a bundle never carries: secrets. An external cluster's client settings, a broker's
//! `server.properties`, a scenario's settings — any `key=value` or `key: value` line whose key
//! names a password, a secret, a token, a key store or a JAAS configuration has its value
//! replaced, so the bundle can be attached to a public issue as it is.

/// The words that make a key a secret's (lower case; matched inside the key).
pub const SECRET_WORDS: &[&str] = &[
    "password",
    "secret",
    "token",
    "credential",
    "jaas",
    "keystore",
    "truststore",
    "ssl.key",
    "private",
    "apikey",
    "api.key",
];

/// The value written in place of a secret.
pub const REDACTED: &str = "[redacted by sinkhole bundle]";

fn secret_key(k: &str) -> bool {
    let k = k.trim().trim_start_matches("- ").to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| k.contains(w))
}

/// `text` with every secret's value replaced, and how many were.
pub fn redact(text: &str) -> (String, usize) {
    let mut n = 0;
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let cut = [line.find('='), line.find(": ")].into_iter().flatten().min();
        match cut {
            Some(i) if !line.trim_start().starts_with('#') && secret_key(&line[..i]) => {
                let sep = if line[i..].starts_with('=') { "=" } else { ": " };
                out.push(format!("{}{sep}{REDACTED}", &line[..i]));
                n += 1;
            }
            _ => out.push(line.to_string()),
        }
    }
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    (s, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_go_and_everything_else_stays() {
        let props = "listeners=SASL_SSL://h:9092\nssl.keystore.password=hunter2\nsasl.jaas.config=org.x required password=\"p\";\n# password=commented\nlog.dirs=/d\n";
        let (r, n) = redact(props);
        assert_eq!(n, 2);
        assert!(!r.contains("hunter2") && !r.contains("required password"), "{r}");
        assert!(
            r.contains("listeners=SASL_SSL://h:9092")
                && r.contains("log.dirs=/d")
                && r.contains("# password=commented")
        );
        assert!(r.contains(&format!("ssl.keystore.password={REDACTED}")));
        let yaml = "cluster:\n  external:\n    client: {security.protocol: SSL}\n    sasl_password: s3cret\n";
        let (y, n) = redact(yaml);
        assert_eq!(n, 1);
        assert!(!y.contains("s3cret") && y.contains("security.protocol: SSL"), "{y}");
    }
}
