package request

// The full normalizers, for tests that hold the fast paths to them.
var (
	NormalizePathFull = normalizePath
	NormalizeHostFull = normalizeHost
)
