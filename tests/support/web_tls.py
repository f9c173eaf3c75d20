"""A loopback HTTPS server for web tests: a `PageServer` whose socket speaks TLS with a
self-signed certificate for 127.0.0.1, made by the `openssl` command (CI installs it), and the
SSL context a client needs to trust exactly that certificate.

    with TlsPageServer(tmp_path) as site:
        site.url("/a")  # https://127.0.0.1:PORT/a
        build_web(config, {}, tls=site.client_context())
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

from tests.support.web_servers import PageServer


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, valid two days; the certificate is its own CA."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the openssl command is needed to make a test certificate"
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            *("req", "-x509", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"),
            *("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-keyout", str(key), "-out", str(cert)),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
            *("-addext", "keyUsage=critical,digitalSignature,keyCertSign"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class TlsPageServer(PageServer):
    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.cert, key = self_signed(directory)
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(self.cert, key)
        # The handshake runs in the handler's thread, on its first read (not in accept).
        self._httpd.socket = server.wrap_socket(
            self._httpd.socket, server_side=True, do_handshake_on_connect=False
        )

    def __enter__(self) -> TlsPageServer:
        super().__enter__()
        return self

    def url(self, path: str = "/") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def client_context(self) -> ssl.SSLContext:
        """Trusts this server's certificate and nothing else."""
        return ssl.create_default_context(cafile=str(self.cert))
