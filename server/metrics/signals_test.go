package metrics

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestSignalEvents: the counter counts by issuer (unknown for none), event
// and result, is documented with its labels, and registers once.
func TestSignalEvents(t *testing.T) {
	e := newEnv(t, envConfig{})
	s, err := e.m.UseSignals()
	if err != nil {
		t.Fatalf("UseSignals() = %v", err)
	}
	s.SignalEvent(servertest.IssuerA, "caep/session-revoked", "applied")
	s.SignalEvent(servertest.IssuerA, "caep/session-revoked", "applied")
	s.SignalEvent("", "unknown", "invalid")
	w := do(e.handler, httptestGet("/metrics"))
	for _, want := range []string{
		`jwksverify_signal_events_total{event="caep/session-revoked",issuer="` + servertest.IssuerA + `",result="applied"} 2`,
		`jwksverify_signal_events_total{event="unknown",issuer="unknown",result="invalid"} 1`,
	} {
		if !strings.Contains(w.Body.String(), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	row := servertest.TableRow(servertest.APIDoc(t, apiDoc), "`jwksverify_signal_events_total`")
	for _, l := range []string{"`issuer`", "`event`", "`result`", "| counter |"} {
		if !strings.Contains(row, l) {
			t.Errorf("docs/API.md row %q lacks %s", row, l)
		}
	}
	if _, err := e.m.UseSignals(); err == nil {
		t.Error("a second UseSignals() registered the counter again")
	}
}

func httptestGet(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, path, nil)
	return r
}
