package metrics

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestSignalEvents: the counters count by issuer (unknown for none), event
// and result, and polls by issuer and result, are documented with their
// labels, and register once.
func TestSignalEvents(t *testing.T) {
	e := newEnv(t, envConfig{})
	s, err := e.m.UseSignals()
	if err != nil {
		t.Fatalf("UseSignals() = %v", err)
	}
	s.SignalEvent(servertest.IssuerA, "caep/session-revoked", "applied")
	s.SignalEvent(servertest.IssuerA, "caep/session-revoked", "applied")
	s.SignalEvent("", "unknown", "invalid")
	s.SignalPoll(servertest.IssuerA, "failure")
	w := do(e.handler, httptestGet("/metrics"))
	for _, want := range []string{
		`jwksverify_signal_events_total{event="caep/session-revoked",issuer="` + servertest.IssuerA + `",result="applied"} 2`,
		`jwksverify_signal_events_total{event="unknown",issuer="unknown",result="invalid"} 1`,
		`jwksverify_ssf_polls_total{issuer="` + servertest.IssuerA + `",result="failure"} 1`,
	} {
		if !strings.Contains(w.Body.String(), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, tc := range []struct {
		name   string
		labels []string
	}{
		{"jwksverify_signal_events_total", []string{"`issuer`", "`event`", "`result`", "| counter |"}},
		{"jwksverify_ssf_polls_total", []string{"`issuer`", "`result`", "`success`", "`failure`", "| counter |"}},
	} {
		row := servertest.TableRow(servertest.APIDoc(t, apiDoc), "`"+tc.name+"`")
		for _, l := range tc.labels {
			if !strings.Contains(row, l) {
				t.Errorf("docs/API.md row %q of %s lacks %s", row, tc.name, l)
			}
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

// TestSSFPollFailing: jwksverify_ssf_poll_failing is 1 from a failed poll
// to the next successful one, whatever the time between them (the alert
// reads it, so that a poller waiting an hour between polls neither flaps
// nor goes unseen), and has no series once the issuer's stream is no
// longer polled.
func TestSSFPollFailing(t *testing.T) {
	const series = `jwksverify_ssf_poll_failing{issuer="` + servertest.IssuerA + `"}`
	for _, tc := range []struct {
		name  string
		polls []string // results; "stopped" for SignalPollStopped
		want  string   // the value, "" for no series
	}{
		{"failed", []string{"failure"}, "1"},
		{"failed-twice", []string{"failure", "failure"}, "1"},
		{"recovered", []string{"failure", "success"}, "0"},
		{"failing-again", []string{"success", "failure"}, "1"},
		{"fine", []string{"success", "success"}, "0"},
		{"stopped-while-failing", []string{"failure", "stopped"}, ""},
		{"never-polled", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			s, err := e.m.UseSignals()
			if err != nil {
				t.Fatalf("UseSignals() = %v", err)
			}
			for _, r := range tc.polls {
				if r == "stopped" {
					s.SignalPollStopped(servertest.IssuerA)
					continue
				}
				s.SignalPoll(servertest.IssuerA, r)
			}
			body := do(e.handler, httptestGet("/metrics")).Body.String()
			got := ""
			for line := range strings.SplitSeq(body, "\n") {
				if v, ok := strings.CutPrefix(line, series+" "); ok {
					got = v
				}
			}
			if got != tc.want {
				t.Errorf("%s = %q, want %q", series, got, tc.want)
			}
		})
	}
	row := servertest.TableRow(servertest.APIDoc(t, apiDoc), "`jwksverify_ssf_poll_failing`")
	for _, l := range []string{"`issuer`", "| gauge |"} {
		if !strings.Contains(row, l) {
			t.Errorf("docs/API.md row %q lacks %s", row, l)
		}
	}
}
