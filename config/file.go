package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jwksverify/jwksverify/server"
)

// file is the YAML document exactly as written. Pointers tell an absent key
// (the default of the library that owns the value) from an explicit zero.
type file struct {
	Listen          *string              `yaml:"listen"`
	GRPCListen      *string              `yaml:"grpc_listen"`
	AdminListen     *string              `yaml:"admin_listen"`
	TLS             fileTLS              `yaml:"tls"`
	GRPCTLS         fileTLS              `yaml:"grpc_tls"`
	AdminTLS        fileTLS              `yaml:"admin_tls"`
	APIAuth         fileAPIAuth          `yaml:"api_auth"`
	ShutdownTimeout *duration            `yaml:"shutdown_timeout"`
	ShutdownDelay   *duration            `yaml:"shutdown_delay"`
	Issuers         []fileIssuer         `yaml:"issuers"`
	TokenCache      fileTokenCache       `yaml:"token_cache"`
	TokenSources    []server.TokenSource `yaml:"token_sources"` // keys: header, prefix, cookie, query
	ForwardAuth     fileForwardAuth      `yaml:"forward_auth"`
	StateDir        string               `yaml:"state_dir"`
	Log             fileLog              `yaml:"log"`
	Introspection   fileIntrospection    `yaml:"introspection"`
	Limits          fileLimits           `yaml:"limits"`
	Batch           fileBatch            `yaml:"batch"`
	Crypto          fileCrypto           `yaml:"crypto"`
	Policies        []filePolicy         `yaml:"policies"`
	Routes          []fileRoute          `yaml:"routes"`
	DefaultPolicy   string               `yaml:"default_policy"`
	ResourceMeta    *fileResourceMeta    `yaml:"resource_metadata"`
	DPoP            fileDPoP             `yaml:"dpop"`
	MTLS            fileMTLS             `yaml:"mtls"`
	Revocation      *fileRevocation      `yaml:"revocation"`
	Mint            *fileMint            `yaml:"mint"`
	Redis           fileRedis            `yaml:"redis"`
}

// fileRevocation is the revocation section: where entries are stored, how
// long they live, how stale a replica's copy may be.
type fileRevocation struct {
	Store        string    `yaml:"store"`
	Retention    *duration `yaml:"retention"`
	MaxStaleness *duration `yaml:"max_staleness"`
}

// fileRedis is the redis section: the one Redis client of DPoP replay,
// revocation and the shared introspection cache.
type fileRedis struct {
	URL                 string            `yaml:"url"`
	Sentinel            fileRedisSentinel `yaml:"sentinel"`
	Cluster             fileRedisCluster  `yaml:"cluster"`
	Username            string            `yaml:"username"`
	PasswordFile        string            `yaml:"password_file"`
	TLS                 fileRedisTLS      `yaml:"tls"`
	Timeout             *span             `yaml:"timeout"`
	PoolSize            *positive         `yaml:"pool_size"`
	AcknowledgeReplicas *int              `yaml:"acknowledge_replicas"`
}

type fileRedisSentinel struct {
	Master       string   `yaml:"master"`
	Addrs        []string `yaml:"addrs"`
	PasswordFile string   `yaml:"password_file"`
}

type fileRedisCluster struct {
	Addrs []string `yaml:"addrs"`
}

type fileRedisTLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

type filePolicy struct {
	Name            string            `yaml:"name"`
	Issuers         []string          `yaml:"issuers"`
	Scopes          fileScopes        `yaml:"scopes"`
	Claims          []fileClaim       `yaml:"claims"`
	Expression      string            `yaml:"expression"`
	AllowAnonymous  bool              `yaml:"allow_anonymous"`
	ClaimsToHeaders map[string]string `yaml:"claims_to_headers"`
	Mint            *filePolicyMint   `yaml:"mint"`
}

type fileScopes struct {
	All []string `yaml:"all"`
	Any []string `yaml:"any"`
}

type fileClaim struct {
	Claim  string         `yaml:"claim"`
	AnyOf  []matcherValue `yaml:"any_of"`
	Equals *matcherValue  `yaml:"equals"`
}

// matcherValue is a claim matcher's value as written: a number is kept as
// its literal (json.Number), which must be a JSON number. YAML reads 012
// as octal 10, 1e-400 as 0 and 1e400 as a string: each would compare with
// another value than the one written.
type matcherValue [1]any // an array, not a struct: it holds no configuration keys

var jsonNumberLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func (m *matcherValue) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		switch tag := n.ShortTag(); {
		case tag == "!!int" || tag == "!!float":
			if !jsonNumberLiteral.MatchString(n.Value) {
				return fmt.Errorf("line %d: %s is not a JSON number: write the number as JSON does, or quote it for a string", n.Line, n.Value)
			}
			m[0] = json.Number(n.Value)
			return nil
		case tag == "!!str" && n.Style == 0 && jsonNumberLiteral.MatchString(n.Value):
			m[0] = json.Number(n.Value) // a number YAML does not read as one (1e400)
			return nil
		}
	}
	return n.Decode(&m[0])
}

// matcherValues returns the values of vs.
func matcherValues(vs []matcherValue) []any {
	if vs == nil {
		return nil
	}
	out := make([]any, len(vs))
	for i := range vs {
		out[i] = vs[i][0]
	}
	return out
}

type fileRoute struct {
	Methods []string `yaml:"methods"`
	Host    string   `yaml:"host"`
	Path    string   `yaml:"path"`
	Policy  string   `yaml:"policy"`
}

type fileResourceMeta struct {
	Resource             string   `yaml:"resource"`
	URL                  string   `yaml:"url"`
	AuthorizationServers []string `yaml:"authorization_servers"`
	ScopesSupported      []string `yaml:"scopes_supported"`
}

type fileTLS struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
	ClientAuth   string `yaml:"client_auth"`
}

type fileAPIAuth struct {
	Required bool `yaml:"required"`
}

// fileDPoP is the dpop section: how DPoP proofs are checked and where
// their jti are remembered.
type fileDPoP struct {
	Algorithms       []string  `yaml:"algorithms"`
	MaxAge           *span     `yaml:"max_age"`
	ReplayStore      string    `yaml:"replay_store"`
	ReplayMaxEntries *positive `yaml:"replay_max_entries"`
	RedisURL         string    `yaml:"redis_url"`
	RedisTimeout     *span     `yaml:"redis_timeout"`
	RedisPoolSize    *positive `yaml:"redis_pool_size"`
}

// fileMTLS is the mtls section: where forward-auth finds the client
// certificate.
type fileMTLS struct {
	ClientCertHeader string `yaml:"client_cert_header"`
	XFCC             bool   `yaml:"xfcc"`
}

// fileSenderConstraint is an issuer's sender_constraint.
type fileSenderConstraint struct {
	DPoP string `yaml:"dpop"`
	MTLS string `yaml:"mtls"`
}

type fileIssuer struct {
	Issuer            string               `yaml:"issuer"`
	Discovery         bool                 `yaml:"discovery"`
	JWKSURL           string               `yaml:"jwks_url"`
	JWKSFile          string               `yaml:"jwks_file"`
	SecretFile        string               `yaml:"secret_file"`
	SecretKid         string               `yaml:"secret_kid"`
	AllowInsecureHTTP bool                 `yaml:"allow_insecure_http"`
	Audiences         []string             `yaml:"audiences"`
	Algorithms        []string             `yaml:"algorithms"`
	Leeway            *duration            `yaml:"leeway"`
	RequiredClaims    *[]string            `yaml:"required_claims"`
	Type              string               `yaml:"type"`
	ClaimsToHeaders   map[string]string    `yaml:"claims_to_headers"`
	Refresh           fileRefresh          `yaml:"refresh"`
	SenderConstraint  fileSenderConstraint `yaml:"sender_constraint"`

	Introspection        *fileIssuerIntrospection `yaml:"introspection"`
	CAFile               string                   `yaml:"ca_file"`
	FetchBearerTokenFile string                   `yaml:"fetch_bearer_token_file"`
	DiscoveryURL         string                   `yaml:"discovery_url"`
	SPIFFE               *fileSPIFFE              `yaml:"spiffe"`
	BackchannelLogout    *fileBackchannelLogout   `yaml:"backchannel_logout"`
	SSF                  *fileSSF                 `yaml:"ssf"`
	MaxLifetime          *duration                `yaml:"max_lifetime"`
	IDToken              *fileIDToken             `yaml:"id_token"`
}

// fileIDToken is an issuer's id_token: the ID tokens it accepts.
type fileIDToken struct {
	ClientIDs []string `yaml:"client_ids"`
	AZP       string   `yaml:"azp"`
}

type fileIssuerIntrospection struct {
	URL              string                 `yaml:"url"`
	ClientID         string                 `yaml:"client_id"`
	ClientSecretFile string                 `yaml:"client_secret_file"`
	Cache            fileIntrospectionCache `yaml:"cache"`
	MaxConcurrent    *positive              `yaml:"max_concurrent"`
	MaxWait          *span                  `yaml:"max_wait"`
}

type fileIntrospectionCache struct {
	Shared      bool      `yaml:"shared"`
	KeyFile     string    `yaml:"key_file"`
	MaxTTL      *span     `yaml:"max_ttl"`
	NegativeTTL *span     `yaml:"negative_ttl"`
	StaleFor    *span     `yaml:"stale_for"`
	MaxEntries  *positive `yaml:"max_entries"`
}

type fileSPIFFE struct {
	TrustDomain string `yaml:"trust_domain"`
	BundleURL   string `yaml:"bundle_url"`
	BundleFile  string `yaml:"bundle_file"`
}

type fileRefresh struct {
	MinInterval        *span     `yaml:"min_interval"`
	MaxInterval        *span     `yaml:"max_interval"`
	DefaultTTL         *span     `yaml:"default_ttl"`
	UnknownKidInterval *span     `yaml:"unknown_kid_interval"`
	UnknownKidWait     *duration `yaml:"unknown_kid_wait"`
	StaleFor           *span     `yaml:"stale_for"`
	FetchTimeout       *span     `yaml:"fetch_timeout"`
}

type fileTokenCache struct {
	MaxEntries *int `yaml:"max_entries"`
	MaxBytes   *int `yaml:"max_bytes"`
}

type fileForwardAuth struct {
	StripAuthorization bool   `yaml:"strip_authorization"`
	Proxy              string `yaml:"proxy"`
}

type fileLog struct {
	Level               string `yaml:"level"`
	Format              string `yaml:"format"`
	RejectionsPerSecond *int   `yaml:"rejections_per_second"`
}

type fileIntrospection struct {
	Clients []fileIntrospectionClient `yaml:"clients"`
}

type fileIntrospectionClient struct {
	ID        string `yaml:"id"`
	SecretEnv string `yaml:"secret_env"`
}

type fileLimits struct {
	MaxTokenBytes *positive `yaml:"max_token_bytes"`
	MaxBodyBytes  *positive `yaml:"max_body_bytes"`
	MaxJWKSBytes  *positive `yaml:"max_jwks_bytes"`
	MaxKeys       *positive `yaml:"max_keys"`
}

type fileBatch struct {
	MaxTokens *positive `yaml:"max_tokens"`
}

type fileCrypto struct {
	StandardLibrary bool    `yaml:"standard_library"`
	CrossCheckRate  float64 `yaml:"cross_check_rate"`
}

// duration is a Go duration string in the file ("30s", "1h30m"), as yaml
// decodes a time.Duration; a plain 0 is zero too (yaml reads it as a number).
type duration time.Duration

// UnmarshalYAML reads a duration; yaml reports what is not one.
func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "0" {
		*d = 0
		return nil
	}
	return n.Decode((*time.Duration)(d))
}

// positive is a whole number of at least 1 and span a duration above zero:
// the keys whose zero the library that takes them reads as its default,
// which an absent key already says. The library checks the rest of the
// range.
type (
	positive int
	span     time.Duration
)

// UnmarshalYAML reads a whole number of at least 1.
func (p *positive) UnmarshalYAML(n *yaml.Node) error {
	var v int
	if err := n.Decode(&v); err != nil {
		return err
	}
	if v < 1 {
		return notAbove0(n, "config.positive")
	}
	*p = positive(v)
	return nil
}

// UnmarshalYAML reads a duration above zero.
func (s *span) UnmarshalYAML(n *yaml.Node) error {
	var d duration
	if err := d.UnmarshalYAML(n); err != nil {
		return err
	}
	if d <= 0 {
		return notAbove0(n, "config.span")
	}
	*s = span(d)
	return nil
}

// notAbove0 is the yaml.TypeError of a value of n not above zero, as
// typeError reads it.
func notAbove0(n *yaml.Node, typ string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s `%s` into %s", n.Line, n.ShortTag(), n.Value, typ)}}
}

// decode reads one YAML document strictly: unknown keys, repeated keys,
// values of the wrong type, aliases and merge keys are refused with the path of the key
// and its line (issuers[0].refresh.min_intervall: line 12: unknown key
// "min_intervall").
func decode(data []byte) (*file, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty configuration")
		}
		return nil, syntaxError(data, err)
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the configuration must be a mapping of keys", doc.Line)
	}
	es := entries(doc, "", nil)
	if i := slices.IndexFunc(es, func(e entry) bool { return e.value.Kind == yaml.AliasNode }); i >= 0 {
		return nil, fmt.Errorf("%s: line %d: YAML aliases are not supported", es[i].path, es[i].value.Line)
	}
	// A key is matched as yaml decodes it: an alias (`*k : true`) or a
	// tagged key (`!!binary YWxs...: true`) names a key the reader does not
	// see, and yaml's repeat check compares keys as written.
	if i := slices.IndexFunc(es, func(e entry) bool {
		return e.key != nil && (e.key.Kind != yaml.ScalarNode || e.key.Style&yaml.TaggedStyle != 0)
	}); i >= 0 {
		return nil, fmt.Errorf("%s: line %d: a key must be plain text (no alias, tag or complex key)", es[i].path, es[i].key.Line)
	}
	// yaml decodes a !!binary value from base64 into a string.
	if i := slices.IndexFunc(es, func(e entry) bool { return e.value.ShortTag() == "!!binary" }); i >= 0 {
		return nil, fmt.Errorf("%s: line %d: YAML !!binary values are not supported", es[i].path, es[i].value.Line)
	}
	// A merge key (`<<: {leeway: 5s}`) hides a repeated key: yaml lets the
	// direct value win, where every other repeat is refused.
	if i := slices.IndexFunc(es, func(e entry) bool { return e.key != nil && e.key.ShortTag() == "!!merge" }); i >= 0 {
		return nil, fmt.Errorf("%s: line %d: YAML merge keys (<<) are not supported; write the keys out", es[i].path, es[i].key.Line)
	}
	// yaml drops a null item from a list of strings: `audiences: [~]`, or
	// a `- ` whose template variable was unset, would read as an empty
	// list (no aud check, no required claim, a policy asking for nothing).
	if i := slices.IndexFunc(es, func(e entry) bool {
		return e.key == nil && e.value.Kind == yaml.ScalarNode && e.value.ShortTag() == "!!null"
	}); i >= 0 {
		return nil, fmt.Errorf("%s: line %d: empty list item; give a value or remove the item", es[i].path, es[i].value.Line)
	}
	var f file
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&f); err != nil {
		if te := (*yaml.TypeError)(nil); errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, typeError(es, te.Errors[0])
		}
		return nil, err
	}
	if err := checkScalars(doc, reflect.TypeFor[file](), ""); err != nil {
		return nil, err
	}
	return &f, nil
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	decimalWhole    = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
)

// checkScalars refuses, in n decoded as t (at path), what yaml reads into a
// boolean or a whole number as another value than a reader sees: y, yes,
// on, n, no, off (even quoted) as booleans, and 010 (octal 8), 0x10, 1_0
// or 0.5 (truncated to 0) as whole numbers. Decoding has accepted n.
func checkScalars(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[positive]() {
		t = reflect.TypeFor[int]()
	} else if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // read by its own UnmarshalYAML
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // absent
	}
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	switch t.Kind() {
	case reflect.Bool:
		if n.ShortTag() != "!!bool" || quoted {
			return fmt.Errorf("%s: line %d: want a boolean (true or false), got %q", path, n.Line, shownValue(n.Value))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.ShortTag() != "!!int" || quoted || !decimalWhole.MatchString(n.Value) {
			return fmt.Errorf("%s: line %d: want a whole number written in decimal, got %q", path, n.Line, shownValue(n.Value))
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			for f := range t.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if f.IsExported() && cmp.Or(name, strings.ToLower(f.Name)) == k {
					if err := checkScalars(n.Content[i+1], f.Type, strings.TrimPrefix(path+"."+k, ".")); err != nil {
						return err
					}
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := checkScalars(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkScalars(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// entry is a mapping value with its key, or a list item (key nil), with its
// path in the document.
type entry struct {
	path       string
	key, value *yaml.Node
}

// entries appends to out, in document order, every mapping value and list
// item under n, whose own path is path.
func entries(n *yaml.Node, path string, out []entry) []entry {
	for i, v := range n.Content {
		e := entry{path: fmt.Sprintf("%s[%d]", path, i), value: v}
		if n.Kind == yaml.MappingNode {
			if i%2 == 0 {
				continue // a key: the entry is its value's
			}
			e.key = n.Content[i-1]
			e.path = strings.TrimPrefix(path+"."+e.key.Value, ".")
		}
		out = entries(v, e.path, append(out, e))
	}
	return out
}

// The messages of yaml.TypeError that decode turns into path messages.
var (
	unknownKey  = regexp.MustCompile(`^line ([0-9]+): field (.*) not found in type (\S+)$`)
	repeatedKey = regexp.MustCompile(`^line ([0-9]+): mapping key "(.*)" already defined at line ([0-9]+)$`)
	wrongType   = regexp.MustCompile("^line ([0-9]+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.*)$")
)

// typeError names the path of the entry of es that a yaml.TypeError message
// is about; a message it cannot place is returned as yaml wrote it.
func typeError(es []entry, msg string) error {
	find := func(match func(e entry) bool) (entry, bool) {
		if i := slices.IndexFunc(es, match); i >= 0 {
			return es[i], true
		}
		return entry{}, false
	}
	keyAt := func(line, name string) func(e entry) bool {
		return func(e entry) bool { return e.key != nil && strconv.Itoa(e.key.Line) == line && e.key.Value == name }
	}
	if m := unknownKey.FindStringSubmatch(msg); m != nil {
		if e, ok := find(keyAt(m[1], m[2])); ok {
			return fmt.Errorf("%s: line %s: unknown key %q%s", e.path, m[1], m[2], didYouMean(m[2], keysOf(reflect.TypeFor[file](), m[3])))
		}
	}
	if m := repeatedKey.FindStringSubmatch(msg); m != nil {
		if e, ok := find(keyAt(m[1], m[2])); ok {
			return fmt.Errorf("%s: line %s: key %q repeated (first at line %s)", e.path, m[1], m[2], m[3])
		}
	}
	if m := wrongType.FindStringSubmatch(msg); m != nil {
		value := strings.TrimSuffix(m[3], "...") // yaml cuts long values to 7 bytes
		e, ok := find(func(e entry) bool {
			v := e.value
			return strconv.Itoa(v.Line) == m[1] && v.ShortTag() == m[2] && strings.HasPrefix(v.Value, value)
		})
		if ok {
			want := cmp.Or(kinds[m[4]], "mapping")
			if strings.HasPrefix(m[4], "[]") {
				want = "list"
			}
			got := "a " + kindNames[e.value.Kind]
			if e.value.Kind == yaml.ScalarNode {
				got = fmt.Sprintf("%q", shownValue(e.value.Value))
			}
			return fmt.Errorf("%s: line %s: want a %s, got %s", e.path, m[1], want, got)
		}
	}
	return errors.New(msg)
}

// shownValue is a scalar as an error about its type quotes it: a URL or
// address written where a section, a list or another type belongs
// (`redis: redis://user:password@host:6379`) loses what precedes its last
// '@', which may be a password (as redisconn quotes an address).
func shownValue(v string) string {
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		return "…@" + v[i+1:]
	}
	return v
}

// keysOf returns the YAML keys of the struct type named name (as yaml's
// errors name it: "config.fileIssuer") found under t, or nil.
func keysOf(t reflect.Type, name string) []string {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type) []string
	walk = func(t reflect.Type) []string {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return nil
		}
		seen[t] = true
		if t.String() == name {
			var keys []string
			for f := range t.Fields() {
				if !f.IsExported() {
					continue
				}
				// yaml's default key is the field name in lower case.
				key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if key == "-" {
					continue
				}
				keys = append(keys, cmp.Or(key, strings.ToLower(f.Name)))
			}
			return keys
		}
		for f := range t.Fields() {
			if keys := walk(f.Type); keys != nil {
				return keys
			}
		}
		return nil
	}
	return walk(t)
}

// didYouMean is ` (did you mean "KEY"?)` for the known key nearest to name
// by edit distance (case and '-' for '_' aside), when one is near enough to
// be a typo of it; else "".
func didYouMean(name string, known []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	best, bestD := "", 1+len(name)/5 // at most this many edits
	for _, k := range known {
		if d := editDistance(norm(name), norm(k)); d <= bestD && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// blockError matches the parser errors that yaml reports at the line where
// the enclosing block starts, not at the line that broke it: a key indented
// less or more than its neighbours.
var blockError = regexp.MustCompile(`^yaml: line ([0-9]+): (did not find expected key|did not find expected '-' indicator)$`)

// maxSyntaxLines bounds the documents whose broken line syntaxError looks
// for (it parses each prefix: quadratic in the lines).
const maxSyntaxLines = 2000

// syntaxError is err, a YAML parse error of data, naming the line that
// broke the document: for a mis-indented key yaml names the line its block
// starts at, so the first prefix of data (in whole lines) that fails the
// same way is found and its last line named.
func syntaxError(data []byte, err error) error {
	m := blockError.FindStringSubmatch(err.Error())
	lines := bytes.SplitAfter(data, []byte("\n"))
	if m == nil || len(lines) > maxSyntaxLines {
		return err
	}
	end := 0
	for i, l := range lines {
		end += len(l)
		var n yaml.Node
		perr := yaml.Unmarshal(data[:end], &n)
		if perr == nil || !strings.HasSuffix(perr.Error(), m[2]) {
			continue
		}
		if strconv.Itoa(i+1) == m[1] {
			return err // yaml named it right
		}
		// Only the key: the value could be anything, a secret included.
		key, _, _ := strings.Cut(string(l), ":")
		key = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(key), "- "))
		// yaml's line is where an enclosing block starts, often not the
		// key's own block (line 1 for a key of a nested mapping): it is
		// named as that, never as the start of the key's block.
		return fmt.Errorf("line %d: %s: key %q is indented unlike the keys before it; align it with the keys of its mapping (yaml's line %s is where an enclosing block starts)", i+1, m[2], key, m[1])
	}
	return err
}

// kinds name the Go types of the file struct as a YAML user knows them;
// the others are lists ([]T) and mappings.
var kinds = map[string]string{
	"int": "whole number", "float64": "number", "bool": "boolean (true or false)",
	"string": "string", "time.Duration": "duration such as 30s",
	"config.positive": "whole number of at least 1", "config.span": "duration above zero such as 30s",
}

// kindNames name the kinds of YAML nodes.
var kindNames = map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list", yaml.ScalarNode: "scalar", yaml.AliasNode: "alias"}
