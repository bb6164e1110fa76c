package tlsfiles

import "errors"

// ErrInvalid reports options or files that [New] refuses.
var ErrInvalid = errors.New("tlsfiles: invalid")
