//! A test certificate authority (openssl), for the tests that speak TLS to
//! robotgate or an edge (tests/disguise.rs, tests/envoy.rs).

use std::path::PathBuf;
use std::process::Command;

/// A certificate authority and a certificate it signed for `shop.example`
/// and `localhost`, made with openssl.
pub struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    pub fn make() -> Certs {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let out = Command::new("openssl").args(args).current_dir(dir.path()).output().expect("openssl runs");
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(&["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=robotgate test CA"]
            .iter()
            .copied()
            .chain(["-keyout", "ca.key", "-out", "ca.pem"])
            .collect::<Vec<_>>());
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=shop.example",
            "-keyout",
            "key.pem",
            "-out",
            "leaf.csr",
        ]);
        std::fs::write(
            dir.path().join("leaf.ext"),
            "basicConstraints=critical,CA:FALSE\nsubjectAltName=DNS:shop.example,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        run(&[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
            "-out",
            "cert.pem",
        ]);
        Certs { dir }
    }

    /// A file of it: `ca.pem`, `cert.pem`, `key.pem`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}
