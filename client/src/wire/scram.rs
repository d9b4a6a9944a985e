//! SCRAM (RFC 5802; SHA-256 per RFC 7677, SHA-512 as Kafka adds it): the client side of the
//! exchange, as Kafka's `ScramSaslClient` runs it over SaslAuthenticate frames.
//!
//! 1. client-first: `n,,n=<user>,r=<client nonce>` (no channel binding: `n,,`, base64 `biws`);
//! 2. server-first: `r=<client nonce + server nonce>,s=<salt>,i=<iterations>`;
//! 3. client-final: `c=biws,r=<nonce>,p=<ClientKey XOR ClientSignature>`, where
//!    `SaltedPassword = PBKDF2(password, salt, i)`, `ClientKey = HMAC(SaltedPassword, "Client
//!    Key")`, `StoredKey = H(ClientKey)`, `ClientSignature = HMAC(StoredKey, AuthMessage)` and
//!    `AuthMessage` is client-first-bare, server-first and client-final-without-proof joined by
//!    commas;
//! 4. server-final: `v=<HMAC(HMAC(SaltedPassword, "Server Key"), AuthMessage)>` — checked, so a
//!    broker that does not know the password is not believed — or `e=<error>`.
//!
//! Like `ScramSaslClient`, the server's nonce must extend the client's and the iteration count
//! must be at least the mechanism's minimum (4096, `ScramMechanism.minIterations`); user names
//! are escaped as RFC 5802 says ([`sasl_name`]).
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};

use super::security::Mechanism;

/// `ScramMechanism.minIterations` of both Kafka SCRAM mechanisms.
pub const MIN_ITERATIONS: u32 = 4096;

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha512,
}

impl Hash {
    pub fn of(m: Mechanism) -> Option<Hash> {
        match m {
            Mechanism::ScramSha256 => Some(Hash::Sha256),
            Mechanism::ScramSha512 => Some(Hash::Sha512),
            Mechanism::Plain => None,
        }
    }
    fn hmac(self) -> hmac::Algorithm {
        match self {
            Hash::Sha256 => hmac::HMAC_SHA256,
            Hash::Sha512 => hmac::HMAC_SHA512,
        }
    }
    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Hash::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Hash::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }
    fn digest(self) -> &'static digest::Algorithm {
        match self {
            Hash::Sha256 => &digest::SHA256,
            Hash::Sha512 => &digest::SHA512,
        }
    }
    fn len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha512 => 64,
        }
    }
}

/// RFC 5802's saslname: `=` as `=3D`, `,` as `=2C` (Kafka's `ScramFormatter.saslName`).
pub fn sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

/// A fresh client nonce: 24 random bytes, base64 (printable, no comma, as RFC 5802 wants).
pub fn new_nonce() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 24];
    // SystemRandom only fails when the OS has no randomness at all.
    ring::rand::SystemRandom::new().fill(&mut b).expect("the OS random source");
    B64.encode(b)
}

/// `SaltedPassword = Hi(password, salt, iterations)` (PBKDF2 with the mechanism's HMAC): what a
/// broker stores for a user (Kafka's `ScramFormatter.saltedPassword`), and what
/// AlterUserScramCredentials carries to set one.
pub fn salted_password(hash: Hash, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut out = vec![0u8; hash.len()];
    let n = std::num::NonZeroU32::new(iterations.max(1)).expect("at least one iteration");
    pbkdf2::derive(hash.pbkdf2(), n, salt, password.as_bytes(), &mut out);
    out
}

/// One client's SCRAM exchange.
#[derive(Debug)]
pub struct ScramClient {
    hash: Hash,
    nonce: String,
    first_bare: String,
    password: String,
    /// The server signature the final message must carry.
    expect_server: Option<Vec<u8>>,
}

impl ScramClient {
    pub fn new(hash: Hash, user: &str, password: &str, nonce: &str) -> ScramClient {
        ScramClient {
            hash,
            nonce: nonce.to_string(),
            first_bare: format!("n={},r={nonce}", sasl_name(user)),
            password: password.to_string(),
            expect_server: None,
        }
    }

    /// client-first-message.
    pub fn first(&self) -> String {
        format!("n,,{}", self.first_bare)
    }

    /// client-final-message, from the server-first-message.
    pub fn reply(&mut self, server_first: &str) -> Result<String, String> {
        let attr = |k: &str| server_first.split(',').find_map(|a| a.strip_prefix(k).and_then(|v| v.strip_prefix('=')));
        if let Some(e) = server_first.strip_prefix("e=") {
            return Err(format!("the broker refused: {e}"));
        }
        let nonce = attr("r").ok_or("server-first-message without a nonce")?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the server nonce does not extend the client's".into());
        }
        let salt = B64.decode(attr("s").ok_or("server-first-message without a salt")?).map_err(|e| e.to_string())?;
        let iterations: u32 =
            attr("i").ok_or("server-first-message without iterations")?.parse().map_err(|_| "bad iteration count")?;
        if iterations < MIN_ITERATIONS {
            return Err(format!("{iterations} iterations is below the minimum {MIN_ITERATIONS}"));
        }
        let salted = salted_password(self.hash, &self.password, &salt, iterations);
        let salted_key = hmac::Key::new(self.hash.hmac(), &salted);
        let client_key = hmac::sign(&salted_key, b"Client Key");
        let stored_key = digest::digest(self.hash.digest(), client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.first_bare);
        let client_sig = hmac::sign(&hmac::Key::new(self.hash.hmac(), stored_key.as_ref()), auth_message.as_bytes());
        let proof: Vec<u8> = client_key.as_ref().iter().zip(client_sig.as_ref()).map(|(a, b)| a ^ b).collect();
        let server_key = hmac::sign(&salted_key, b"Server Key");
        let server_sig = hmac::sign(&hmac::Key::new(self.hash.hmac(), server_key.as_ref()), auth_message.as_bytes());
        self.expect_server = Some(server_sig.as_ref().to_vec());
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Checks the server-final-message.
    pub fn verify(&self, server_final: &str) -> Result<(), String> {
        if let Some(e) = server_final.strip_prefix("e=") {
            return Err(format!("the broker refused: {e}"));
        }
        let v = server_final.split(',').find_map(|a| a.strip_prefix("v=")).ok_or("server-final-message without v=")?;
        let got = B64.decode(v).map_err(|e| e.to_string())?;
        match &self.expect_server {
            Some(want) if *want == got => Ok(()),
            Some(_) => Err("the broker's signature is wrong: it does not know the password".into()),
            None => Err("server-final-message before server-first".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 §3: user "user", password "pencil", 4096 iterations.
    #[test]
    fn rfc7677_sha256_test_vector() {
        let mut c = ScramClient::new(Hash::Sha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(c.first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let reply = c.reply(server_first).unwrap();
        assert_eq!(
            reply,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        c.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap();
        let e = c.verify("v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").unwrap_err();
        assert!(e.contains("does not know the password"), "{e}");
    }

    #[test]
    fn the_server_must_extend_the_nonce_and_iterate_enough() {
        let mut c = ScramClient::new(Hash::Sha512, "a=b,c", "pw", "abc");
        assert_eq!(c.first(), "n,,n=a=3Db=2Cc,r=abc");
        assert!(c.reply("r=xyz123,s=c2FsdA==,i=4096").unwrap_err().contains("does not extend"));
        assert!(c.reply("r=abc,s=c2FsdA==,i=4096").unwrap_err().contains("does not extend"));
        assert!(c.reply("r=abcdef,s=c2FsdA==,i=1024").unwrap_err().contains("below the minimum"));
        assert!(c.reply("e=invalid-proof").unwrap_err().contains("invalid-proof"));
        let reply = c.reply("r=abcdef,s=c2FsdA==,i=4096").unwrap();
        assert!(reply.starts_with("c=biws,r=abcdef,p="), "{reply}");
        // 64 bytes of proof for SHA-512.
        assert_eq!(B64.decode(reply.rsplit_once("p=").unwrap().1).unwrap().len(), 64);
        assert_ne!(new_nonce(), new_nonce());
    }
}
