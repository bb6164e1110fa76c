// Package api holds the OpenAPI 3.1 document of jwksverify's HTTP API
// (api/openapi.yaml in the repository), embedded so that the service can
// serve it (GET /openapi.yaml) and programs can read it without the source
// tree. The integration tests validate the real binary's answers against it.
package api

import (
	"bytes"
	_ "embed"
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document, YAML in UTF-8. The slice is the
// caller's to keep or change; OpenAPI is safe for concurrent use.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

// MediaType is the media type the document is served with (RFC 9512).
const MediaType = "application/yaml"
