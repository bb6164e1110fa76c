package ecverify

import "crypto/fips140"

// Enabled reports whether verifiers should use this package. It is false
// when Go's FIPS 140-3 mode is on (GODEBUG=fips140=on or only), where the
// validated module in crypto/ecdsa must do the work, and in BoringCrypto
// builds (GOEXPERIMENT=boringcrypto), whose ECDSA is BoringSSL's.
func Enabled() bool { return !boringEnabled() && !fips140.Enabled() }
