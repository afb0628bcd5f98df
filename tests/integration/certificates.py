"""A test CA, a client certificate it signed (CN = user, O = groups) and a serving
certificate it signed (for DNS names)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class _Authority:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _authority() -> _Authority:
    now = _now()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _Authority(key, certificate)


def _signed(
    authority: _Authority,
    subject: list[x509.NameAttribute],
    usage: x509.ObjectIdentifier,
    dns_names: list[str] | None = None,
) -> tuple[bytes, bytes]:
    """A certificate the authority signed, and its key, both PEM."""
    now = _now()
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(authority.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), False)
    )
    if dns_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name) for name in dns_names]), False
        )
    certificate = builder.sign(authority.key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def client_pair(directory: Path, user: str, group: str = "") -> tuple[Path, Path, Path]:
    authority = _authority()
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, user)]
    if group:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, group))
    certificate, key = _signed(authority, attributes, x509.ExtendedKeyUsageOID.CLIENT_AUTH)
    ca_path = directory / "ca.crt"
    cert_path = directory / "client.crt"
    key_path = directory / "client.key"
    ca_path.write_bytes(authority.pem)
    cert_path.write_bytes(certificate)
    key_path.write_bytes(key)
    return ca_path, cert_path, key_path


def serving_pair(dns_names: list[str]) -> dict[str, bytes]:
    """A serving certificate for ``dns_names`` as cert-manager writes it into a Secret:
    ``tls.crt``, ``tls.key`` and the CA that signed it, ``ca.crt``."""
    authority = _authority()
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]
    certificate, key = _signed(authority, subject, x509.ExtendedKeyUsageOID.SERVER_AUTH, dns_names)
    return {"tls.crt": certificate, "tls.key": key, "ca.crt": authority.pem}
