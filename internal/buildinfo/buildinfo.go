// Package buildinfo says which jwksverify this binary is: its version and
// VCS revision, for `jwksverify version`, /healthz and the
// jwksverify_build_info metric.
//
// The version is, in order: what the build set with
// -ldflags "-X github.com/jwksverify/jwksverify/internal/buildinfo.version=V"
// (the Makefile and the Dockerfile do), else the module version or VCS
// pseudo-version the Go toolchain stamped, else the release the source tree
// carries in its VERSION file (so that `go build` of a source archive
// without .git still says which release it is). The revision is -X
// ...buildinfo.revision, else the VCS revision stamped by the toolchain
// (with "-dirty" for a modified tree), else "unknown".
package buildinfo

import (
	_ "embed"
	"runtime/debug"
	"strings"
)

// Set at link time with -ldflags -X; empty otherwise.
var (
	version  string
	revision string
)

//go:embed VERSION
var treeVersion string

// Info is what the binary knows about its build.
type Info struct {
	// Version is the release or pseudo-version; never empty.
	Version string
	// Revision is the VCS revision, or "unknown".
	Revision string
}

// Read returns the binary's build information. It is safe for concurrent
// use and does not block.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, bi, treeVersion)
}

// resolve applies the order of the package comment to the link-time values,
// the toolchain's build information (nil when absent) and the tree's
// VERSION file.
func resolve(linkVersion, linkRevision string, bi *debug.BuildInfo, tree string) Info {
	in := Info{Version: strings.TrimSpace(linkVersion), Revision: strings.TrimSpace(linkRevision)}
	var vcsRev string
	var modified bool
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = strings.TrimSpace(tree)
	}
	if in.Version == "" {
		in.Version = "(devel)" // a tree without VERSION: only an edited one
	}
	if in.Revision == "" && vcsRev != "" {
		in.Revision = vcsRev
		if modified {
			in.Revision += "-dirty"
		}
	}
	if in.Revision == "" {
		in.Revision = "unknown"
	}
	return in
}
