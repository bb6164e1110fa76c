//go:build boringcrypto

package verify_test

import (
	"crypto/boring"
	"testing"
)

// TestBoringCryptoEnabled proves that a build with GOEXPERIMENT=boringcrypto
// (make test-boring) really runs on BoringCrypto: without cgo, or on a
// platform BoringCrypto does not support, Go falls back to its own crypto.
func TestBoringCryptoEnabled(t *testing.T) {
	if !boring.Enabled() {
		t.Fatal("boring.Enabled() = false in a boringcrypto build, want true")
	}
}
