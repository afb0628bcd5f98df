"""The emulator's own certificate authority and serving certificate, for HTTPS.

A real API server speaks TLS, and what that costs a client (the handshake, then
encrypting and decrypting every byte of every list, watch and write) is part of what a
scheduler pays per pod. The realistic mode serves over HTTPS with a serving certificate
signed by a CA made at start-up, and the kubeconfig it writes carries that CA
(``certificate-authority-data``), as kubeadm's admin.conf does. The keys are RSA 2048,
kubeadm's default, so the handshake costs what it costs against a kubeadm cluster.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_BITS = 2048
VALID_DAYS = 7


@dataclass(frozen=True)
class ServingCertificates:
    """A CA (its PEM is what clients trust) and a certificate it signed for the server."""

    authority_pem: bytes
    certificate_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """The server's TLS context (the standard library loads keys from files only)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory(prefix="volsched-emulator-tls-") as scratch:
            certificate = Path(scratch) / "tls.crt"
            key = Path(scratch) / "tls.key"
            certificate.write_bytes(self.certificate_pem + self.authority_pem)
            key.write_bytes(self.key_pem)
            key.chmod(0o600)
            context.load_cert_chain(certificate, key)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_serving_certificates(host: str = "127.0.0.1") -> ServingCertificates:
    """A fresh CA (``kubernetes``, as kubeadm names it) and a serving certificate for
    ``host`` and ``localhost``."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    ca_name = _name("kubernetes")
    authority = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.DNSName("kubernetes")]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    serving = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificates(
        authority_pem=authority.public_bytes(serialization.Encoding.PEM),
        certificate_pem=serving.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
    )
