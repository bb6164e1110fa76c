package server

import (
	"testing"
	"time"
)

// TestIssuedBeforeYearOneKeptAsAsked: issued_before
// "0001-01-01T00:00:00Z" is a valid RFC 3339 time in the past (it names no
// token). It parses to Go's zero time, which the store reads as "not
// given" and replaces by now: the 201 acknowledges an entry revoking every
// token of the subject issued until now, not the one asked for. An
// earlier time ("0000-12-31T23:59:59Z") is clamped to 1970 instead.
func TestIssuedBeforeYearOneKeptAsAsked(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true, noDown: true})
	e.clock.Add(time.Hour)
	ent := revokeVia(t, e.srv, `{"issuer":"`+issuerA+`","sub":"alice","issued_before":"0001-01-01T00:00:00Z"}`)
	if ent.IssuedBefore.After(time.Unix(0, 0)) {
		t.Errorf("issued_before 0001-01-01T00:00:00Z stored as %s, want no later than 1970 (as 0000-12-31 is)", ent.IssuedBefore.Format(time.RFC3339))
	}
}
