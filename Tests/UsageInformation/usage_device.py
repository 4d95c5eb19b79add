"""Plays Apple and the shopper's device for Orchard's merchant token usage information, with HPKE from PyPI's
pyhpke (a second implementation: Orchard seals with swift-crypto). Loopback only.

As a program, against `orchard-sandbox demo` (whose mock Apple gateway holds each token's private key):

    python3 Tests/UsageInformation/usage_device.py --state-dir .orchard/demo --gateway https://127.0.0.1:PORT --token ID

opens the newest metadata Orchard announced for the token, checks it, fetches the package from the web service URL it
names and prints `usageInformation.json`. The functions are what the tests use."""

import argparse
import base64
import hashlib
import io
import json
import ssl
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

CIPHERSUITE = "HPKE_AUTH_P384_SHA384_AES_GCM_256"
SUITE = CipherSuite.new(KEMId.DHKEM_P384_HKDF_SHA384, KDFId.HKDF_SHA384, AEADId.AES256_GCM)
SCHEME = "ApplePayMerchantTokenUsageInformation"


def info(token_id):
    """`info`: the label, then SHA-256 of the token identifier (UTF-8), as Apple documents it."""
    return b"ApplePayMerchantTokenUsageInformation_1.0" + hashlib.sha256(token_id.encode()).digest()


def x963(key_pem):
    """The uncompressed point of a P-384 private key's public half."""
    private = serialization.load_pem_private_key(key_pem.encode(), password=None)
    return private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def kem_private(key_pem):
    private = serialization.load_pem_private_key(key_pem.encode(), password=None)
    return KEMKey.from_pem(private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def kem_public(point):
    """A P-384 public key from its X9.63 bytes."""
    from cryptography.hazmat.primitives.asymmetric import ec
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP384R1(), point)
    return KEMKey.from_pem(public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def open_sealed(sealed, token_id, token_key_pem, merchant_public):
    """Checks what the device checks (ciphersuite, infoHash, the token key's hash) and opens `data` in auth mode."""
    assert sealed["ciphersuite"] == CIPHERSUITE, sealed["ciphersuite"]
    assert sealed["infoHash"] == hashlib.sha256(info(token_id)).hexdigest(), "infoHash is not SHA-256 of info"
    assert sealed["merchantTokenPublicKeyHash"] == hashlib.sha256(x963(token_key_pem)).hexdigest(), "not sealed to this token's key"
    recipient = SUITE.create_recipient_context(
        base64.b64decode(sealed["ephemeralPublicKey"]), kem_private(token_key_pem), info=info(token_id),
        pks=kem_public(merchant_public))
    return recipient.open(base64.b64decode(sealed["data"]))


def open_metadata(metadata, token_id, token_key_pem):
    """The announced `{webServiceURL, authenticationToken}`, and the merchant's key it was sealed with (X9.63)."""
    merchant_public = base64.b64decode(metadata["merchantPublicKey"])
    return json.loads(open_sealed(metadata, token_id, token_key_pem, merchant_public)), merchant_public


def fetch(url, token, timeout=10):
    """GET with the device's Authorization; (status, body)."""
    request = urllib.request.Request(url, headers={"Authorization": f"{SCHEME} {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def package_url(web_service_url, token_id):
    return f"{web_service_url.rstrip('/')}/v1/merchantToken/{token_id}/usageInformation"


def open_package(answer, token_id, token_key_pem, merchant_public):
    """The package's files, after checking it was sealed by the announced merchant key."""
    assert answer["merchantPublicKeyHash"] == hashlib.sha256(merchant_public).hexdigest(), "sealed by another merchant key"
    archive = zipfile.ZipFile(io.BytesIO(open_sealed(answer, token_id, token_key_pem, merchant_public)))
    assert archive.testzip() is None
    return {name: archive.read(name) for name in archive.namelist()}


def mock_control(gateway, state_dir, token_id):
    """The demo's mock gateway's record of the token: its private key and the metadata Orchard announced."""
    context = ssl.create_default_context(cafile=str(Path(state_dir) / "test-ca.pem"))
    context.load_cert_chain(str(Path(state_dir) / "test-merchant-identity.pem"), str(Path(state_dir) / "test-merchant-identity.key"))
    with urllib.request.urlopen(f"{gateway}/_mock/merchant-tokens/{token_id}", context=context, timeout=10) as response:
        return json.load(response)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--gateway", required=True, help="the mock gateway's https origin, as the demo's banner prints it")
    parser.add_argument("--token", required=True, help="the merchantTokenIdentifier")
    arguments = parser.parse_args()
    control = mock_control(arguments.gateway, arguments.state_dir, arguments.token)
    if not control["notifications"]:
        sys.exit("Orchard has announced nothing for this token yet")
    metadata = control["notifications"][-1]
    opened, merchant_public = open_metadata(metadata, arguments.token, control["privateKey"])
    print("announced metadata:", json.dumps(metadata, indent=2), "opened:", json.dumps(opened, indent=2), sep="\n")
    status, body = fetch(package_url(opened["webServiceURL"], arguments.token), opened["authenticationToken"])
    if status != 200:
        sys.exit(f"the web service answered {status}: {body[:300]!r}")
    files = open_package(json.loads(body), arguments.token, control["privateKey"], merchant_public)
    print("package:", sorted(files), files["usageInformation.json"].decode(), sep="\n")


if __name__ == "__main__":
    main()
