"""A real OCI registry on 127.0.0.1 for tests, and images made here pushed into it with skopeo (no docker).

    with local_registry(tmp_path / "registry") as registry:
        image = push_image(registry, tmp_path / "work", "nvidia/driver", "580.95.05-ubuntu24.04",
                           ["linux/amd64", "linux/arm64"])
        image.reference   # 127.0.0.1:PORT/nvidia/driver:580.95.05-ubuntu24.04
        image.digest      # sha256 of the manifest bytes the registry serves (skopeo inspect --raw)
        image.platforms   # {"linux/amd64": "sha256:...", ...} as the pushed index lists them

The registry is Debian's docker-registry (distribution v2) with filesystem storage in the test's directory; pass
`auth` (e.g. registry_token.TokenIssuer.registry_auth()) for a registry that asks for bearer tokens. An image is an
OCI image layout written here (a one-file layer, a config naming os/architecture, a manifest per platform, an index
over them when there are several or `index=True`), copied with `skopeo copy [--all] oci:DIR:TAG docker://...`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libyaml_files

REGISTRY_BINARY = "/usr/bin/docker-registry"  # Debian's docker-registry package installs the binary here
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
START_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class LocalRegistry:
    host: str  # 127.0.0.1:PORT, the registry part of a reference
    directory: Path


@dataclass(frozen=True)
class PushedImage:
    reference: str
    digest: str
    media_type: str
    platforms: dict[str, str]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(host: str) -> bool:
    """The API root answers (200 open, 401 asking for a token)."""
    try:
        with urllib.request.urlopen(f"http://{host}/v2/", timeout=2):  # noqa: S310 (a loopback URL made here)
            return True
    except urllib.error.HTTPError as refused:
        return refused.code == 401
    except OSError:
        return False


@contextmanager
def local_registry(directory: Path, auth: dict[str, Any] | None = None) -> Iterator[LocalRegistry]:
    """docker-registry serving `directory`/storage on a free loopback port until the block ends."""
    directory.mkdir(parents=True, exist_ok=True)
    for _ in range(5):  # a port found free can be taken by a parallel test before the registry binds it
        host = f"127.0.0.1:{free_port()}"
        config = {"version": 0.1, "log": {"level": "warn"}, "http": {"addr": host},
                  "storage": {"filesystem": {"rootdirectory": str(directory / "storage")}, "delete": {"enabled": True}}}
        if auth:
            config["auth"] = auth
        (directory / "config.yml").write_text(libyaml_files.dump(config))
        log = (directory / "registry.log").open("ab")
        process = subprocess.Popen([REGISTRY_BINARY, "serve", str(directory / "config.yml")],
                                   stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while process.poll() is None and time.monotonic() < deadline and not answers(host):
            time.sleep(0.05)
        if process.poll() is None and answers(host):
            try:
                yield LocalRegistry(host, directory)
            finally:
                process.terminate()
                process.wait(timeout=10)
                log.close()
            return
        process.kill()
        process.wait()
        log.close()
    raise RuntimeError(f"docker-registry did not start: {(directory / 'registry.log').read_text()[-2000:]}")


def push_image(registry: LocalRegistry, work: Path, repository: str, tag: str, platforms: Sequence[str],
               index: bool | None = None, creds: str | None = None) -> PushedImage:
    """Write an image for `platforms` and push it as registry/repository:tag; its digests as the registry serves
    them. One platform pushes a single manifest unless `index` is set."""
    layout = work / f"oci-{repository.replace('/', '_')}-{tag}"
    write_oci_layout(layout, tag, platforms, len(platforms) > 1 if index is None else index)
    reference = f"{registry.host}/{repository}:{tag}"
    push_creds, read_creds = ([f"--dest-creds={creds}"], [f"--creds={creds}"]) if creds else (
        ["--dest-no-creds"], ["--no-creds"])
    skopeo("copy", "--all", "--dest-tls-verify=false", *push_creds, f"oci:{layout}:{tag}", f"docker://{reference}")
    raw = skopeo("inspect", "--raw", "--tls-verify=false", *read_creds, f"docker://{reference}")
    digest = f"sha256:{hashlib.sha256(raw).hexdigest()}"
    document = json.loads(raw)
    if document["mediaType"] == OCI_INDEX:
        served = {platform_name(entry["platform"]): entry["digest"] for entry in document["manifests"]}
    else:
        served = {platforms[0]: digest}
    return PushedImage(reference, digest, document["mediaType"], served)


def skopeo(*arguments: str) -> bytes:
    done = subprocess.run(["skopeo", *arguments], capture_output=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"skopeo {' '.join(arguments)}: {done.stderr.decode()}")
    return done.stdout


def platform_name(platform: dict[str, str]) -> str:
    return "/".join(platform[key] for key in ("os", "architecture", "variant") if platform.get(key))


def write_oci_layout(layout: Path, tag: str, platforms: Sequence[str], index: bool) -> None:
    """An OCI image layout (image-spec image-layout.md) whose index.json names `tag`: one manifest per platform,
    under an image index when `index`."""
    (layout / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (layout / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    manifests = [dict(platform_manifest(layout, platform), platform=platform_fields(platform))
                 for platform in platforms]
    if index:
        top = blob(layout, OCI_INDEX, {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests})
    else:
        top = {key: value for key, value in manifests[0].items() if key != "platform"}
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [top]}))


def platform_fields(platform: str) -> dict[str, str]:
    os_name, architecture, *variant = platform.split("/")
    return {"os": os_name, "architecture": architecture, **({"variant": variant[0]} if variant else {})}


def platform_manifest(layout: Path, platform: str) -> dict[str, Any]:
    """A one-layer image for `platform` (a file naming it, so each platform's layer differs); its descriptor."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
        content = f"built for {platform}\n".encode()
        member = tarfile.TarInfo("etc/platform")
        member.size, member.mode = len(content), 0o644
        tar.addfile(member, io.BytesIO(content))
    layer_tar = archive.getvalue()
    layer = write_blob(layout, gzip.compress(layer_tar, mtime=0))
    config = write_blob(layout, json.dumps({
        **platform_fields(platform), "config": {},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer_tar).hexdigest()}"]}}).encode())
    return blob(layout, OCI_MANIFEST, {
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer}]})


def blob(layout: Path, media_type: str, document: dict[str, Any]) -> dict[str, Any]:
    return {"mediaType": media_type, **write_blob(layout, json.dumps(document).encode())}


def write_blob(layout: Path, content: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(content).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(content)
    return {"digest": f"sha256:{digest}", "size": len(content)}
