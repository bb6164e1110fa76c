package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
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
}

type fileIssuer struct {
	Issuer            string            `yaml:"issuer"`
	Discovery         bool              `yaml:"discovery"`
	JWKSURL           string            `yaml:"jwks_url"`
	JWKSFile          string            `yaml:"jwks_file"`
	SecretFile        string            `yaml:"secret_file"`
	SecretKid         string            `yaml:"secret_kid"`
	AllowInsecureHTTP bool              `yaml:"allow_insecure_http"`
	Audiences         []string          `yaml:"audiences"`
	Algorithms        []string          `yaml:"algorithms"`
	Leeway            *duration         `yaml:"leeway"`
	RequiredClaims    *[]string         `yaml:"required_claims"`
	Type              string            `yaml:"type"`
	ClaimsToHeaders   map[string]string `yaml:"claims_to_headers"`
	Refresh           fileRefresh       `yaml:"refresh"`
}

type fileRefresh struct {
	MinInterval        *duration `yaml:"min_interval"`
	MaxInterval        *duration `yaml:"max_interval"`
	DefaultTTL         *duration `yaml:"default_ttl"`
	UnknownKidInterval *duration `yaml:"unknown_kid_interval"`
	UnknownKidWait     *duration `yaml:"unknown_kid_wait"`
	StaleFor           *duration `yaml:"stale_for"`
	FetchTimeout       *duration `yaml:"fetch_timeout"`
}

type fileTokenCache struct {
	MaxEntries *int `yaml:"max_entries"`
	MaxBytes   *int `yaml:"max_bytes"`
}

type fileForwardAuth struct {
	StripAuthorization bool `yaml:"strip_authorization"`
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
	MaxTokenBytes *int `yaml:"max_token_bytes"`
	MaxBodyBytes  *int `yaml:"max_body_bytes"`
	MaxJWKSBytes  *int `yaml:"max_jwks_bytes"`
	MaxKeys       *int `yaml:"max_keys"`
}

type fileBatch struct {
	MaxTokens *int `yaml:"max_tokens"`
}

type fileCrypto struct {
	StandardLibrary bool    `yaml:"standard_library"`
	CrossCheckRate  float64 `yaml:"cross_check_rate"`
}

// duration is a Go duration string in the file ("30s", "1h30m").
type duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &nodeError{n.Line, n.Column, "want a duration such as 30s, got a " + kindNames[n.Kind]}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &nodeError{n.Line, n.Column, fmt.Sprintf("invalid duration %q (use Go duration strings such as 30s, 15m, 24h)", n.Value)}
	}
	*d = duration(v)
	return nil
}

// nodeError is a value refused while decoding, at its place in the file.
type nodeError struct {
	line, col int
	msg       string
}

func (e *nodeError) Error() string { return e.msg }

// decode reads one YAML document strictly: unknown keys, values of the wrong
// type and aliases are refused with the path of the key and its line
// (issuers[0].refresh.min_intervall: line 12: unknown key "min_intervall").
func decode(data []byte) (*file, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty configuration")
		}
		return nil, err
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
	if p, n := locate(doc, "", func(_, v *yaml.Node) bool { return v.Kind == yaml.AliasNode }); n != nil {
		return nil, fmt.Errorf("%s: line %d: YAML aliases are not supported", p, n.Line)
	}
	var f file
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	err := strict.Decode(&f)
	var ne *nodeError
	var te *yaml.TypeError
	switch {
	case err == nil:
		return &f, nil
	case errors.As(err, &ne):
		p, _ := locate(doc, "", func(_, v *yaml.Node) bool { return v.Line == ne.line && v.Column == ne.col })
		return nil, fmt.Errorf("%s: line %d: %s", orTop(p), ne.line, ne.msg)
	case errors.As(err, &te) && len(te.Errors) > 0:
		return nil, typeError(doc, te.Errors[0])
	}
	return nil, err
}

// The messages of yaml.TypeError that decode turns into path messages.
var (
	unknownField = regexp.MustCompile("^line ([0-9]+): field (.*) not found in type ")
	repeatedKey  = regexp.MustCompile(`^line ([0-9]+): mapping key "(.*)" already defined at line ([0-9]+)$`)
	wrongType    = regexp.MustCompile("^line ([0-9]+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.*)$")
)

// typeError names the path of the key a yaml.TypeError message is about.
func typeError(doc *yaml.Node, msg string) error {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		p, _ := locate(doc, "", func(k, _ *yaml.Node) bool { return k != nil && fmt.Sprint(k.Line) == m[1] && k.Value == m[2] })
		return fmt.Errorf("%s: line %s: unknown key %q", orTop(p), m[1], m[2])
	}
	if m := repeatedKey.FindStringSubmatch(msg); m != nil {
		p, _ := locate(doc, "", func(k, _ *yaml.Node) bool { return k != nil && fmt.Sprint(k.Line) == m[1] && k.Value == m[2] })
		return fmt.Errorf("%s: line %s: key %q repeated (first at line %s)", orTop(p), m[1], m[2], m[3])
	}
	if m := wrongType.FindStringSubmatch(msg); m != nil {
		value := strings.TrimSuffix(m[3], "...") // yaml cuts long values to 7 bytes
		p, n := locate(doc, "", func(_, v *yaml.Node) bool {
			return fmt.Sprint(v.Line) == m[1] && v.ShortTag() == m[2] && strings.HasPrefix(v.Value, value)
		})
		if n != nil {
			got := "a " + kindNames[n.Kind]
			if n.Kind == yaml.ScalarNode {
				got = fmt.Sprintf("%q", n.Value)
			}
			return fmt.Errorf("%s: line %s: want a %s, got %s", orTop(p), m[1], goKind(m[4]), got)
		}
	}
	return errors.New(msg)
}

// goKind names a Go type of the file struct as a YAML user knows it.
func goKind(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.HasPrefix(t, "int"):
		return "whole number"
	case strings.HasPrefix(t, "float"):
		return "number"
	case t == "bool":
		return "boolean (true or false)"
	case t == "string":
		return "string"
	}
	return "mapping"
}

// locate walks n in document order and returns the first node (a mapping
// value, with its key, or a list item) that match accepts, with its path.
func locate(n *yaml.Node, path string, match func(key, value *yaml.Node) bool) (string, *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if match(k, v) {
				return p, v
			}
			if p, found := locate(v, p, match); found != nil {
				return p, found
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if match(nil, v) {
				return p, v
			}
			if p, found := locate(v, p, match); found != nil {
				return p, found
			}
		}
	}
	return "", nil
}

// kindNames name the kinds of YAML nodes.
var kindNames = map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list", yaml.ScalarNode: "scalar", yaml.AliasNode: "alias"}

func orTop(path string) string { return cmp.Or(path, "(top level)") }
