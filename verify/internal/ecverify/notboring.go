//go:build !goexperiment.boringcrypto

package ecverify

func boringEnabled() bool { return false }
