"""resolve_image against a real registry (Debian's docker-registry) holding images pushed with skopeo: the digests
are those of the bytes the registry serves, per platform; the token flow runs against a local token endpoint."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from local_registry import OCI_INDEX, OCI_MANIFEST, LocalRegistry, local_registry, push_image
from registry_token import token_issuer

from gpufleet.sources.http import SourceError
from gpufleet.sources.registry import parse_reference, resolve_image

READ_AT = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[LocalRegistry]:
    with local_registry(tmp_path / "registry") as running:
        yield running


def test_a_single_arch_tag_resolves_to_the_digest_of_the_bytes_the_registry_serves(
        registry: LocalRegistry, tmp_path: Path) -> None:
    pushed = push_image(registry, tmp_path, "nfd/node-feature-discovery", "v0.19.0", ["linux/amd64"])
    fact = resolve_image(pushed.reference, now=READ_AT)
    assert fact.digest == pushed.digest  # sha256 of `skopeo inspect --raw`
    assert fact.media_type == OCI_MANIFEST
    assert fact.platforms == {"linux/amd64": pushed.digest}
    assert fact.source == f"http://{registry.host}/v2/nfd/node-feature-discovery/manifests/v0.19.0"
    assert fact.read_at == READ_AT


def test_a_multi_arch_index_records_each_platforms_manifest_digest(registry: LocalRegistry, tmp_path: Path) -> None:
    pushed = push_image(registry, tmp_path, "nvidia/driver", "580.95.05-ubuntu24.04", ["linux/amd64", "linux/arm64"])
    fact = resolve_image(pushed.reference, ["linux/amd64", "linux/arm64"])
    assert fact.digest == pushed.digest
    assert fact.media_type == OCI_INDEX
    assert fact.platforms == pushed.platforms
    assert fact.platforms["linux/amd64"] != fact.platforms["linux/arm64"]
    assert fact.read_at.tzinfo is not None


def test_a_platform_without_a_variant_takes_the_one_manifest_of_its_architecture(
        registry: LocalRegistry, tmp_path: Path) -> None:
    pushed = push_image(registry, tmp_path, "mellanox/doca-driver", "v1", ["linux/amd64", "linux/arm64/v8"])
    fact = resolve_image(pushed.reference, ["linux/arm64", "linux/arm64/v8"])
    assert fact.platforms == {"linux/arm64": pushed.platforms["linux/arm64/v8"],
                              "linux/arm64/v8": pushed.platforms["linux/arm64/v8"]}


def test_a_platform_the_index_lacks_fails_naming_those_it_has(registry: LocalRegistry, tmp_path: Path) -> None:
    pushed = push_image(registry, tmp_path, "nvidia/gpu-operator", "v26.3.3", ["linux/amd64", "linux/arm64"])
    with pytest.raises(SourceError) as failed:
        resolve_image(pushed.reference, ["linux/amd64", "linux/ppc64le"])
    message = str(failed.value)
    assert "platform linux/ppc64le" in message
    assert "the index has: linux/amd64, linux/arm64" in message
    assert f"http://{registry.host}/v2/nvidia/gpu-operator/manifests/v26.3.3" in message


def test_a_single_manifest_for_another_platform_fails_naming_its_platform(
        registry: LocalRegistry, tmp_path: Path) -> None:
    pushed = push_image(registry, tmp_path, "eks/efa-device-plugin", "v0.5.20", ["linux/amd64"])
    with pytest.raises(SourceError, match="a single-platform image for linux/amd64, not linux/arm64"):
        resolve_image(pushed.reference, ["linux/amd64", "linux/arm64"])


def test_an_unknown_tag_fails_naming_the_tag_and_the_repository(registry: LocalRegistry, tmp_path: Path) -> None:
    push_image(registry, tmp_path, "nvidia/driver", "580.95.05-ubuntu24.04", ["linux/amd64"])
    with pytest.raises(SourceError) as failed:
        resolve_image(f"{registry.host}/nvidia/driver:580.95.05-ubuntu22.04")
    message = str(failed.value)
    assert f"tag '580.95.05-ubuntu22.04' is not in repository {registry.host}/nvidia/driver" in message
    assert "MANIFEST_UNKNOWN" in message  # the registry's own error code


def test_an_unknown_repository_fails_naming_it(registry: LocalRegistry) -> None:
    with pytest.raises(SourceError, match=f"tag 'v1' is not in repository {registry.host}/nvidia/absent "):
        resolve_image(f"{registry.host}/nvidia/absent:v1")


def test_an_unreachable_registry_fails_naming_the_url(tmp_path: Path) -> None:
    with local_registry(tmp_path / "gone") as stopped:
        host = stopped.host
    with pytest.raises(SourceError, match=f"http://{host}/v2/nvidia/driver/manifests/v1: cannot be read"):
        resolve_image(f"{host}/nvidia/driver:v1")


@pytest.mark.parametrize("token_field", ["token", "access_token"])
def test_a_registry_asking_for_a_bearer_token_is_read_with_an_anonymous_one(tmp_path: Path, token_field: str) -> None:
    with token_issuer(tmp_path, token_field=token_field) as issuer, \
            local_registry(tmp_path / "registry", auth=issuer.registry_auth()) as registry:
        pushed = push_image(registry, tmp_path, "nvidia/k8s-device-plugin", "v0.20.0", ["linux/amd64"])
        with pytest.raises(urllib.error.HTTPError) as unauthenticated:  # the registry does ask for a token
            urllib.request.urlopen(f"http://{registry.host}/v2/nvidia/k8s-device-plugin/manifests/v0.20.0")
        assert unauthenticated.value.code == 401
        issuer.requests.clear()
        fact = resolve_image(pushed.reference)
    assert fact.digest == pushed.digest
    assert fact.platforms == {"linux/amd64": pushed.digest}
    # one token for the manifest and the config blob, asked for pull only, for the registry's service
    assert issuer.requests == [{"service": [issuer.service], "scope": ["repository:nvidia/k8s-device-plugin:pull"]}]


def test_a_token_endpoint_that_refuses_fails_naming_it(tmp_path: Path) -> None:
    with token_issuer(tmp_path) as issuer, \
            local_registry(tmp_path / "registry", auth=issuer.registry_auth()) as registry:
        pushed = push_image(registry, tmp_path, "nvidia/private", "v1", ["linux/amd64"])
        issuer.refuse = True
        with pytest.raises(SourceError) as failed:
            resolve_image(pushed.reference)
    message = str(failed.value)
    assert message.startswith(f"{issuer.realm}?service={issuer.service}&scope=repository%3Anvidia%2Fprivate%3Apull")
    assert "HTTP 401" in message
    assert "refused an anonymous token" in message


@pytest.mark.parametrize("reference", ["nvidia/driver:580", "nvcr.io/nvidia/driver", "ubuntu:24.04",
                                       "nvcr.io/nvidia/driver@sha256:" + "0" * 64])
def test_a_reference_without_registry_or_tag_is_refused(reference: str) -> None:
    with pytest.raises(SourceError, match=reference.split("@")[0]):
        resolve_image(reference)


@pytest.mark.parametrize(("reference", "api"), [
    ("nvcr.io/nvidia/driver:580.95.05-ubuntu24.04", "https://nvcr.io/v2/nvidia/driver"),
    ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/x:v1",
     "https://602401143452.dkr.ecr.us-west-2.amazonaws.com/v2/eks/x"),
    ("registry.example:5000/team/app:1.0", "https://registry.example:5000/v2/team/app"),
    ("localhost:5000/app:1.0", "http://localhost:5000/v2/app"),
    ("[::1]:5000/app:1.0", "http://[::1]:5000/v2/app"),
    ("127.0.0.1:5000/a/b/c:v2", "http://127.0.0.1:5000/v2/a/b/c"),
])
def test_only_loopback_registries_are_read_over_plain_http(reference: str, api: str) -> None:
    assert parse_reference(reference).api == api


class ChangingProxy(BaseHTTPRequestHandler):
    """A proxy in front of the registry that adds a byte to each body and passes the registry's headers on."""

    upstream = ""

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
        request = urllib.request.Request(f"{self.upstream}{self.path}", headers={"Accept": self.headers["Accept"]})
        with urllib.request.urlopen(request) as answer:  # noqa: S310 (the loopback registry of this test)
            body = answer.read() + b"\n"
            self.send_response(answer.status)
            for name in ("Content-Type", "Docker-Content-Digest"):
                self.send_header(name, answer.headers[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_bytes_that_differ_from_the_registrys_digest_fail(registry: LocalRegistry, tmp_path: Path) -> None:
    pushed = push_image(registry, tmp_path, "nvidia/driver", "v1", ["linux/amd64"])
    handler = type("Proxy", (ChangingProxy,), {"upstream": f"http://{registry.host}"})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with pytest.raises(SourceError) as failed:
            resolve_image(f"127.0.0.1:{proxy.server_address[1]}/nvidia/driver:v1")
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert f"the registry names digest {pushed.digest} but the manifest's bytes hash to sha256:" in str(failed.value)
