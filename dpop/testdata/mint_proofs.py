#!/usr/bin/env python3
"""Mint DPoP proofs with an implementation independent of jwksverify's Go code:
Python's `cryptography` (Debian python3-cryptography) for keys and signatures, and the
standard library for JSON, base64url and SHA-256 (the RFC 7638 thumbprint is computed here too).

Usage: mint_proofs.py ACCESS_TOKEN IAT HTM HTU
Prints one JSON object: {"ES256": {"jkt": ..., "proofs": {"valid": ..., "<mutation>": ...}}, ...}
Every mutation is signed anew, so that exactly one field is wrong."""

import base64, hashlib, json, sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def uint(n, size=None):
    size = size or (n.bit_length() + 7) // 8
    return n.to_bytes(size, "big")


def thumbprint(jwk):
    req = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}[jwk["kty"]]
    canon = json.dumps({k: jwk[k] for k in req}, separators=(",", ":"), sort_keys=True)
    return b64(hashlib.sha256(canon.encode()).digest())


class Key:
    def __init__(self, alg):
        self.alg = alg
        if alg == "ES256":
            self.priv = ec.generate_private_key(ec.SECP256R1())
            n = self.priv.public_key().public_numbers()
            self.jwk = {"kty": "EC", "crv": "P-256", "x": b64(uint(n.x, 32)), "y": b64(uint(n.y, 32))}
        elif alg == "PS256":
            self.priv = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            n = self.priv.public_key().public_numbers()
            self.jwk = {"kty": "RSA", "n": b64(uint(n.n)), "e": b64(uint(n.e))}
        elif alg == "EdDSA":
            self.priv = ed25519.Ed25519PrivateKey.generate()
            from cryptography.hazmat.primitives import serialization
            raw = self.priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            self.jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}

    def sign(self, data):
        if self.alg == "ES256":
            r, s = utils.decode_dss_signature(self.priv.sign(data, ec.ECDSA(hashes.SHA256())))
            return uint(r, 32) + uint(s, 32)
        if self.alg == "PS256":
            return self.priv.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32), hashes.SHA256())
        return self.priv.sign(data)


def jws(key, header, claims):
    si = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    return si + "." + b64(key.sign(si.encode()))


def main():
    token, iat, htm, htu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    ath = b64(hashlib.sha256(token.encode()).digest())
    out = {}
    for alg in ("ES256", "PS256", "EdDSA"):
        key, other = Key(alg), Key(alg)
        hdr = {"typ": "dpop+jwt", "alg": alg, "jwk": key.jwk}
        cl = {"jti": "py-" + alg, "htm": htm, "htu": htu, "iat": iat, "ath": ath}

        def mut(h=None, c=None, k=key):
            return jws(k, {**hdr, **(h or {})}, {**cl, "jti": "py-" + alg + "-" + str(len(proofs)), **(c or {})})

        proofs = {}
        proofs["valid"] = jws(key, hdr, cl)
        proofs["typ"] = mut(h={"typ": "jwt"})
        proofs["alg"] = mut(h={"alg": "ES384" if alg != "ES384" else "ES256"})
        proofs["jwk-private"] = mut(h={"jwk": {**key.jwk, "d": b64(b"\x01" * 32)}})
        proofs["jwk-other-key"] = mut(h={"jwk": other.jwk})  # signed by key, jwk of other
        proofs["htm"] = mut(c={"htm": "DELETE"})
        proofs["htu"] = mut(c={"htu": htu.split("?")[0] + "/other"})
        proofs["iat"] = mut(c={"iat": iat - 3600})
        proofs["ath"] = mut(c={"ath": b64(hashlib.sha256(b"another token").digest())})
        proofs["jkt"] = mut(h={"jwk": other.jwk}, k=other)  # valid proof of another key
        sig = proofs["valid"].rsplit(".", 1)
        bad = bytearray(base64.urlsafe_b64decode(sig[1] + "=" * (-len(sig[1]) % 4)))
        bad[5] ^= 1
        proofs["signature"] = sig[0] + "." + b64(bytes(bad))
        out[alg] = {"jkt": thumbprint(key.jwk), "proofs": proofs}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
