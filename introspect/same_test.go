package introspect_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
)

// TestSame: a reload keeps a client only for options that would build the
// same client.
func TestSame(t *testing.T) {
	base := introspect.Options{Issuer: "https://as.example/", URL: "https://as.example/introspect", MaxTTL: time.Minute}
	logger := slog.New(slog.DiscardHandler)
	hc := &http.Client{}
	tests := []struct {
		name   string
		change func(*introspect.Options)
		want   bool
	}{
		{"equal", func(*introspect.Options) {}, true},
		{"max-ttl", func(o *introspect.Options) { o.MaxTTL = 2 * time.Minute }, false},
		{"url", func(o *introspect.Options) { o.URL = "https://as.example/other" }, false},
		{"client-id", func(o *introspect.Options) { o.ClientID = "gw" }, false},
		{"endpoint-func", func(o *introspect.Options) { o.Endpoint = func() string { return "" } }, false},
		{"logger", func(o *introspect.Options) { o.Logger = logger }, false},
		{"http-client", func(o *introspect.Options) { o.HTTPClient = hc }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base
			tt.change(&b)
			if got := introspect.Same(base, b); got != tt.want {
				t.Errorf("Same() = %t, want %t", got, tt.want)
			}
		})
	}
	shared := base
	shared.Logger, shared.HTTPClient = logger, hc
	if !introspect.Same(shared, shared) {
		t.Errorf("Same() of the same logger and client = false, want true")
	}
}
