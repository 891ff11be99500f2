"""A TLS server context whose certificate follows ``tls.crt``/``tls.key`` on disk.

Mounted Secrets and cert-manager renewals replace the files in place. The files are polled;
when their content changes, the new pair is first loaded into a scratch context (so a
half-written or mismatched pair is refused and the old certificate stays), then into the
live context. ``SSLContext.load_cert_chain`` on the live context only affects handshakes
that start afterwards, so connections and requests in flight are untouched. The pair is
copied to a private directory before loading, because both loads must read the same bytes
even if the mounted files change again in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("jobgate.tls")

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"


class CertificateError(Exception):
    """The serving certificate or key cannot be used."""


def server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    return context


@dataclass(frozen=True)
class LoadedCertificate:
    digest: str
    not_after: datetime.datetime


class ReloadingCertificate:
    def __init__(
        self,
        tls_dir: Path,
        *,
        on_change: Callable[[LoadedCertificate | None, bool], None] | None = None,
    ) -> None:
        self.tls_dir = tls_dir
        self.context = server_context()
        self.current: LoadedCertificate | None = None
        self._on_change = on_change
        self._scratch = Path(tempfile.mkdtemp(prefix="jobgate-tls-"))

    @property
    def cert_path(self) -> Path:
        return self.tls_dir / CERT_FILE

    @property
    def key_path(self) -> Path:
        return self.tls_dir / KEY_FILE

    def _read_pair(self) -> tuple[bytes, bytes]:
        try:
            return self.cert_path.read_bytes(), self.key_path.read_bytes()
        except OSError as exc:
            raise CertificateError(f"cannot read {exc.filename}: {exc.strerror}") from None

    def load(self) -> bool:
        """Load the pair if its content changed; True when a new certificate is now served."""
        cert, key = self._read_pair()
        digest = hashlib.sha256(cert + b"\0" + key).hexdigest()
        if self.current is not None and digest == self.current.digest:
            return False
        cert_copy, key_copy = self._scratch / CERT_FILE, self._scratch / KEY_FILE
        cert_copy.write_bytes(cert)
        key_copy.touch(mode=0o600)
        key_copy.write_bytes(key)
        try:
            server_context().load_cert_chain(cert_copy, key_copy)
        except (ssl.SSLError, ValueError) as exc:
            raise CertificateError(f"{self.cert_path} and {self.key_path} are not a usable pair: {exc}") from None
        self.context.load_cert_chain(cert_copy, key_copy)
        self.current = LoadedCertificate(digest, _not_after(cert))
        return True

    def check(self) -> None:
        """One poll: reload on change, keep the old certificate on any problem."""
        try:
            changed = self.load()
        except CertificateError as exc:
            log.warning("keeping the current serving certificate: %s", exc)
            if self._on_change:
                self._on_change(self.current, False)
            return
        loaded = self.current
        if changed and loaded is not None:  # load() sets current whenever it returns True
            log.info("serving certificate loaded from %s (valid until %s)", self.cert_path, loaded.not_after)
            if self._on_change:
                self._on_change(loaded, True)

    async def watch(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.check()

    def close(self) -> None:
        for name in (CERT_FILE, KEY_FILE):
            with contextlib.suppress(OSError):
                (self._scratch / name).unlink()
        with contextlib.suppress(OSError):
            self._scratch.rmdir()


def _not_after(cert_pem: bytes) -> datetime.datetime:
    from cryptography import x509

    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc
