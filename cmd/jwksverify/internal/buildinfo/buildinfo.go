// Package buildinfo says which jwksverify this binary is: its version and
// VCS revision, for `jwksverify version`, /healthz, the
// jwksverify_build_info metric and the tracing resource.
//
// One file holds the version: VERSION beside this file names the release
// the tree is or will become (vX.Y.Z; a release is the commit tagged with
// it). The Makefile, the Dockerfile (through the Makefile), the Helm chart,
// the Kubernetes manifests and CHANGELOG.md follow it, and a test in
// cmd/jwksverify holds them together (docs/DECISIONS.md, "One version").
//
// The version a binary reports is, in order:
//   - what the build set with -ldflags "-X …/buildinfo.version=V" (the
//     Makefile does, for `make build`, `make dist` and the image);
//   - the module version the Go toolchain stamped, when it is a release
//     (`go install …@v0.2.0`, or `go build` in a clean checkout of the tag);
//   - else a development build of the tree's release: VERSION + "-dev",
//     with "+" and the first 12 hex digits of the revision when the
//     toolchain knows it (a git checkout, or a pseudo-version such as
//     `go install …@main` stamps), and ".dirty" for a modified tree — so
//     a build never claims a release it is not.
//
// The revision is -X …buildinfo.revision, else the VCS revision stamped by
// the toolchain (with "-dirty" for a modified tree), else "unknown".
package buildinfo

import (
	_ "embed"
	"regexp"
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

// release matches a release version (no pre-release, no build metadata).
var release = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// pseudo matches the revision at the end of a Go pseudo-version
// (v0.0.0-20261205010203-0123456789ab, vX.Y.Z-pre.0.…, vX.Y.(Z+1)-0.…).
var pseudo = regexp.MustCompile(`[-.][0-9]{14}-([0-9a-f]{12})(\+dirty)?$`)

// Info is what the binary knows about its build.
type Info struct {
	// Version is the release or development version; never empty.
	Version string
	// Revision is the VCS revision, or "unknown".
	Revision string
}

// Release returns the release the source tree carries (the VERSION file).
// It is safe for concurrent use.
func Release() string { return strings.TrimSpace(treeVersion) }

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
	var stamped, vcsRev string
	var modified bool
	if bi != nil {
		stamped = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" && release.MatchString(stamped) {
		in.Version = stamped
	}
	if in.Version == "" {
		in.Version = devVersion(strings.TrimSpace(tree), stamped, vcsRev, modified)
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

// devVersion is the version of a build that is not a release: the tree's
// release with "-dev", and the revision as build metadata when known.
func devVersion(tree, stamped, vcsRev string, modified bool) string {
	if tree == "" {
		tree = "v0.0.0" // a tree without VERSION: only an edited one
	}
	v := tree + "-dev"
	rev := vcsRev
	if m := pseudo.FindStringSubmatch(stamped); rev == "" && m != nil {
		rev, modified = m[1], modified || m[2] != ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev != "" && modified:
		v += "+" + rev + ".dirty"
	case rev != "":
		v += "+" + rev
	}
	return v
}
