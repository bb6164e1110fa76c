package api_test

import (
	"bytes"
	"fmt"

	"github.com/jwksverify/jwksverify/api"
)

// The document is YAML: a program can hand it to any OpenAPI 3.1 tool, or
// serve it as jwksverify does at /openapi.yaml.
func ExampleOpenAPI() {
	doc := api.OpenAPI()
	first, _, _ := bytes.Cut(doc, []byte("\n"))
	fmt.Println(string(first))
	fmt.Println(api.MediaType)
	// Output:
	// openapi: 3.1.0
	// application/yaml
}
