//go:build goexperiment.boringcrypto

package ecverify

import "crypto/boring"

func boringEnabled() bool { return boring.Enabled() }
