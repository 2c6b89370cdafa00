//! TLS client configuration: rustls with the ring provider, the system's roots plus
//! `--cacert`, or no verification at all with `--insecure`.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::{Error, Repr};

/// How to trust the server.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (internal targets with self-signed certificates).
    pub insecure: bool,
    /// Extra CA certificates (PEM) to trust.
    pub cacert: Option<PathBuf>,
    /// Speak HTTP/3: the handshake offers ALPN `h3` alone and goes over QUIC (UDP) to the
    /// same address and port ([`crate::http3`]).
    pub http3: bool,
}

impl TlsOptions {
    /// A rustls config; ALPN offers h2 then http/1.1 unless `http1_only` (h3 alone with
    /// [`TlsOptions::http3`]).
    pub fn client_config(&self, http1_only: bool) -> Result<Option<Arc<ClientConfig>>, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(Repr::TlsConfig)?;
        let mut config = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnything(provider)))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(self.roots()?)
                .with_no_client_auth()
        };
        config.alpn_protocols = if http1_only {
            vec![b"http/1.1".to_vec()]
        } else if self.http3 {
            vec![crate::http3::ALPN.to_vec()]
        } else {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        };
        Ok(Some(Arc::new(config)))
    }

    fn roots(&self) -> Result<RootCertStore, Error> {
        let mut roots = RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = &self.cacert {
            let bad = |message: String| Repr::CaCert {
                path: path.clone(),
                message,
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect())
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad(
                    "no PEM certificates in the file (-----BEGIN CERTIFICATE----- blocks)".into(),
                )
                .into());
            }
            for c in certs {
                roots.add(c).map_err(|e| bad(e.to_string()))?;
            }
        }
        Ok(roots)
    }
}

/// `--insecure`: checks signatures are well-formed but trusts any certificate.
#[derive(Debug)]
struct AcceptAnything(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The same trust, offering only HTTP/1.1: for connections that speak HTTP/1.1 whatever the
/// server prefers (event streams read by our parser, WebSocket upgrades).
pub(crate) fn http1_only(config: &Option<Arc<ClientConfig>>) -> Option<Arc<ClientConfig>> {
    config.as_ref().map(|c| {
        let mut c = (**c).clone();
        c.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(c)
    })
}
