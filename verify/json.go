package verify

import "github.com/jwksverify/jwksverify/internal/jsonscan"

// The verifier reads headers and claims with the project's strict JSON
// scanner (internal/jsonscan, shared with package dpop); these are its
// names inside this package.

// errDupMember is the detail of a header or claims set with a member name
// twice. It never carries token bytes.
var errDupMember = jsonscan.ErrDupMember

// members iterates the members of a JSON text that must be exactly one
// object (jsonscan.Members).
type members struct{ it jsonscan.Members }

// newMembers starts iterating s, which must hold one JSON object.
func newMembers(s string) (members, error) {
	it, err := jsonscan.NewMembers(s)
	return members{it}, err
}

// member is one member of an object: its name (unescaped) and the span of
// its value in the scanned text.
type member struct {
	name       string
	start, end int
}

// next returns the next member. ok is false at the end of the object; then
// the rest of the text has been checked to be white space.
func (m *members) next() (member, bool, error) {
	mb, ok, err := m.it.Next()
	return member{mb.Name, mb.Start, mb.End}, ok, err
}

// unescape decodes the contents of a JSON string that the scanner has
// validated.
func unescape(s string) string { return jsonscan.Unescape(s) }

// names records member names to detect duplicates (jsonscan.Names).
type names struct{ jsonscan.Names }

// add records name and reports false if it was already present.
func (d *names) add(name string) bool { return d.Add(name) }
