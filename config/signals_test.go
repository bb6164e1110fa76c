package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/signals"
)

// rev is a revocation store, which signals need.
const rev = "state_dir: state\nrevocation: {store: memory}\n"

// signalsDoc is an issuer with backchannel_logout and ssf (push and poll)
// whose files are in dir, then extra lines under the issuer.
func signalsDoc(t *testing.T, dir, extra string) string {
	t.Helper()
	for name, content := range map[string]string{"push": "push-bearer-0123456789abcdef\n", "poll": "poll-bearer\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return rev + disc + `    backchannel_logout: {audiences: [web-app], revoke: subject}
    ssf:
      audiences: [https://api.example.com/]
      push: {bearer_token_file: push}
      poll: {url: "https://ssf.example.com/poll", bearer_token_file: poll, interval: 30s, max_events: 50}
` + extra
}

func TestPlanSignals(t *testing.T) {
	dir := t.TempDir()
	p, err := Parse([]byte(signalsDoc(t, dir, "")), dir, Overrides{}, noEnv)
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	if p.Signals == nil || len(p.Signals.Issuers) != 1 || len(p.Signals.Polls) != 1 {
		t.Fatalf("Signals = %+v, want one issuer and one poll", p.Signals)
	}
	is := p.Signals.Issuers[0]
	if is.Issuer != "https://idp.example.com/" || is.Logout == nil || is.Logout.Revoke != signals.RevokeSubject ||
		is.Logout.Audiences[0] != "web-app" || is.SSF == nil || is.SSF.PushBearer != "push-bearer-0123456789abcdef" {
		t.Errorf("Signals.Issuers[0] = %+v", is)
	}
	po := p.Signals.Polls[0]
	if po.URL != "https://ssf.example.com/poll" || po.BearerToken != "poll-bearer" || po.Interval != 30*time.Second ||
		po.MaxEvents != 50 || po.Issuer != "https://idp.example.com/" || po.InsecureAllowHTTP {
		t.Errorf("Signals.Polls[0] = %+v", po)
	}
	if p := mustParse(t, disc); p.Signals != nil {
		t.Errorf("Signals without backchannel_logout or ssf = %+v, want nil", p.Signals)
	}
	// A default revoke mode, push only, an empty poll url: no poller.
	p = mustParse(t, rev+disc+"    backchannel_logout: {audiences: [web-app]}\n    ssf: {audiences: [a], poll: {url: \"\"}}\n")
	if p.Signals.Issuers[0].Logout.Revoke != signals.RevokeSession || len(p.Signals.Polls) != 0 || p.Signals.Issuers[0].SSF.PushBearer != "" {
		t.Errorf("Signals = %+v", p.Signals)
	}
}

func TestPlanSignalsRefuses(t *testing.T) {
	tests := []struct{ name, extra, wantErr string }{
		{"logout-no-audiences", "    backchannel_logout: {revoke: session}\n", "issuers[0].backchannel_logout.audiences: at least one is required"},
		{"logout-bad-mode", "    backchannel_logout: {audiences: [a], revoke: all}\n", "issuers[0].backchannel_logout.revoke"},
		{"ssf-no-audiences", "    ssf: {push: {bearer_token_file: push}}\n", "issuers[0].ssf.audiences"},
		{"push-no-file", "    ssf: {audiences: [a], push: {}}\n", "issuers[0].ssf.push.bearer_token_file: required"},
		{"push-missing-file", "    ssf: {audiences: [a], push: {bearer_token_file: nope}}\n", "issuers[0].ssf.push.bearer_token_file"},
		{"push-short", "    ssf: {audiences: [a], push: {bearer_token_file: short}}\n", "issuers[0].ssf.push.bearer_token_file"},
		{"poll-http", "    ssf: {audiences: [a], poll: {url: \"http://ssf.example.com/poll\"}}\n", "issuers[0].ssf.poll.url"},
		{"poll-interval", "    ssf: {audiences: [a], poll: {url: \"https://ssf.example.com/poll\", interval: 1ms}}\n", "issuers[0].ssf.poll.interval"},
		{"poll-keys-without-url", "    ssf: {audiences: [a], poll: {interval: 10s}}\n", "issuers[0].ssf.poll.url"},
		{"unknown-key", "    ssf: {audiences: [a], pull: {}}\n", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range map[string]string{"push": "push-bearer-0123456789abcdef", "short": "abc"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Parse([]byte(rev+disc+tt.extra), dir, Overrides{}, noEnv)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "push-bearer-0123456789abcdef") {
				t.Errorf("the error %q repeats a bearer token", err)
			}
		})
	}
	t.Run("no-revocation-store", func(t *testing.T) {
		_, err := parse(t, disc+"    backchannel_logout: {audiences: [a]}\n")
		if err == nil || !strings.Contains(err.Error(), "issuers[0]: backchannel_logout and ssf store what they revoke") {
			t.Fatalf("Parse() = %v, want the revocation section asked for", err)
		}
	})
	t.Run("shared-bearer", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "push"), []byte("push-bearer-0123456789abcdef"), 0o600); err != nil {
			t.Fatal(err)
		}
		doc := rev + disc + "    ssf: {audiences: [a], push: {bearer_token_file: push}}\n" +
			"  - issuer: https://other.example.com/\n    discovery: true\n    ssf: {audiences: [a], push: {bearer_token_file: push}}\n"
		_, err := Parse([]byte(doc), dir, Overrides{}, noEnv)
		if !errors.Is(err, signals.ErrInvalidOptions) || !strings.Contains(err.Error(), "issuers[1].ssf.push.bearer_token_file") {
			t.Fatalf("Parse() = %v, want issuers[1].ssf.push.bearer_token_file refused", err)
		}
	})
}

// TestPlanPollTrustsIssuerCAFile: an issuer's ca_file, which its discovery,
// JWKS and introspection calls trust, is what its SSF poll trusts too (a
// transmitter behind the IdP's private CA was polled against the system's
// roots and failed every poll).
func TestPlanPollTrustsIssuerCAFile(t *testing.T) {
	dir := t.TempDir()
	p, err := Parse([]byte(signalsDoc(t, dir, "    ca_file: ca.pem\n")), dir, Overrides{}, noEnv)
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	if got, want := p.Signals.Polls[0].CAFile, filepath.Join(dir, "ca.pem"); got != want {
		t.Errorf("Signals.Polls[0].CAFile = %q, want %q", got, want)
	}
}

// TestPlanSignalsRefusedWhereNoSignalIsTaken: a {tenantid} template or a
// SPIFFE trust domain takes no signals (verify.VerifySigned answers
// wrong_issuer: a signal names one configured issuer exactly), yet such
// an issuer's backchannel_logout and ssf sections were planned: every
// logout token was answered 400, and every polled SET reported to its
// transmitter as invalid_issuer, which drops it — revocations lost while
// the configuration said they were received.
func TestPlanSignalsRefusedWhereNoSignalIsTaken(t *testing.T) {
	tests := []struct{ name, doc, wantErr string }{
		{"template-logout", "issuers:\n  - issuer: https://login.example.com/{tenantid}/v2.0\n    jwks_url: https://login.example.com/keys\n" +
			"    backchannel_logout: {audiences: [web-app]}\n", "issuers[0].backchannel_logout"},
		{"template-ssf", "issuers:\n  - issuer: https://login.example.com/{tenantid}/v2.0\n    jwks_url: https://login.example.com/keys\n" +
			"    ssf: {audiences: [a], poll: {url: \"https://ssf.example.com/poll\"}}\n", "issuers[0].ssf"},
		{"spiffe-logout", "issuers:\n  - spiffe: {trust_domain: example.org, bundle_url: https://bundle.example.org/}\n    audiences: [a]\n" +
			"    backchannel_logout: {audiences: [web-app]}\n", "issuers[0].backchannel_logout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(rev+tt.doc), t.TempDir(), Overrides{}, noEnv)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want %s refused", err, tt.wantErr)
			}
		})
	}
}

// TestPlanRecordsFilesReadOnce: a plan holds the content of the files it
// read once (the push and poll bearer tokens here), each with the hash of
// the bytes read, which is what FileHash gives while the file is unchanged
// (a watcher that compared a trimmed token's hash would reload forever):
// a bearer token rotated by writing its file is applied by loading the
// configuration again (cmd's watch), not left accepted until a SIGHUP.
func TestPlanRecordsFilesReadOnce(t *testing.T) {
	dir := t.TempDir()
	p, err := Parse([]byte(signalsDoc(t, dir, "")), dir, Overrides{}, noEnv)
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	for _, name := range []string{"push", "poll"} {
		path := filepath.Join(dir, name)
		want, err := FileHash(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := p.Secrets[path]; !ok || got != want {
			t.Errorf("Plan.Secrets[%s] = %q, %v; want %q (FileHash of the unchanged file)", name, got, ok, want)
		}
	}
}
