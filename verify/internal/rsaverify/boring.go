//go:build goexperiment.boringcrypto

package rsaverify

import "crypto/boring"

func boringEnabled() bool { return boring.Enabled() }
