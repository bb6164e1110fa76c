package cache

import "errors"

var (
	// ErrUnsupportedKey reports key material that cannot verify tokens here:
	// an unknown type or curve, or a symmetric key from a remote source.
	ErrUnsupportedKey = errors.New("cache: unsupported key")
	// ErrWeakKey reports key material that is refused as too weak (RSA under
	// 2048 bits or with the ROCA fingerprint, an empty secret).
	ErrWeakKey = errors.New("cache: weak key")
)
