package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name                 string
		linkVersion, linkRev string
		bi                   *debug.BuildInfo
		tree                 string
		wantVersion, wantRev string
	}{
		{name: "ldflags-win", linkVersion: "v1.2.3", linkRev: "abc",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}, Settings: vcs("def", "false")},
			tree: "v1.0.0\n", wantVersion: "v1.2.3", wantRev: "abc"},
		{name: "module-release", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			tree: "v1.4.0", wantVersion: "v1.4.0", wantRev: "unknown"},
		{name: "checkout-of-the-tag", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs(rev, "false")},
			tree: "v1.4.0\n", wantVersion: "v1.4.0", wantRev: rev},
		{name: "checkout-between-releases", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201010203-0123456789ab"}, Settings: vcs(rev, "false")},
			tree: "v1.0.0\n", wantVersion: "v1.0.0-dev+0123456789ab", wantRev: rev},
		{name: "dirty-checkout", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201010203-0123456789ab+dirty"}, Settings: vcs(rev, "true")},
			tree: "v1.0.0\n", wantVersion: "v1.0.0-dev+0123456789ab.dirty", wantRev: rev + "-dirty"},
		{name: "dirty-checkout-of-the-tag", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0+dirty"}, Settings: vcs(rev, "true")},
			tree: "v1.0.0", wantVersion: "v1.0.0-dev+0123456789ab.dirty", wantRev: rev + "-dirty"},
		{name: "go-install-at-a-commit", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.0.1-0.20261201010203-0123456789ab"}},
			tree: "v1.1.0", wantVersion: "v1.1.0-dev+0123456789ab", wantRev: "unknown"},
		{name: "source-archive", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			tree: "v1.0.0\n", wantVersion: "v1.0.0-dev", wantRev: "unknown"},
		{name: "empty-ldflags-fall-back", linkVersion: " ", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			tree: "v1.0.0", wantVersion: "v1.0.0-dev", wantRev: "unknown"},
		{name: "no-build-info", tree: "v1.0.0", wantVersion: "v1.0.0-dev", wantRev: "unknown"},
		{name: "no-tree-version", tree: "", wantVersion: "v0.0.0-dev", wantRev: "unknown"},
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

// TestTreeVersion: the VERSION file the binary embeds names a release
// (vX.Y.Z), and a test binary, which is not one, says it is a development
// build of it.
func TestTreeVersion(t *testing.T) {
	if !release.MatchString(Release()) || treeVersion != Release()+"\n" {
		t.Errorf("VERSION = %q, want one release such as v0.2.0 and a newline", treeVersion)
	}
	if got := Read().Version; got == Release() || got[:len(Release())] != Release() {
		t.Errorf("Read().Version = %q, want a development build of %s", got, Release())
	}
}
