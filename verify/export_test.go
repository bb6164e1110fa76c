package verify

import "github.com/jwksverify/jwksverify/cache"

// SetAttemptHook makes v call f before each signature check, so tests can
// count the keys a token is tried against.
func SetAttemptHook(v *Verifier, f func(*cache.Key)) { v.onAttempt = f }
