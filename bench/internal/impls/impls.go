// Package impls names the implementations compared by the benchmarks, as they
// appear in benchmark names (impl=…). The benchmarks write these names and
// bench/cmd/report reads them, so both take them from here.
package impls

// Implementation names.
const (
	Jwksverify = "jwksverify"         // the verifier, token cache off
	Cached     = "jwksverify-cached"  // the verifier with its verified-token cache
	Baseline   = "golang-jwt+keyfunc" // jwt.Parse with a keyfunc over the JWKS
	JWX        = "jwx"                // lestrrat-go/jwx v3
	GoJOSE     = "go-jose"            // go-jose v4
	Floor      = "floor"              // the bare hash + signature primitive
)
