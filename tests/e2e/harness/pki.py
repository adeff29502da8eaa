"""The control plane's certificates and service-account key, made anew for each run.

One CA signs the API server's serving certificate (for 127.0.0.1 and the in-cluster names) and
the admin client certificate, whose organization `system:masters` is what kubeadm gives its
admin.conf; the components and the tests' admin client use it. RBAC still decides for every
other identity (the smoke test's ServiceAccount among them). ECDSA P-256 keys: quick to make,
and accepted by kube-apiserver for TLS and for signing service-account tokens (ES256).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_key: Path
    service_account_public_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    return path


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _certificate(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: list[x509.ObjectIdentifier] | None = None,
    names: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(directory: Path) -> Pki:
    """Writes a CA, the serving and admin certificates and the service-account key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("gpu-pool-e2e-ca")
    ca = _certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    serving_key = _key()
    serving = _certificate(
        _name("kube-apiserver"),
        serving_key,
        ca_name,
        ca_key,
        usage=[ExtendedKeyUsageOID.SERVER_AUTH],
        names=[
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes.default.svc"),
        ],
    )
    admin_key = _key()
    admin = _certificate(
        _name("kubernetes-admin", "system:masters"),
        admin_key,
        ca_name,
        ca_key,
        usage=[ExtendedKeyUsageOID.CLIENT_AUTH],
    )
    account_key = _key()
    public = directory / "sa.pub"
    public.write_bytes(
        account_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(
        ca_cert=_write_cert(directory / "ca.crt", ca),
        serving_cert=_write_cert(directory / "apiserver.crt", serving),
        serving_key=_write_key(directory / "apiserver.key", serving_key),
        admin_cert=_write_cert(directory / "admin.crt", admin),
        admin_key=_write_key(directory / "admin.key", admin_key),
        service_account_key=_write_key(directory / "sa.key", account_key),
        service_account_public_key=public,
    )
