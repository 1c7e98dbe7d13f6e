"""A real SMTP server on loopback (aiosmtpd) for the smtp and django channels: it records each message it takes,
and can answer 4xx or 5xx, drop the connection after the message, require STARTTLS (a self-signed certificate)
and a login."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

USERNAME = "clinic"
PASSWORD = "smtp-password-0123456789"


@dataclass
class Taken:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = message_from_bytes(self.content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class Recorder:
    """aiosmtpd's handler: what to answer (None: accept), and every message taken."""

    taken: list[Taken] = field(default_factory=list)
    rcpt_reply: str | None = None
    data_reply: str | None = None
    drop_after_data: bool = False

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        if self.rcpt_reply:
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.data_reply:
            return self.data_reply
        self.taken.append(Taken(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content)))
        if self.drop_after_data:  # took the message, then the connection goes before the answer
            server.transport.close()
        return "250 Message accepted"


def _login(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USERNAME.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def smtp_server(*, tls_files: tuple[Path, Path] | None = None) -> Iterator[tuple[int, Recorder]]:
    """A server on 127.0.0.1: plain (a local relay), or with tls_files (cert, key) STARTTLS and a login required."""
    recorder = Recorder()
    kwargs: dict[str, Any] = {}
    if tls_files is not None:
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls_files)
        kwargs = {"tls_context": context, "require_starttls": True, "authenticator": _login, "auth_required": True}
    port = free_port()
    controller = Controller(recorder, hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    try:
        yield port, recorder
    finally:
        controller.stop()


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key; the certificate is its own CA (SSL_CERT_FILE)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path
