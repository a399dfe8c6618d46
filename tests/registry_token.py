"""A local token endpoint for Docker's registry token authentication (what `auth: token` in a distribution registry's
config points at): GET /token?service=&scope= answers a JWT signed with a key whose self-signed certificate is the
registry's rootcertbundle, the certificate in the JWT header's x5c, as distribution's token verifier reads it.

Anyone gets the actions the scope asks for (an anonymous endpoint, as public registries run theirs for pulls); with
`refuse` every request is answered 401. Every request's query is kept in `requests`.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

SERVICE = "gpufleet-test-registry"
ISSUER = "gpufleet-test-token-issuer"


@dataclass
class TokenIssuer:
    realm: str
    rootcertbundle: Path
    service: str = SERVICE
    issuer: str = ISSUER
    refuse: bool = False
    token_field: str = "token"  # Docker Hub answers both `token` and `access_token`; readers must take either
    requests: list[dict[str, list[str]]] = field(default_factory=list)

    def registry_auth(self) -> dict[str, Any]:
        """The `auth:` section of a distribution registry's config that trusts this issuer."""
        return {"token": {"realm": self.realm, "service": self.service, "issuer": self.issuer,
                          "rootcertbundle": str(self.rootcertbundle)}}


def signing_identity(directory: Path) -> tuple[rsa.RSAPrivateKey, bytes]:
    """A fresh RSA key and its self-signed certificate (DER), the certificate also written as a PEM bundle."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
    now = datetime.now(UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - timedelta(hours=1)).not_valid_after(now + timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    (directory / "token-root.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return key, certificate.public_bytes(serialization.Encoding.DER)


def encoded(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).rstrip(b"=").decode()


def signed_jwt(key: rsa.RSAPrivateKey, certificate_der: bytes, claims: dict[str, Any]) -> str:
    """RS256 JWS; x5c carries the certificate (standard base64 DER, RFC 7515 4.1.6)."""
    header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(certificate_der).decode()]}
    signing_input = f"{encoded(json.dumps(header).encode())}.{encoded(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{encoded(signature)}"


def granted_access(scopes: list[str]) -> list[dict[str, Any]]:
    """`repository:NAME:pull,push` scopes as the JWT's access claim."""
    access = []
    for scope in scopes:
        kind, _, rest = scope.partition(":")
        name, _, actions = rest.rpartition(":")
        access.append({"type": kind, "name": name, "actions": actions.split(",")})
    return access


@contextmanager
def token_issuer(directory: Path, refuse: bool = False, token_field: str = "token") -> Iterator[TokenIssuer]:
    """A running token endpoint on 127.0.0.1 (a free port), stopped on exit."""
    key, certificate_der = signing_identity(directory)
    issuer: TokenIssuer

    class TokenEndpoint(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            issuer.requests.append(query)
            if issuer.refuse:
                self._answer(401, {"details": "anonymous access refused"})
                return
            now = int(datetime.now(UTC).timestamp())
            claims = {"iss": issuer.issuer, "sub": "", "aud": query.get("service", [""])[0], "iat": now,
                      "nbf": now - 60, "exp": now + 600, "jti": secrets.token_hex(8),
                      "access": granted_access(query.get("scope", []))}
            self._answer(200, {issuer.token_field: signed_jwt(key, certificate_der, claims), "expires_in": 600})

        def _answer(self, status: int, document: dict[str, Any]) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
    issuer = TokenIssuer(f"http://127.0.0.1:{server.server_address[1]}/token", directory / "token-root.pem",
                         refuse=refuse, token_field=token_field)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
