package proxyconfig

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/request"
)

var update = flag.Bool("update", false, "rewrite deploy/'s proxy files from testdata/config/example.yaml")

const (
	repoRoot      = "../../../.."
	exampleConfig = repoRoot + "/testdata/config/example.yaml"
)

// deployFiles are the proxy files in deploy/ that are this package's output.
var deployFiles = map[request.Proxy]string{
	request.Nginx:   "deploy/nginx/nginx.conf",
	request.Caddy:   "deploy/caddy/Caddyfile",
	request.Traefik: "deploy/traefik/traefik.yaml",
	request.Envoy:   "deploy/envoy/envoy.yaml",
}

func noEnv(string) (string, bool) { return "", false }

func loadPlan(t *testing.T, yaml string) *config.Plan {
	t.Helper()
	p, err := config.Parse([]byte(yaml), t.TempDir(), config.Overrides{NoServerSecrets: true}, noEnv)
	if err != nil {
		t.Fatalf("config.Parse() = %v", err)
	}
	return p
}

// TestDeployFiles: the committed proxy files are a fresh generation for the
// example configuration with forward_auth.proxy set to their proxy (-update
// rewrites them).
func TestDeployFiles(t *testing.T) {
	for px, file := range deployFiles {
		t.Run(string(px), func(t *testing.T) {
			plan, err := config.Load(exampleConfig, config.Overrides{NoServerSecrets: true}, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			plan.Server.Proxy = px
			in, err := FromPlan(plan, px)
			if err != nil {
				t.Fatalf("FromPlan() = %v", err)
			}
			var b bytes.Buffer
			if err := Write(&b, in); err != nil {
				t.Fatalf("Write() = %v", err)
			}
			path := filepath.Join(repoRoot, file)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, b.Bytes()) {
				t.Errorf("%s differs from `jwksverify proxy-config %s` for %s with forward_auth.proxy: %s; regenerate with go test ./cmd/jwksverify/internal/proxyconfig -run TestDeployFiles -update", file, px, exampleConfig, px)
			}
		})
	}
}

// threeHeaders names three claim headers over two issuers, one of them
// named by both.
const threeHeaders = `listen: 127.0.0.1:8181
issuers:
  - issuer: https://a.example.com/
    jwks_url: https://a.example.com/jwks
    claims_to_headers: {sub: X-Auth-Subject, scope: x-auth-scope}
    refresh: {fetch_timeout: 30s, unknown_kid_wait: 2s}
  - issuer: https://b.example.com/
    jwks_url: https://b.example.com/jwks
    claims_to_headers: {sub: X-Auth-Subject, email: X-Auth-Email}
`

func TestClaimHeaders(t *testing.T) {
	got := ClaimHeaders(loadPlan(t, threeHeaders))
	want := []string{"X-Auth-Email", "X-Auth-Scope", "X-Auth-Subject"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ClaimHeaders() = %q, want %q", got, want)
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       time.Duration
	}{
		// 30s fetch + 2s wait, above the server's write timeout (10s + 1s +
		// 2.5s of waits + 10s), plus a second.
		{"long-fetch", threeHeaders, 33 * time.Second},
		{"defaults", "issuers:\n  - {issuer: https://a.example.com/, jwks_url: https://a.example.com/jwks}\n", 23 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := loadPlan(t, tc.yaml)
			if got := Timeout(p); got != tc.want {
				t.Errorf("Timeout() = %v, want %v", got, tc.want)
			}
			if got := Timeout(p); got <= p.HTTP.Write {
				t.Errorf("Timeout() = %v, not above the server's write timeout %v", got, p.HTTP.Write)
			}
		})
	}
}

func TestFromPlanProxy(t *testing.T) {
	tests := []struct {
		name    string
		preset  string // forward_auth.proxy
		px      request.Proxy
		wantErr error
	}{
		{"unset", "", request.Nginx, nil},
		{"same", "caddy", request.Caddy, nil},
		{"mismatch", "nginx", request.Caddy, ErrMismatch},
		{"traefik-for-caddy", "traefik", request.Caddy, ErrMismatch},
		{"none", "", request.None, ErrProxy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := loadPlan(t, threeHeaders+"forward_auth: {proxy: \""+tc.preset+"\"}\n")
			_, err := FromPlan(p, tc.px)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("FromPlan() = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestWriteHeaders: every proxy's file clears and copies every claim
// header, and sets every original-request header its preset reads.
func TestWriteHeaders(t *testing.T) {
	p := loadPlan(t, threeHeaders)
	for _, px := range []request.Proxy{request.Nginx, request.Caddy, request.Traefik, request.Envoy} {
		t.Run(string(px), func(t *testing.T) {
			in, err := FromPlan(p, px)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Write(&b, in); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			var want []string
			for _, h := range in.ClaimHeaders {
				v := strings.ReplaceAll(strings.ToLower(h), "-", "_")
				switch px {
				case request.Nginx:
					want = append(want, "proxy_set_header "+h+` "";`, "auth_request_set $jwksverify_"+v+" $upstream_http_"+v+";", "proxy_set_header "+h+" $jwksverify_"+v+";")
				case request.Caddy:
					want = append(want, "request_header -"+h+"\n")
				case request.Traefik:
					want = append(want, h+`: ""`, "- "+h+"\n")
				case request.Envoy:
					want = append(want, "- remove: "+strings.ToLower(h)+"\n", "- exact: "+strings.ToLower(h)+"\n")
				}
			}
			switch px {
			case request.Nginx:
				want = append(want, "proxy_read_timeout 33s;", "listen 127.0.0.1:8000;", "server 127.0.0.1:8181;", "return 503 ")
			case request.Caddy:
				want = append(want, "copy_headers X-Auth-Email X-Auth-Scope X-Auth-Subject\n", "response_header_timeout 33s", "http://127.0.0.1:8000 {", "bind 127.0.0.1\n")
			case request.Envoy:
				want = append(want, "timeout: 33s", "{address: 127.0.0.1, port_value: 8000}", "{address: 127.0.0.1, port_value: 8181}", "status_on_error: {code: ServiceUnavailable}")
			case request.Traefik:
				want = append(want, "trustForwardHeader: false", "address: http://127.0.0.1:8181/v1/authz")
			}
			if h, ok := px.Headers(); ok {
				want = append(want, h.Method, h.URI, h.Host, h.Proto)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("proxy-config %s lacks %q:\n%s", px, w, out)
				}
			}
			if strings.Contains(out, "0.0.0.0") {
				t.Errorf("proxy-config %s binds 0.0.0.0", px)
			}
		})
	}
}

func TestDialable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{":8080", "127.0.0.1:8080"},
		{"0.0.0.0:8080", "127.0.0.1:8080"},
		{"[::]:8080", "127.0.0.1:8080"},
		{"10.0.0.1:8080", "10.0.0.1:8080"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
	} {
		if got := dialable(tc.in); got != tc.want {
			t.Errorf("dialable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestClaimHeadersOfPolicies: a policy's own claims_to_headers are cleared
// and copied too, or a client could forge them past the proxy.
func TestClaimHeadersOfPolicies(t *testing.T) {
	got := ClaimHeaders(loadPlan(t, threeHeaders+`policies:
  - {name: tenants, claims_to_headers: {tid: X-Auth-Tenant}}
`))
	want := []string{"X-Auth-Email", "X-Auth-Scope", "X-Auth-Subject", "X-Auth-Tenant"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ClaimHeaders() = %q, want %q", got, want)
	}
}

// TestWriteNginxClientCert: with mtls.client_cert_header, nginx sends the
// certificate it verified to the auth call, and never the client's header
// to the application; without it, neither line is written.
func TestWriteNginxClientCert(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		want        bool
	}{{"set", "mtls: {client_cert_header: x-client-cert}\n", true}, {"unset", "", false}} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := FromPlan(loadPlan(t, threeHeaders+tt.extra), request.Nginx)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Write(&b, in); err != nil {
				t.Fatal(err)
			}
			for _, line := range []string{"proxy_set_header X-Client-Cert $ssl_client_escaped_cert;", `proxy_set_header X-Client-Cert "";`} {
				if got := strings.Contains(b.String(), line); got != tt.want {
					t.Errorf("output has %q: %t, want %t", line, got, tt.want)
				}
			}
		})
	}
}

// TestWriteClientCertCleared: with mtls.client_cert_header, no proxy's file
// lets a client's own copy of the header reach jwksverify (which would
// take a public certificate sent by anyone for the one the proxy verified,
// and accept a stolen certificate-bound token) or the application; Caddy
// sends the certificate it verified instead.
func TestWriteClientCertCleared(t *testing.T) {
	for _, tt := range []struct {
		px   request.Proxy
		want []string
	}{
		{request.Nginx, []string{"proxy_set_header X-Client-Cert $ssl_client_escaped_cert;", `proxy_set_header X-Client-Cert "";`}},
		{request.Caddy, []string{"request_header -X-Client-Cert\n", "header_up X-Client-Cert {http.request.tls.client.certificate_der_base64}\n"}},
		{request.Traefik, []string{`X-Client-Cert: ""`}},
		{request.Envoy, []string{"- remove: x-client-cert\n"}},
	} {
		t.Run(string(tt.px), func(t *testing.T) {
			out := writeFor(t, threeHeaders+"mtls: {client_cert_header: x-client-cert}\n", tt.px)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("proxy-config %s lacks %q:\n%s", tt.px, w, out)
				}
			}
		})
	}
}

// TestWriteStripAuthorization: with forward_auth.strip_authorization, the
// nginx, Caddy and Traefik files drop Authorization before the application
// (integration/proxy_test.go runs nginx and Caddy); without it they do not.
func TestWriteStripAuthorization(t *testing.T) {
	for _, tt := range []struct {
		px   request.Proxy
		want []string
	}{
		{request.Nginx, []string{`proxy_set_header Authorization "";`}},
		{request.Caddy, []string{"request_header -Authorization\n"}},
		{request.Traefik, []string{"middlewares: [jwksverify-clear, jwksverify, jwksverify-strip]", "jwksverify-strip:\n      headers:\n        customRequestHeaders:\n          Authorization: \"\""}},
	} {
		for _, strip := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s-%t", tt.px, strip), func(t *testing.T) {
				out := writeFor(t, threeHeaders+fmt.Sprintf("forward_auth: {strip_authorization: %t}\n", strip), tt.px)
				for _, w := range tt.want {
					if got := strings.Contains(out, w); got != strip {
						t.Errorf("proxy-config %s has %q: %t, want %t:\n%s", tt.px, w, got, strip, out)
					}
				}
			})
		}
	}
}

// writeFor returns proxy-config px for the configuration yaml.
func writeFor(t *testing.T, yaml string, px request.Proxy) string {
	t.Helper()
	in, err := FromPlan(loadPlan(t, yaml), px)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWriteClaimHeaderTwins: Caddy, Traefik and Envoy pass headers with
// underscores on, and a CGI or FastCGI upstream reads X_Auth_Subject as
// X-Auth-Subject (both HTTP_X_AUTH_SUBJECT): their files drop a client's
// underscore twins of every claim header too (nginx drops such headers
// itself: ignore_invalid_headers).
func TestWriteClaimHeaderTwins(t *testing.T) {
	for _, tt := range []struct {
		px   request.Proxy
		want []string
	}{
		{request.Caddy, []string{"request_header -X_auth_subject\n", "request_header -X-Auth_subject\n", "request_header -X_auth-Subject\n"}},
		{request.Traefik, []string{`X_auth_subject: ""`, `X-Auth_subject: ""`}},
		{request.Envoy, []string{"- remove: x_auth_subject\n", "- remove: x-auth_subject\n"}},
	} {
		t.Run(string(tt.px), func(t *testing.T) {
			out := writeFor(t, threeHeaders, tt.px)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("proxy-config %s lacks %q:\n%s", tt.px, w, out)
				}
			}
		})
	}
}

// TestWriteEnvoySendsDecidedHeaders: Envoy sends ext_authz only the headers
// allowed_headers lists, so both listeners must list every method-override
// header (jwksverify decides the request for every method they name; an
// override jwksverify never saw would reach the application undecided) and
// the DPoP proof.
func TestWriteEnvoySendsDecidedHeaders(t *testing.T) {
	out := writeFor(t, threeHeaders+"forward_auth: {proxy: envoy}\n", request.Envoy)
	for _, h := range append(request.OverrideHeaders(), "DPoP") {
		want := "- exact: " + strings.ToLower(h) + "\n"
		if n := strings.Count(out, want); n != 2 {
			t.Errorf("proxy-config envoy lists %q in allowed_headers %d times, want 2 (both listeners)", want, n)
		}
	}
}

// TestWriteMint: with a mint section, every proxy sends the application
// the minted token from jwksverify's answer: nginx through a map that
// keeps the client's Authorization when nothing was minted, Caddy through
// a response matcher on the header (never copy_headers, whose Caddy 2.6
// placeholder would reach routes that mint nothing), Traefik and Envoy by
// their lists of answer headers; another mint.header carries the bare JWT
// and a client's copy of it is dropped. Without mint none of it is written.
func TestWriteMint(t *testing.T) {
	const mintSection = "mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1%s}\n"
	for _, tt := range []struct {
		name   string
		px     request.Proxy
		header string // mint.header ("" default)
		want   []string
	}{
		{"nginx", request.Nginx, "", []string{"auth_request_set $jwksverify_minted $upstream_http_authorization;",
			"map $jwksverify_minted $jwksverify_authorization {\n        \"\"      $http_authorization;", "proxy_set_header Authorization $jwksverify_authorization;"}},
		{"nginx-other-header", request.Nginx, "X-Internal-Token", []string{"auth_request_set $jwksverify_minted $upstream_http_x_internal_token;",
			"proxy_set_header X-Internal-Token $jwksverify_minted;"}},
		{"caddy", request.Caddy, "", []string{"@jwksverify_minted {\n\t\t\t\tstatus 2xx\n\t\t\t\theader Authorization *\n\t\t\t}",
			"request_header Authorization {http.reverse_proxy.header.Authorization}", "@jwksverify_allowed status 2xx"}},
		{"caddy-other-header", request.Caddy, "X-Internal-Token", []string{"request_header -X-Internal-Token\n", "request_header -X_internal_token\n",
			"request_header X-Internal-Token {http.reverse_proxy.header.X-Internal-Token}"}},
		{"traefik", request.Traefik, "", []string{"          - Authorization\n"}},
		{"envoy", request.Envoy, "", []string{"replaces the request's.\n                    - exact: authorization\n"}},
	} {
		for _, minting := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s-%t", tt.name, minting), func(t *testing.T) {
				yaml := threeHeaders
				if minting {
					h := ""
					if tt.header != "" {
						h = ", header: " + tt.header
					}
					yaml += fmt.Sprintf(mintSection, h)
				}
				out := writeFor(t, yaml, tt.px)
				for _, w := range tt.want {
					if got := strings.Contains(out, w); got != minting {
						t.Errorf("proxy-config %s has %q: %t, want %t:\n%s", tt.px, w, got, minting, out)
					}
				}
				if tt.px == request.Caddy && minting && strings.Contains(out, "\t\t\tcopy_headers ") {
					t.Errorf("proxy-config caddy with mint uses copy_headers:\n%s", out)
				}
			})
		}
	}
}
