package extauthz

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// Bounds of the metadata cache: entries, and bytes (an entry's encoded
// metadata, the claims and header of the Result it keeps alive, and about
// metaEntryOverhead of map and slice headers).
const (
	metaMaxEntries    = 8192
	metaMaxBytes      = 16 << 20
	metaEntryOverhead = 96
	// okAnswerOverhead is what an entry's OK answer adds: its messages;
	// the header values are the Result's own strings.
	okAnswerOverhead = 512
)

// metaCache keeps, for recent verified tokens, the protobuf encoding of
// their part of the OK answer's dynamic_metadata: the "issuer" and
// "claims" entries of the jwksverify Struct. Converting a claims set to a
// Struct and marshaling it were most of the cost of a Check whose token is
// a token-cache hit; a hit hands out the same *verify.Result every time, so
// the Result's address is the key. A key is a strong reference: a Result
// stays alive while its entry does, so an address is never reused under a
// live entry. Entries are evicted at random when a bound is reached. The
// bytes are shared by every answer built from them and never modified.
// An entry also keeps the last OK answer built with its Result (okAnswer),
// which a later Check whose decision asks for the same answer returns
// as is.
type metaCache struct {
	// keep reports whether an encoding for res is worth keeping; nil means
	// res.Cached() (tests set it to build entries without a verifier).
	keep    func(res *verify.Result) bool
	mu      sync.RWMutex
	entries map[*verify.Result]*metaEntry
	bytes   int64
}

type metaEntry struct {
	raw  []byte
	size int64
	ok   atomic.Pointer[okAnswer]
}

// fields returns the wire encoding of the Struct entries "issuer" and
// "claims" for res (numbers as doubles, as protobuf's Value holds them),
// without "claims" when they are not a JSON object (never the case for a
// verified Result).
func (c *metaCache) fields(res *verify.Result) []byte {
	_, raw := c.entry(res)
	return raw
}

// entry returns the entry of res, made if need be, and its encoding (see
// fields); the entry is nil when res is not kept.
func (c *metaCache) entry(res *verify.Result) (*metaEntry, []byte) {
	if keep := c.keep; keep == nil && !res.Cached() || keep != nil && !keep(res) {
		// Made for this call (token cache off or full, an opaque token):
		// never asked for again, so not kept.
		return nil, encodeFields(res)
	}
	c.mu.RLock()
	e, ok := c.entries[res]
	c.mu.RUnlock()
	if ok {
		return e, e.raw
	}
	raw := encodeFields(res)
	// An entry keeps its Result alive too: its claims and header count.
	size := int64(len(raw)+len(res.Claims)+len(res.Header)) + metaEntryOverhead + okAnswerOverhead
	if size > metaMaxBytes/16 {
		return nil, raw // too large to keep: built for this answer only
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[*verify.Result]*metaEntry)
	}
	if e, ok := c.entries[res]; ok {
		return e, e.raw // another Check stored it meanwhile
	}
	for len(c.entries) >= metaMaxEntries || c.bytes+size > metaMaxBytes {
		for k, old := range c.entries { // map iteration starts at random
			delete(c.entries, k)
			c.bytes -= old.size
			break
		}
	}
	e = &metaEntry{raw: raw, size: size}
	c.entries[res] = e
	c.bytes += size
	return e, raw
}

// exactNumbers returns v, a value decoded with UseNumber, for a Struct: a
// number as a double, but an integer a double cannot hold exactly (beyond
// 2^53: a snowflake user id) as the string of its literal, so that two
// different ids never reach Envoy as one number (9007199254740993 was
// 9007199254740992), whatever its spelling (9007199254740993.0,
// 9.007199254740993e15); a number beyond a double's range likewise.
func exactNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = exactNumbers(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = exactNumbers(e)
		}
		return v
	case json.Number:
		if len(v) > jsonscan.MaxFloatLiteral {
			return string(v) // strconv.ParseFloat would misread it
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return string(v) // beyond a double's range
		}
		if !strings.ContainsAny(string(v), ".eE") {
			if i, ok := new(big.Int).SetString(string(v), 10); ok {
				if exact, _ := big.NewFloat(f).Int(nil); exact.Cmp(i) != 0 {
					return string(v)
				}
			}
		} else if math.Abs(f) >= 1<<53 {
			// Spelled with a fraction or an exponent: from 2^53 up a
			// double skips integers, so one that is an integer must be
			// held exactly too. |f| is below 2^1024, so the literal's
			// exponent is bounded by its own length plus 308.
			if r, ok := new(big.Rat).SetString(string(v)); ok && r.IsInt() {
				if exact := new(big.Rat).SetFloat64(f); exact == nil || exact.Cmp(r) != 0 {
					return string(v)
				}
			}
		}
		return f
	}
	return v
}

// encodeFields marshals a Struct holding res's "issuer" and "claims". A
// Struct's only field is its map, so the encoding is exactly the map's
// entries, which another Struct can carry as unknown fields: a decoder
// reads them as entries of its own map.
func encodeFields(res *verify.Result) []byte {
	fields := map[string]*structpb.Value{"issuer": structpb.NewStringValue(res.Issuer)}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(res.Claims))
	dec.UseNumber()
	if err := dec.Decode(&m); err == nil && m != nil {
		if claims, err := structpb.NewStruct(exactNumbers(m).(map[string]any)); err == nil {
			fields["claims"] = structpb.NewStructValue(claims)
		}
	}
	// Deterministic: map entries in key order, so that equal claims encode
	// to equal bytes (proto.Marshal ranges over maps in random order).
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(&structpb.Struct{Fields: fields})
	if err != nil {
		return nil // a Struct of valid UTF-8 strings always marshals
	}
	return raw
}

// dynamicMetadata is the OK answer's metadata under [MetadataNamespace]:
// the verified token's iss, the policy that allowed it ("" for none) and
// its claims — what Envoy's later filters (RBAC, Lua, header mutation)
// read as filter metadata. An anonymous request has no issuer and no
// claims. The issuer and claims entries are the cached encoding of
// [metaCache], attached as unknown fields of the jwksverify Struct.
func (a *authzGRPC) dynamicMetadata(d server.Decision) *structpb.Struct {
	var raw []byte
	if d.Result != nil {
		raw = a.meta.fields(d.Result)
	}
	return metadataStruct(d, raw)
}

// metadataStruct is dynamicMetadata with the Result's encoding raw (nil
// without a Result).
func metadataStruct(d server.Decision, raw []byte) *structpb.Struct {
	inner := &structpb.Struct{Fields: map[string]*structpb.Value{"policy": structpb.NewStringValue(d.Policy)}}
	if d.Result != nil {
		inner.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{MetadataNamespace: structpb.NewStructValue(inner)}}
}
