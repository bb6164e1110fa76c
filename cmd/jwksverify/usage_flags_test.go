package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestUsageNamesEveryFlag: each command's usage text (what `jwksverify
// help CMD` and a usage error print above the flag list) names every flag
// the command takes, so that the synopsis a reader scans is not missing a
// whole mode (verify's --kind id_token and its inputs were absent).
func TestUsageNamesEveryFlag(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for cmd := range commandUsage {
		t.Run(cmd, func(t *testing.T) {
			r := runApp(t, nil, "", cmd, "--help")
			usage, flags, ok := strings.Cut(r.stderr, "\nFlags:")
			if !ok {
				if cmd == "version" {
					return // it takes no flags
				}
				t.Fatalf("%s --help printed no flag list:\n%s", cmd, r.stderr)
			}
			names := flagLine.FindAllStringSubmatch(flags, -1)
			if len(names) == 0 {
				t.Fatalf("%s --help lists no flags:\n%s", cmd, flags)
			}
			for _, m := range names {
				if !strings.Contains(usage, "--"+m[1]) {
					t.Errorf("the usage of %s does not name --%s", cmd, m[1])
				}
			}
		})
	}
}
