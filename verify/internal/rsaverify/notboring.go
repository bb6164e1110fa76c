//go:build !goexperiment.boringcrypto

package rsaverify

func boringEnabled() bool { return false }
