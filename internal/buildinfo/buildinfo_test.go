package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name                 string
		linkVersion, linkRev string
		bi                   *debug.BuildInfo
		tree                 string
		wantVersion, wantRev string
	}{
		{name: "ldflags-win", linkVersion: "v1.2.3", linkRev: "abc",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-2026-def"}, Settings: vcs("def", "false")},
			tree: "v1.0.0\n", wantVersion: "v1.2.3", wantRev: "abc"},
		{name: "vcs-stamp", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201-def+dirty"}, Settings: vcs("def", "true")},
			tree: "v1.0.0\n", wantVersion: "v0.0.0-20261201-def+dirty", wantRev: "def-dirty"},
		{name: "module-version", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			tree: "v1.0.0", wantVersion: "v1.4.0", wantRev: "unknown"},
		{name: "source-archive", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			tree: "v1.0.0\n", wantVersion: "v1.0.0", wantRev: "unknown"},
		{name: "empty-ldflags-fall-back", linkVersion: " ", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			tree: "v1.0.0", wantVersion: "v1.0.0", wantRev: "unknown"},
		{name: "no-build-info", tree: "v1.0.0", wantVersion: "v1.0.0", wantRev: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.linkVersion, tt.linkRev, tt.bi, tt.tree)
			if got.Version != tt.wantVersion || got.Revision != tt.wantRev {
				t.Errorf("resolve() = %+v, want {%s %s}", got, tt.wantVersion, tt.wantRev)
			}
		})
	}
}

// TestTreeVersion: the VERSION file the binary embeds names a release.
func TestTreeVersion(t *testing.T) {
	v := strings.TrimSpace(treeVersion)
	if !strings.HasPrefix(v, "v") || strings.ContainsAny(v, " \t\n") || len(v) < 6 {
		t.Errorf("VERSION = %q, want a semantic version such as v0.2.0", treeVersion)
	}
	if got := Read().Version; got == "" || got == "(devel)" {
		t.Errorf("Read().Version = %q, want a real version", got)
	}
}
