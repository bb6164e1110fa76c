package extauthz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// decodeMetadata is what Envoy reads: the OK answer's dynamic_metadata
// marshaled and decoded again, the jwksverify Struct's fields.
func decodeMetadata(t *testing.T, md *structpb.Struct) map[string]*structpb.Value {
	t.Helper()
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var got structpb.Struct
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return got.GetFields()[MetadataNamespace].GetStructValue().GetFields()
}

// TestDynamicMetadata: on the wire the OK answer's metadata holds policy,
// issuer and the claims as protobuf reads them from JSON (numbers as
// doubles), but an integer a double cannot hold exactly as the string of
// its literal (9007199254740993 was 9007199254740992: two snowflake ids
// became one), for a fresh and for a cached Result alike; an anonymous
// answer has the policy only.
func TestDynamicMetadata(t *testing.T) {
	claims := json.RawMessage(`{"iss":"https://idp.example.com/","sub":"u1","n":3,"big":9007199254740993,"ids":[9007199254740992,-9007199254740993,1e400],"f":1.5,"e":2e3,"ok":true,"nil":null,"groups":["a","b"],"o":{"k":"v","id":1152921504606846977}}`)
	wantClaims := &structpb.Struct{}
	if err := wantClaims.UnmarshalJSON([]byte(`{"iss":"https://idp.example.com/","sub":"u1","n":3,"big":"9007199254740993","ids":[9007199254740992,"-9007199254740993","1e400"],"f":1.5,"e":2000,"ok":true,"nil":null,"groups":["a","b"],"o":{"k":"v","id":"1152921504606846977"}}`)); err != nil {
		t.Fatal(err)
	}
	a := &authzGRPC{}
	res := &verify.Result{Issuer: "https://idp.example.com/", Claims: claims}
	for _, name := range []string{"fresh", "cached"} {
		t.Run(name, func(t *testing.T) {
			md := decodeMetadata(t, a.dynamicMetadata(server.Decision{Result: res, Policy: "read"}))
			if len(md) != 3 || md["policy"].GetStringValue() != "read" || md["issuer"].GetStringValue() != res.Issuer {
				t.Fatalf("metadata = %v, want policy, issuer and claims", md)
			}
			if got := md["claims"].GetStructValue(); !proto.Equal(got, wantClaims) {
				t.Errorf("claims = %v, want %v", got, wantClaims)
			}
		})
	}
	md := decodeMetadata(t, a.dynamicMetadata(server.Decision{Anonymous: true, Policy: "public"}))
	if len(md) != 1 || md["policy"].GetStringValue() != "public" {
		t.Errorf("anonymous metadata = %v, want the policy only", md)
	}
}

// TestMetaCache: a Result's encoding is built once and shared by later
// answers for the same Result (the key is the Result, not equal claims);
// the cache never holds more than its bounds; a Result too large to keep
// is encoded for its answer only.
func TestMetaCache(t *testing.T) {
	keepAll := func(*verify.Result) bool { return true }
	c := metaCache{keep: keepAll}
	res := &verify.Result{Claims: json.RawMessage(`{"sub":"u1"}`)}
	first := c.fields(res)
	if again := c.fields(res); &again[0] != &first[0] {
		t.Error("second fields() for the same Result encoded again, want the stored bytes")
	}
	if other := c.fields(&verify.Result{Claims: res.Claims}); &other[0] == &first[0] || !bytes.Equal(other, first) {
		t.Error("another Result with equal claims: want its own, equal encoding")
	}

	t.Run("not-cached-not-kept", func(t *testing.T) {
		// A Result the token cache did not keep is made for one call.
		var c metaCache
		if raw := c.fields(res); len(raw) == 0 || len(c.entries) != 0 {
			t.Errorf("fields() of an uncached Result: %d bytes, %d entries kept; want its encoding, none kept", len(raw), len(c.entries))
		}
	})

	t.Run("bounds", func(t *testing.T) {
		c := metaCache{keep: keepAll}
		for i := range metaMaxEntries + 100 {
			c.fields(&verify.Result{Claims: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		}
		if n := len(c.entries); n > metaMaxEntries {
			t.Errorf("entries = %d, want at most %d", n, metaMaxEntries)
		}
		big := json.RawMessage(`{"g":"` + strings.Repeat("x", 100<<10) + `"}`)
		for range 400 {
			c.fields(&verify.Result{Claims: big})
		}
		if c.bytes > metaMaxBytes {
			t.Errorf("bytes = %d, want at most %d", c.bytes, metaMaxBytes)
		}
		var sum int64
		for _, e := range c.entries {
			sum += e.size
		}
		if sum != c.bytes {
			t.Errorf("bytes = %d, entries sum to %d", c.bytes, sum)
		}
		huge := &verify.Result{Claims: json.RawMessage(`{"g":"` + strings.Repeat("x", metaMaxBytes/16) + `"}`)}
		if len(c.fields(huge)) < metaMaxBytes/16 {
			t.Error("fields() of a huge claims set is short, want it encoded")
		}
		if _, kept := c.entries[huge]; kept {
			t.Error("a claims set over the per-entry bound was kept")
		}
	})

	t.Run("not-an-object", func(t *testing.T) {
		a := &authzGRPC{}
		for _, s := range []string{`null`, `[1]`, `"x"`, `{`} {
			md := decodeMetadata(t, a.dynamicMetadata(server.Decision{Result: &verify.Result{Issuer: "i", Claims: json.RawMessage(s)}}))
			if _, ok := md["claims"]; ok || md["issuer"].GetStringValue() != "i" {
				t.Errorf("claims %s: metadata = %v, want issuer and no claims", s, md)
			}
		}
	})

	t.Run("token-cache-hit-kept", func(t *testing.T) {
		e := newEnv(t, envConfig{tokenCache: 100})
		tok := mint(claims(nil))
		first, err := e.v.Verify(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		hit, err := e.v.Verify(context.Background(), tok)
		if err != nil || hit != first || !hit.Cached() {
			t.Fatalf("second Verify() = %p (cached %v), %v; want the first's cached Result %p", hit, hit.Cached(), err, first)
		}
		var c metaCache
		c.fields(first)
		if _, kept := c.entries[hit]; !kept || len(c.entries) != 1 {
			t.Errorf("entries = %d, want the token cache's Result kept", len(c.entries))
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		a := &authzGRPC{meta: metaCache{keep: keepAll}}
		results := make([]*verify.Result, 64)
		for i := range results {
			results[i] = &verify.Result{Claims: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 500 {
					n := (g + i) % len(results)
					md := decodeMetadata(t, a.dynamicMetadata(server.Decision{Result: results[n]}))
					if md["claims"].GetStructValue().GetFields()["i"].GetNumberValue() != float64(n) {
						t.Errorf("metadata = %v for result %d", md, n)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}
