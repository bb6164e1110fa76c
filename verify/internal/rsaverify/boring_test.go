//go:build goexperiment.boringcrypto

package rsaverify_test

const boringBuild = true
