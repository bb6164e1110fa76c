package api

import (
	"bytes"
	"os"
	"testing"
)

// TestOpenAPI checks that OpenAPI returns the file of the repository, and a
// copy: a caller changing it changes nothing for the next.
func TestOpenAPI(t *testing.T) {
	file, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := OpenAPI()
	if !bytes.Equal(doc, file) {
		t.Fatalf("OpenAPI() = %d bytes, want the %d of openapi.yaml", len(doc), len(file))
	}
	doc[0] = 'X'
	if again := OpenAPI(); !bytes.Equal(again, file) {
		t.Error("OpenAPI() after a caller changed its result: changed too, want a copy")
	}
}
