package jwks

import (
	"net/http"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestSame(t *testing.T) {
	secret := func(b []byte) *cache.Key {
		k, err := cache.NewKey(b, cache.KeyMeta{Kid: "s", Local: true})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := Options{Issuer: "https://a.example/", URL: "https://a.example/jwks", StaticKeys: []*cache.Key{secret(testkeys.Secret())}}
	tests := []struct {
		name   string
		change func(*Options)
		want   bool
	}{
		{"equal", func(*Options) {}, true},
		{"static-key-reread", func(o *Options) { o.StaticKeys = []*cache.Key{secret(testkeys.Secret())} }, true},
		{"static-key-changed", func(o *Options) { o.StaticKeys = []*cache.Key{secret(append(testkeys.Secret(), 'x'))} }, false},
		{"static-key-dropped", func(o *Options) { o.StaticKeys = nil }, false},
		{"url", func(o *Options) { o.URL = "https://a.example/other" }, false},
		{"issuer", func(o *Options) { o.Issuer = "https://b.example/" }, false},
		{"min-interval", func(o *Options) { o.MinInterval = 2 * time.Minute }, false},
		{"max-bytes", func(o *Options) { o.MaxBytes = 1 << 10 }, false},
		{"insecure", func(o *Options) { o.InsecureAllowHTTP = true }, false},
		{"client", func(o *Options) { o.Client = &http.Client{} }, false},
		{"clock", func(o *Options) { o.Now = time.Now }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base
			next.StaticKeys = append([]*cache.Key(nil), base.StaticKeys...)
			tt.change(&next)
			if got := Same(base, next); got != tt.want {
				t.Errorf("Same() = %v, want %v", got, tt.want)
			}
		})
	}
}
