"""OpenPGP checks for the source readers, run with the real gpg and gpgv in a throwaway home: which primary keys a
key file holds, and a clearsigned document verified against one pinned key (the signed text gpgv outputs).

Nothing reads the user's ~/.gnupg or trusts a key the lock does not pin by fingerprint.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from .http import SourceError

# Status lines (gnupg doc/DETAILS) that say a signature must not be trusted even when another one is good.
_REFUSING_STATUS = ("BADSIG", "EXPKEYSIG", "REVKEYSIG", "EXPSIG")


def _run(argv: list[str], source: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise SourceError(f"{source}: {argv[0]} is not installed; install GnuPG (gpg and gpgv) to verify it") from None


def _gpg(home: Path) -> list[str]:
    return ["gpg", "--batch", "--no-options", "--no-tty", "--homedir", str(home)]


def primary_fingerprints(key: bytes, source: str) -> list[str]:
    """The primary keys' fingerprints (40 hex, upper case) in OpenPGP key material, armored or binary, as
    `gpg --show-keys --with-colons` prints them; `source` names where the key came from, for errors."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-gpg-") as home:
        shown = _run([*_gpg(Path(home)), "--with-colons", "--show-keys"], source, key)
    if shown.returncode != 0:
        raise SourceError(f"{source}: not OpenPGP key material gpg can read "
                          f"({shown.stderr.decode(errors='replace').strip()})")
    fingerprints, record = [], ""
    for line in shown.stdout.decode(errors="replace").splitlines():
        fields = line.split(":")
        if fields[0] == "fpr" and record == "pub":
            fingerprints.append(fields[9].upper())
        record = fields[0] if fields[0] != "fpr" else ""
    if not fingerprints:
        raise SourceError(f"{source}: holds no public key")
    return fingerprints


def require_pinned_key(key: bytes, fingerprint: str, source: str) -> None:
    """Refuse key material unless its primary key is exactly the pinned fingerprint (no other key beside it)."""
    found = primary_fingerprints(key, source)
    if found != [fingerprint]:
        raise SourceError(f"{source}: the key material's primary key(s) {', '.join(found)} are not the pinned "
                          f"{fingerprint}; check the lock's fingerprint against the vendor's published one")


def verify_clearsigned(document: bytes, key: bytes, fingerprint: str, source: str) -> bytes:
    """The text a clearsigned `document` signs, once gpgv finds a valid signature by `fingerprint` (its primary key
    or a subkey of it) with a keyring holding only that key; SourceError naming `source` otherwise."""
    require_pinned_key(key, fingerprint, source)
    stripped = document.strip()
    # As apt does (CVE-2016-1252 hardening): text outside the signed message is refused, not ignored, so nothing
    # unsigned can pose as part of the document.
    if not (stripped.startswith(b"-----BEGIN PGP SIGNED MESSAGE-----")
            and stripped.endswith(b"-----END PGP SIGNATURE-----")):
        raise SourceError(f"{source}: not a clearsigned document alone (text outside the signed message)")
    with tempfile.TemporaryDirectory(prefix="gpufleet-gpgv-") as scratch:
        folder = Path(scratch)
        (folder / "home").mkdir(mode=0o700)
        # gpgv reads binary keyrings only; exporting the pinned key by fingerprint also drops anything else.
        _run([*_gpg(folder / "home"), "--import"], source, key)
        exported = _run([*_gpg(folder / "home"), "--export", fingerprint], source)
        (folder / "pinned.gpg").write_bytes(exported.stdout)
        (folder / "document").write_bytes(document)
        # The exit status is not the verdict: a document also signed by a key outside the keyring exits non-zero.
        checked = _run(["gpgv", "--homedir", str(folder / "home"), "--status-fd", "1", "--keyring",
                        str(folder / "pinned.gpg"), "--output", str(folder / "signed"), str(folder / "document")],
                       source)
        status = [line.split()[1:] for line in checked.stdout.decode(errors="replace").splitlines()
                  if line.startswith("[GNUPG:] ") and len(line.split()) > 1]
        refused = [" ".join(fields) for fields in status if fields[0] in _REFUSING_STATUS]
        valid = any(fields[0] == "VALIDSIG" and fields[-1].upper() == fingerprint for fields in status)
        if refused or not valid:
            said = "; ".join(refused) or checked.stderr.decode(errors="replace").strip() or "no signature"
            raise SourceError(f"{source}: no valid signature by the pinned key {fingerprint} ({said}); the "
                              "repository was re-signed or tampered with, or the lock pins the wrong key")
        return (folder / "signed").read_bytes()


def dearmor(key: bytes, source: str) -> bytes:
    """Binary OpenPGP packets of armored key material (binary material comes back unchanged)."""
    if b"-----BEGIN PGP" not in key:
        return key
    with tempfile.TemporaryDirectory(prefix="gpufleet-gpg-") as home:
        done = _run([*_gpg(Path(home)), "--dearmor"], source, key)
    if done.returncode != 0:
        raise SourceError(f"{source}: armored key material gpg cannot read "
                          f"({done.stderr.decode(errors='replace').strip()})")
    return done.stdout
