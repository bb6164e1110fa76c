package extauthz

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// The tests of this file keep docs/API.md true for gRPC; server's
// apidoc_test.go does the rest.

const apiDoc = "../../docs/API.md"

// TestAPIDocGRPC checks that each gRPC method Register registers is
// documented as `service/method`.
func TestAPIDocGRPC(t *testing.T) {
	doc := servertest.APIDoc(t, apiDoc)
	e := newEnv(t, envConfig{})
	g := grpc.NewServer()
	defer g.Stop()
	Register(g, e.srv)
	n := 0
	for svc, info := range g.GetServiceInfo() {
		for _, m := range info.Methods {
			n++
			if name := svc + "/" + m.Name; !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("docs/API.md does not document the gRPC method `%s`", name)
			}
		}
	}
	if n < 4 {
		t.Errorf("Register registered %d methods, want Check and the three of health", n)
	}
}

// TestAPIDocErrorClassesGRPC checks the gRPC column of the class table: a
// class whose family is "could not decide" (503 on HTTP) fails the call
// UNAVAILABLE; every other is DENIED. Server's TestAPIDocErrorClasses ties
// each class to its HTTP status.
func TestAPIDocErrorClassesGRPC(t *testing.T) {
	doc := servertest.APIDoc(t, apiDoc)
	a := newAuthzGRPC(newEnv(t, envConfig{}).srv)
	for _, sentinel := range servertest.ClassSentinels {
		class := verify.Class(sentinel)
		t.Run(strings.ReplaceAll(class, "_", "-"), func(t *testing.T) {
			row := servertest.TableRow(doc, "`"+class+"`")
			cells := strings.Split(strings.Trim(row, "| "), " | ")
			if len(cells) != 7 {
				t.Fatalf("docs/API.md row %q has %d cells, want 7 (class, meaning, 5 endpoints)", row, len(cells))
			}
			d := server.Decision{Status: http.StatusUnauthorized, Class: class, Challenge: "Bearer", Body: []byte("{}")}
			if errors.Is(sentinel, verify.ErrUnavailable) {
				d = server.Decision{Status: http.StatusServiceUnavailable, Class: class, Body: []byte("{}")}
			}
			resp, err := a.respond(d)
			got := "DENIED"
			switch {
			case status.Code(err) == codes.Unavailable:
				got = "UNAVAILABLE"
			case err != nil || resp.GetDeniedResponse() == nil:
				t.Fatalf("respond(%s) = %v, %v; want a denial or UNAVAILABLE", class, resp, err)
			}
			if cell := cells[6]; !strings.HasPrefix(cell, got) {
				t.Errorf("%s on gRPC Check: docs/API.md says %q, the code answers %s", class, cell, got)
			}
		})
	}
}
