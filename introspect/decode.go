package introspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/numericdate"
)

// maxDepth bounds the nesting of an introspection answer.
const maxDepth = 32

// Answer is a decoded introspection response (RFC 7662 §2.2).
type Answer struct {
	// Active is the answer's "active" member.
	Active bool
	// Claims are the answer's other members, a JSON object (compact, member
	// names sorted). Nil when not active: an inactive answer's other
	// members are ignored (RFC 7662 §2.2).
	Claims json.RawMessage
	// ExpiresAt is the answer's exp, zero when absent.
	ExpiresAt time.Time
}

// Decode reads an introspection response body (untrusted input, already
// bounded in size by the caller): a JSON object in valid UTF-8, nested at
// most 32 deep, without duplicate member names at its top level, whose
// "active" member is a boolean, and whose "exp", when present in an active
// answer, is a number of seconds from 0 to 10^15, read exactly whatever its
// spelling. Anything else is an error wrapping [ErrBadAnswer]. Decode is safe for concurrent use.
func Decode(body []byte) (Answer, error) {
	if !utf8.Valid(body) {
		return Answer{}, fmt.Errorf("%w: not valid UTF-8", ErrBadAnswer)
	}
	if err := checkDepth(body); err != nil {
		return Answer{}, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return Answer{}, fmt.Errorf("%w: not a JSON object", ErrBadAnswer)
	}
	if duplicateNames(body) {
		// json.Unmarshal keeps the last of duplicate names, silently: an
		// answer {"active":false,...,"active":true} would be active. Which
		// one the server meant is unknowable (a JWT with duplicates is
		// malformed, for the same reason); in a nested object too (cnf's
		// jkt, a roles map), whose claims the binding check, CEL and the
		// headers read again.
		return Answer{}, fmt.Errorf("%w: duplicate member names", ErrBadAnswer)
	}
	var active bool
	raw, ok := doc["active"]
	if !ok || json.Unmarshal(raw, &active) != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Answer{}, fmt.Errorf("%w: no boolean active member", ErrBadAnswer)
	}
	if !active {
		return Answer{}, nil
	}
	delete(doc, "active")
	var a Answer
	a.Active = true
	if raw, ok := doc["exp"]; ok {
		// Read exactly whatever its spelling (internal/numericdate): a
		// float64 read 10^10 spelled with 2 000 zeros and e-1990 as
		// 10^-191. null, a string, a negative number are no exp.
		d, isNumber := numericdate.Read(string(raw))
		if !isNumber || d.Neg || d.Beyond(1e15) {
			return Answer{}, fmt.Errorf("%w: exp is not a number of seconds", ErrBadAnswer)
		}
		a.ExpiresAt = d.Time()
	}
	claims, err := json.Marshal(doc)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	a.Claims = claims
	return a, nil
}

// duplicateNames reports whether the JSON object body (which
// json.Unmarshal has accepted) has a member name twice in any of its
// objects, in any spelling: the project's strict scanner refuses one in a
// nested object, Names one at the top level (names unescaped).
func duplicateNames(body []byte) bool {
	it, err := jsonscan.NewMembers(string(body))
	if err != nil {
		return false
	}
	var names jsonscan.Names
	for {
		mb, ok, err := it.Next()
		if err != nil {
			return errors.Is(err, jsonscan.ErrDupMember)
		}
		if !ok {
			return false
		}
		if !names.Add(mb.Name) {
			return true
		}
	}
}

// checkDepth refuses JSON nested deeper than maxDepth (encoding/json would
// recurse as deep as the input goes).
func checkDepth(b []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr:
			switch c {
			case '\\':
				esc = true
			case '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrBadAnswer, maxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
