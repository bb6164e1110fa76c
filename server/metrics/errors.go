package metrics

import "errors"

// ErrNoVerifier reports a [New] without [Options.Verifier].
var ErrNoVerifier = errors.New("metrics: Verifier is required")
