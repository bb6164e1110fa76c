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
// limit: checked at run time, unless cel-go's estimate of the worst case,
// for inputs of any size, is already within it.
//
// An evaluation decodes nothing up front: a claim is read when the
// expression selects it, from the verifier's index of the claims the
// expression names (policy.ClaimReader) on a token-cache hit.
package celexpr

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
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
	claims                     []string // the claims it selects by name (claims.x, claims["x"], "x" in claims), sorted
	tracked                    bool     // evaluated with cel.CostLimit; false: its estimated worst case is within it
}

// unknownSizes is a cost estimator that knows no size: every string, list
// and map may be as large as any (cel-go's default for an unknown size).
type unknownSizes struct{}

func (unknownSizes) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }

func (unknownSizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// compile parses and type-checks src, which must be of type bool.
func compile(env *cel.Env, src string, limit uint64) (*program, error) {
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %w", iss.Err())
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("is of type %s, want bool", checked.OutputType())
	}
	if lit, ok := inexactLiteral(src, checked.NativeRep()); ok {
		return nil, fmt.Errorf("the number %s is beyond what a double holds exactly (2^53): claims' numbers are doubles, and CEL compares an integer with a double as a double, so it would equal another number (compare such an id with a claims matcher, which compares exactly)", lit)
	}
	// A pattern that is not a literal is measured before it is compiled
	// (regex.go): at most limit instructions, each one unit of cost.
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize), cel.CustomDecoratorV2(boundRegex(limit)), cel.CustomDecoratorV2(boundDouble())}
	p := &program{tracked: true}
	// An expression whose worst case is within the limit whatever its
	// input — cel-go's estimate with every size unknown, so unbounded —
	// cannot exceed it, and is evaluated without a cost tracker (which
	// costs about 2 µs an evaluation). Any other one is tracked and
	// stopped at the limit.
	if est, err := env.EstimateCost(checked, unknownSizes{}); err == nil && est.Max <= limit {
		p.tracked = false
	} else {
		opts = append(opts, cel.CostLimit(limit), cel.CostTrackerOptions(cost.OverloadTracker(regexCompileOverload, regexCompileCost)))
	}
	prg, err := env.Program(checked, opts...)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	p.prg = prg
	native := checked.NativeRep()
	for _, ref := range native.ReferenceMap() {
		switch ref.Name {
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
	p.claims = selectedClaims(native.Expr())
	return p, nil
}

// inexactLiteral returns the first number literal of a, the checked form
// of src, that a double does not hold exactly, as written, and true; or
// false. An int or uint literal is compared with a claim's double as a
// double (9007199254740993 is the double 9007199254740992); a double
// literal is that double already (9007199254740993.0 too): from 2^53 on,
// where a double no longer holds every integer, up to 2^64, beyond every
// int and uint id, its text is read again from src and must be exactly
// its value.
func inexactLiteral(src string, a *ast.AST) (string, bool) {
	var found string
	var runes []rune // src, read only for a double literal from 2^53 on
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if found != "" || e.Kind() != ast.LiteralKind {
			return
		}
		switch v := e.AsLiteral().Value().(type) {
		case int64:
			if f := float64(v); f >= 1<<63 || int64(f) != v {
				found = fmt.Sprint(v)
			}
		case uint64:
			if f := float64(v); f >= 1<<64 || uint64(f) != v {
				found = fmt.Sprint(v) + "u"
			}
		case float64:
			if a := math.Abs(v); a < twoTo53 || a >= 1<<64 {
				return // every integer is exact; or beyond any integer id (a threshold such as 1e300)
			}
			if runes == nil {
				runes = []rune(src)
			}
			text := ""
			if o, ok := a.SourceInfo().GetOffsetRange(e.ID()); ok {
				text = numberText(runes, int(o.Start))
			}
			if _, exact := exactDouble(text); !exact {
				found = cmp.Or(text, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
	}))
	return found, found != ""
}

// numberText returns the CEL floating-point literal that starts at rune
// offset i of src (a '-' and the spaces after it skipped), or "".
func numberText(src []rune, i int) string {
	if i < 0 || i > len(src) {
		return ""
	}
	if i < len(src) && src[i] == '-' {
		i++
		for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
			i++
		}
	}
	start := i
	digits := func() {
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	}
	digits()
	if i < len(src) && src[i] == '.' {
		i++
		digits()
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		digits()
	}
	return string(src[start:i])
}

// selectedClaims returns the claim names e selects with a constant: the
// field of claims.x (and has(claims.x)), the key of claims["x"], the
// element of "x" in claims. Sorted, without duplicates.
func selectedClaims(e ast.Expr) []string {
	var out []string
	isClaims := func(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == "claims" }
	constString := func(e ast.Expr) (string, bool) {
		if e.Kind() != ast.LiteralKind {
			return "", false
		}
		s, ok := e.AsLiteral().Value().(string)
		return s, ok
	}
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.SelectKind:
			if sel := e.AsSelect(); isClaims(sel.Operand()) {
				out = append(out, sel.FieldName())
			}
		case ast.CallKind:
			call := e.AsCall()
			args := call.Args()
			if len(args) != 2 {
				return
			}
			var obj, key ast.Expr
			switch call.FunctionName() {
			case operators.Index:
				obj, key = args[0], args[1]
			case operators.In:
				obj, key = args[1], args[0]
			default:
				return
			}
			if s, ok := constString(key); ok && isClaims(obj) {
				out = append(out, s)
			}
		}
	}))
	slices.Sort(out)
	return slices.Compact(out)
}

// ReadsRequest implements policy.Expression.
func (p *program) ReadsRequest() bool { return p.usesRequestVar }

// Claims implements policy.ClaimReader: the claims the expression selects
// by name, which the verifier then indexes (policy.Set.ClaimNames), so
// that reading one on a token-cache hit scans nothing.
func (p *program) Claims() []string { return slices.Clone(p.claims) }

// errNotBool is the run-time error of an expression whose value is not a
// bool (a dyn value that the checker could not type).
var errNotBool = errors.New("the expression's value is not a bool")

// Eval implements policy.Expression: it runs the program on a verified
// token and the original request. A run-time error (a missing claim read,
// a type mismatch, the cost limit) is returned: the caller denies.
//
// Nothing is decoded up front: claims is a map that reads a claim of
// res when the program selects it, and request a map over o. Both live for
// this evaluation only; res is read, never modified.
func (p *program) Eval(res *verify.Result, o request.Original) (bool, error) {
	a := &activation{claims: claimsMap{res: res, names: p.claims}, req: requestMap{o: o}, res: res}
	ok, err := p.run(a)
	if err == nil {
		// A claims set or header that encoding/json cannot read (a number
		// beyond float64) was seen empty by a whole-map operation: the
		// value computed from it is not to be trusted.
		err = cmp.Or(a.claims.err, a.headerErr)
	}
	if err != nil {
		return false, valueFree(err, p.claims)
	}
	return ok, nil
}

// valueFree is err without the values cel-go quotes in its run-time
// errors (timestamp("…") of a claim, a map key read from a claim, a
// regular expression taken from one): the error is logged ("request
// forbidden") and a claim may hold anything, a token too. A missing claim
// the expression selects by name (names, sorted) is kept: that name is
// the configuration's.
func valueFree(err error, names []string) error {
	msg := err.Error()
	if k, ok := strings.CutPrefix(msg, "no such key: "); ok {
		if _, found := slices.BinarySearch(names, k); found {
			return err
		}
		return errors.New("no such key (a key computed from a value)")
	}
	if i := strings.IndexAny(msg, "\"`"); i >= 0 {
		return errors.New(strings.TrimRight(msg[:i], " :") + " (its value is not repeated)")
	}
	return err
}

// run evaluates the program on vars (an activation or a map of them); a
// value that is not a bool is an error.
func (p *program) run(vars any) (bool, error) {
	out, _, err := p.prg.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, errNotBool
	}
	return b, nil
}

// activation resolves the expression's variables.
type activation struct {
	claims    claimsMap
	req       requestMap
	res       *verify.Result
	header    map[string]any // the decoded JOSE header, on first read
	headerErr error          // why the header did not decode
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "claims":
		return &a.claims, true
	case "header":
		if a.header == nil {
			a.header, a.headerErr = decodeObject(a.res.Header)
		}
		return a.header, true
	case "issuer":
		return a.res.ConfiguredIssuer, true
	case "request":
		return &a.req, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// decodeObject decodes a verified JSON object (numbers as float64, as CEL
// reads JSON), or an empty map.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	x, err := decodeExact(raw)
	m, ok := x.(map[string]any)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("not an object")
		}
		return map[string]any{}, fmt.Errorf("the token's JSON does not decode for CEL: %w", err)
	}
	return m, nil
}
