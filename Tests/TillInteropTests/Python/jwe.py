"""Client-side encryption checked by an independent JOSE implementation (jwcrypto).

Usage: python jwe.py keygen   stdin {"bits": 2048}
         -> {"publicKeyBase64": <standard Base64 of the DER SubjectPublicKeyInfo>, "privateKeyPem": <PKCS#8 PEM>}
       python jwe.py decrypt  stdin {"privateKeyPem": ..., "tokens": [<JWE compact>, ...]}
         -> {"results": [{"ok": true, "header": {...}, "payloadBase64": ..., "payload": <JSON>}
                         | {"ok": false, "error": "<exception class>: <message>"}, ...]}

Only RSA-OAEP key wrapping and A256CBC-HS512 content encryption are allowed, the pair the vendor's
client SDKs use.
"""
import base64
import json
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto import jwe, jwk

ALLOWED = ["RSA-OAEP", "A256CBC-HS512"]


def keygen(request):
    key = rsa.generate_private_key(public_exponent=65537, key_size=int(request["bits"]))
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {"publicKeyBase64": base64.b64encode(spki).decode("ascii"), "privateKeyPem": pem.decode("ascii")}


def decrypt(request):
    key = jwk.JWK.from_pem(request["privateKeyPem"].encode("ascii"))
    results = []
    for token in request["tokens"]:
        try:
            message = jwe.JWE(algs=ALLOWED)
            message.deserialize(token, key=key)
            payload = message.payload
            results.append({
                "ok": True,
                "header": message.jose_header,
                "payloadBase64": base64.b64encode(payload).decode("ascii"),
                "payload": json.loads(payload.decode("utf-8")),
            })
        except Exception as error:  # every failure is an answer: the test decides what it means
            results.append({"ok": False, "error": "%s: %s" % (type(error).__name__, error)})
    return {"results": results}


def main():
    command = sys.argv[1]
    request = json.load(sys.stdin)
    answer = {"keygen": keygen, "decrypt": decrypt}[command](request)
    json.dump(answer, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
