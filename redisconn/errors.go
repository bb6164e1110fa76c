package redisconn

import (
	"errors"
	"fmt"
)

// Errors returned by the package, each wrapped with detail; match them with
// errors.Is.
var (
	// ErrInvalidOptions reports options that [New] refuses.
	ErrInvalidOptions = errors.New("redisconn: invalid options")
	// ErrNotReplicated: WAIT reported fewer replicas than
	// AcknowledgeReplicas asks for. The write may be on the master only, and
	// a failover now would lose it: the caller must treat it as a failure
	// (503, nothing acknowledged), never as stored.
	ErrNotReplicated = errors.New("redisconn: fewer replicas acknowledged the write than acknowledge_replicas asks for")
	// ErrEvicting: a master the client writes to runs with maxmemory and
	// an eviction policy (maxmemory-policy other than noeviction): under
	// memory pressure it forgets keys silently (a DPoP proof's jti, a
	// revocation entry), so what it answers proves nothing. Callers treat
	// it as a failure (503), never as an answer.
	ErrEvicting = errors.New("redisconn: Redis may evict keys (maxmemory with a maxmemory-policy other than noeviction)")
	// ErrCredentials: a password file could not be read.
	ErrCredentials = errors.New("redisconn: cannot read the password file")
)

// OptionError is an option that [New] or [CheckOptions] refuses: the field
// of the options it is about, as a Go path ("URL", "Sentinel.Addrs[1]",
// "TLS.KeyFile"; empty when the refusal concerns several fields), and why.
// It matches [ErrInvalidOptions] and Err with errors.Is, so that package
// config names the file's key by Field, never by the message.
type OptionError struct {
	Field string
	Err   error
}

// Error returns "redisconn: invalid options: Field: Err".
func (e *OptionError) Error() string {
	if e.Field == "" {
		return ErrInvalidOptions.Error() + ": " + e.Err.Error()
	}
	return ErrInvalidOptions.Error() + ": " + e.Field + ": " + e.Err.Error()
}

// Unwrap returns [ErrInvalidOptions] and Err.
func (e *OptionError) Unwrap() []error { return []error{ErrInvalidOptions, e.Err} }

// invalidOption is the [OptionError] of field, with the message of format.
func invalidOption(field, format string, args ...any) error {
	return &OptionError{Field: field, Err: fmt.Errorf(format, args...)}
}
