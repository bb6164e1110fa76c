// Package celexpr compiles the CEL expressions of authorization policies
// (policy.Spec.Expression) with cel-go: pass [Compiler] as
// policy.Options.Compiler. It is a package of its own so that a program
// that uses policies without expressions (or only server.Middleware) links
// no CEL or protobuf code.
//
// An expression reads claims (a map), header (the JOSE header, a map),
// issuer (the configured issuer name) and request ({method, host, path}:
// the normalized path, without query). It must be of type bool; it is
// compiled and type-checked once, and each evaluation is bounded by a cost
// limit.
package celexpr

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/interpreter"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// Compiler compiles expressions. The zero value is ready; it builds its CEL
// environment on first use. It is safe for concurrent use.
type Compiler struct {
	once sync.Once
	env  *cel.Env
	err  error
}

// Compile implements policy.Compiler.
func (c *Compiler) Compile(src string, costLimit uint64) (policy.Expression, error) {
	c.once.Do(func() { c.env, c.err = newEnv() })
	if c.err != nil {
		return nil, c.err
	}
	return compile(c.env, src, costLimit)
}

// newEnv declares the variables an expression may read (SPEC: claims,
// header, issuer, request {method, host, path}).
func newEnv() (*cel.Env, error) {
	env, err := cel.NewEnv(
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("header", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("issuer", cel.StringType),
		cel.Variable("request", cel.MapType(cel.StringType, cel.StringType)),
		cel.CrossTypeNumericComparisons(true),
	)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	return env, nil
}

// program is a compiled expression.
type program struct {
	prg                        cel.Program
	usesClaims, usesHeader     bool
	usesIssuer, usesRequestVar bool
}

// compile parses and type-checks src, which must be of type bool.
func compile(env *cel.Env, src string, limit uint64) (*program, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %w", iss.Err())
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("is of type %s, want bool", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(limit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	p := &program{prg: prg}
	checked, err := cel.AstToCheckedExpr(ast)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	for _, ref := range checked.GetReferenceMap() {
		switch ref.GetName() {
		case "claims":
			p.usesClaims = true
		case "header":
			p.usesHeader = true
		case "issuer":
			p.usesIssuer = true
		case "request":
			p.usesRequestVar = true
		}
	}
	return p, nil
}

// ReadsRequest implements policy.Expression.
func (p *program) ReadsRequest() bool { return p.usesRequestVar }

// errNotBool is the run-time error of an expression whose value is not a
// bool (a dyn value that the checker could not type).
var errNotBool = errors.New("the expression's value is not a bool")

// Eval implements policy.Expression: it runs the program on a verified
// token and the original request. A run-time error (a missing claim read,
// a type mismatch, the cost limit) is returned: the caller denies.
func (p *program) Eval(res *verify.Result, o request.Original) (bool, error) {
	act := &activation{res: res, o: o, p: p}
	out, _, err := p.prg.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, errNotBool
	}
	return b, nil
}

// activation resolves the expression's variables, decoding the claims and
// header only when the expression reads them.
type activation struct {
	res *verify.Result
	o   request.Original
	p   *program
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "claims":
		return decodeObject(a.res.Claims), true
	case "header":
		return decodeObject(a.res.Header), true
	case "issuer":
		return a.res.ConfiguredIssuer, true
	case "request":
		return map[string]string{"method": a.o.Method, "host": a.o.Host, "path": a.o.Path}, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// decodeObject decodes a verified JSON object (numbers as float64, as CEL
// reads JSON), or an empty map.
func decodeObject(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // the verifier validated it
	}
	return m
}
