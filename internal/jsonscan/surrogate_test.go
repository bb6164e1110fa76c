package jsonscan

import "testing"

// TestLoneSurrogate: a \u escape of a surrogate counts unless it is a high
// one followed by an escaped low one; an escaped backslash starts no escape.
func TestLoneSurrogate(t *testing.T) {
	for v, want := range map[string]bool{
		`"bob\ud800"`:             true,
		`"\udfff"`:                true,
		`"\ud800\u0041"`:          true,
		`"\ud800\ud800"`:          true,
		`"\udc00\ud800"`:          true,
		`{"a":"x","b":"\ud83dz"}`: true,
		`"\ud83d\ude00"`:          false,
		`"\udbff\udfff"`:          false, // the last pair
		`"\ud800\udc00"`:          false, // the first pair
		`"\ud800\ue000"`:          true,  // a high one before a non-surrogate
		`"\udbff\udbff\udfff"`:    true,
		`"\\ud800"`:               false,
		`"\\\ud800"`:              true,
		`"\u00e9\ufffd"`:          false,
		`"plain"`:                 false,
		`"\ud83d`:                 true,
	} {
		if got := LoneSurrogate(v); got != want {
			t.Errorf("LoneSurrogate(%s) = %v, want %v", v, got, want)
		}
	}
}
