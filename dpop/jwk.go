package dpop

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
)

// jwkPublic builds the crypto public key of a JWK's public members. It only
// decodes: the point is checked to be on its curve by crypto/ecdsa, the RSA
// size and exponent by cache.NewKey.
func jwkPublic(kty, crv string, str func(string) string) (any, error) {
	b64 := base64.RawURLEncoding.Strict()
	member := func(name string) ([]byte, error) {
		v := str(name)
		if v == "" {
			return nil, fmt.Errorf("%s key without %s", kty, name)
		}
		b, err := b64.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%s is not base64url", name)
		}
		return b, nil
	}
	switch kty {
	case "RSA":
		n, err := member("n")
		if err != nil {
			return nil, err
		}
		e, err := member("e")
		if err != nil {
			return nil, err
		}
		if len(e) > 4 || len(n) == 0 || n[0] == 0 || e[0] == 0 {
			return nil, errors.New("RSA n or e is not a minimal big-endian integer of a usable size")
		}
		var ev int
		for _, c := range e {
			ev = ev<<8 | int(c)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: ev}, nil
	case "EC":
		var curve elliptic.Curve
		var size int
		switch crv {
		case "P-256":
			curve, size = elliptic.P256(), 32
		case "P-384":
			curve, size = elliptic.P384(), 48
		case "P-521":
			curve, size = elliptic.P521(), 66
		default:
			return nil, fmt.Errorf("EC curve %q is not supported", crv)
		}
		x, err := member("x")
		if err != nil {
			return nil, err
		}
		y, err := member("y")
		if err != nil {
			return nil, err
		}
		if len(x) != size || len(y) != size {
			return nil, fmt.Errorf("%s coordinates must be %d bytes", crv, size)
		}
		raw := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
		if err != nil {
			return nil, fmt.Errorf("EC point: %w", err)
		}
		return pub, nil
	case "OKP":
		if crv != "Ed25519" {
			return nil, fmt.Errorf("OKP curve %q is not supported", crv)
		}
		x, err := member("x")
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("Ed25519 x must be %d bytes", ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(x), nil
	case "":
		return nil, errors.New("no kty")
	}
	return nil, fmt.Errorf("kty %q is not an asymmetric key type", kty)
}

func cmpOr[T comparable](v, def T) T { return cmp.Or(v, def) }

// quote renders an untrusted value for a message: quoted, bounded.
func quote(s string) string {
	const max = 96
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
