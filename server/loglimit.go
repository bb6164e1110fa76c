package server

import "github.com/jwksverify/jwksverify/internal/loglimit"

// DefaultRejectionLogRate is the default bound on "token rejected" log lines
// per second.
const DefaultRejectionLogRate = loglimit.DefaultRate
