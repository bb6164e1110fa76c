package rsaverify

import "errors"

// ErrVerification is the error of every signature that does not verify.
var ErrVerification = errors.New("rsaverify: verification error")
