package jsonscan

import "testing"

func TestAsRead(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"lone-high", `"bob\ud800"`, "\"bob\uFFFD\""},
		{"lone-low-in-array", `["x","\udfffy"]`, "[\"x\",\"\uFFFDy\"]"},
		{"pair-kept", `"\ud83d\ude00"`, "\"\U0001F600\""},
		{"numbers-as-written", `{"n":1.50,"big":123456789012345678901234567890,"s":"\ud800"}`, "{\"big\":123456789012345678901234567890,\"n\":1.50,\"s\":\"\uFFFD\"}"},
		{"html-not-escaped", `"<&>\ud800"`, "\"<&>\uFFFD\""},
		{"not-json", `{`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AsRead(tc.in); got != tc.want {
				t.Errorf("AsRead(%s) = %q, want %q", tc.in, got, tc.want)
			}
			if got := AsRead(tc.in); got != "" && LoneSurrogate(got) {
				t.Errorf("AsRead(%s) = %s holds a lone surrogate escape", tc.in, got)
			}
		})
	}
}
