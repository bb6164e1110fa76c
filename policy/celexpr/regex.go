package celexpr

import (
	"math"
	"regexp/syntax"

	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// A regular expression that is not a literal of the expression (one read
// from a claim, or built from one) is compiled by cel-go at every
// evaluation, and cel-go charges matches by the pattern's length, not by
// the program it compiles to: ".{1000}" is 7 bytes and 1000 instructions,
// and a 14 KB claim of them compiles to 2 000 000 (over 400 MB allocated
// in one evaluation within any cost limit). Matching costs what the
// program is too: Go's regexp runs every instruction at every position of
// the string in the worst case, so "a{1000}" against 11 000 a's took over
// a second within the limit, charged (after the match) for its 7 bytes.
// Such a pattern is therefore measured before it is compiled (its
// instruction count, as regexp/syntax bounds its own programs, without
// expanding the repetitions), and charged before it runs: one unit of cost
// per instruction for its compilation, and its match as cel-go charges a
// match, with the instruction count for the pattern's length (cel-go's
// own charge of the call, after it, counted in: a match is charged once,
// as the greater of the two). A call
// beyond the cost limit is an error, tracked or not, and nothing is
// compiled or matched for it. A literal pattern is compiled once, at load
// (cel-go's OptOptimize), and is not affected.

// regexCompileOverload is the overload the cost tracker charges a run-time
// pattern's compilation and match under ([regexCompileCost]).
const regexCompileOverload = "jwksverify_regex_compile"

// regexCompileCall is the call the compilation and match of a run-time
// pattern are charged as.
type regexCompileCall struct{}

func (regexCompileCall) Function() string   { return overloads.Matches }
func (regexCompileCall) OverloadID() string { return regexCompileOverload }

// regexCompileCost is the cost of a run-time pattern's compilation and
// match, which boundedMatches passes as the call's result.
func regexCompileCost(_ []ref.Val, result ref.Val) *uint64 {
	n, _ := result.(types.Int)
	c := uint64(max(n, 0))
	return &c
}

// boundRegex decorates each matches call whose pattern is not a constant
// with the bound of costLimit.
func boundRegex(costLimit uint64) interpreter.InterpretableDecoratorV2 {
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok || call.Function() != overloads.Matches || len(call.Args()) != 2 {
			return i, nil
		}
		if _, isConst := call.Args()[1].(interpreter.InterpretableConst); isConst {
			return i, nil
		}
		return &boundedMatches{InterpretableCall: call, limit: costLimit}, nil
	}
}

// boundedMatches is a matches call whose pattern is measured, and whose
// compilation and match are charged, before either runs.
type boundedMatches struct {
	interpreter.InterpretableCall
	limit uint64
}

// Exec implements interpreter.InterpretableV2: each argument is evaluated
// once, and a string matched against a string pattern as cel-go's matches
// does (types.String.Match), after the charge.
func (b *boundedMatches) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	args := b.Args()
	target := args[0].Exec(frame)
	if types.IsUnknownOrError(target) {
		return target
	}
	pat := args[1].Exec(frame)
	if types.IsUnknownOrError(pat) {
		return pat
	}
	s, ok1 := target.(types.String)
	p, ok2 := pat.(types.String)
	if !ok1 || !ok2 {
		// A value of another type (a dyn claim): cel-go's own call and
		// its error. Nothing is compiled for it.
		return b.InterpretableCall.Exec(frame)
	}
	n, err := regexSize(string(p), b.limit)
	if err != nil {
		return types.NewErrWithNodeID(b.ID(), "invalid regular expression (its value is not repeated)")
	}
	if uint64(n) > b.limit {
		return types.NewErrWithNodeID(b.ID(), "regular expression of %d instructions is beyond the cost limit (%d)", n, b.limit)
	}
	charge := uint64(n) + matchCost(len(s), n)
	if charge > b.limit {
		return types.NewErrWithNodeID(b.ID(), "matching a string of %d bytes with a regular expression of %d instructions is beyond the cost limit (%d)", len(s), n, b.limit)
	}
	costs := frame.CostTracker()
	if costs != nil {
		// cel-go charges the match itself after it (EvalBinary below), by
		// the pattern's length: what it will charge is counted in the
		// charge made here, so that a match is charged once, as the
		// greater of the two (charged twice, a 26-byte pattern built from
		// a claim denied an 8 000-byte scope claim that either allows).
		own := costs.CostCall(b.InterpretableCall, []ref.Val{s, p}, types.False)
		costs.EvalUnary(frame, b.ID(), regexCompileCall{}, p, types.Int(charge-min(own, charge-uint64(n))))
	}
	res := s.Match(p)
	if e, ok := res.(*types.Err); ok && e.NodeID() == 0 {
		res = types.LabelErrNode(b.ID(), e)
	}
	if costs != nil {
		costs.EvalBinary(frame, b.ID(), b.InterpretableCall, s, p, res)
	}
	return res
}

// matchCost is the cost of matching a string of size bytes with a program
// of insts instructions: cel-go's cost of matches, (size+1) ×
// StringTraversalCostFactor × the pattern's length ×
// RegexStringLengthCostFactor, with the instruction count for the length
// (Go's regexp steps every instruction at every position in the worst
// case). Saturates at MaxUint64.
func matchCost(size int, insts int64) uint64 {
	c := math.Ceil(float64(size+1) * cost.StringTraversalCostFactor * float64(insts) * cost.RegexStringLengthCostFactor)
	if c >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(c)
}

// Eval implements interpreter.Interpretable.
func (b *boundedMatches) Eval(vars interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(vars, b.Exec)
}

// regexSize is the instruction count of pattern's program as regexp/syntax
// estimates it (its parser's calcSize), without compiling it: a repetition
// multiplies its operand's size instead of copying it; a character class
// counts its ranges too. A Unicode class escape (\pL, \P{Greek}) is a few
// bytes that the parser itself expands to its table's ranges (\pL: 659):
// each is first counted as unicodeClassSize, and a pattern whose escapes
// alone are beyond limit is not parsed.
func regexSize(pattern string, limit uint64) (int64, error) {
	if n := unicodeClasses(pattern) * unicodeClassSize; uint64(n) > limit {
		return n, nil
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	return reSize(re), nil
}

// unicodeClassSize bounds the ranges of one Unicode class escape, its
// table folded or negated included (the largest, \p{Cn}'s, has 712).
const unicodeClassSize = 1024

// unicodeClasses counts the \p and \P escapes of pattern (an escaped
// backslash starts none).
func unicodeClasses(pattern string) int64 {
	var n int64
	for i := 0; i+1 < len(pattern); i++ {
		if pattern[i] != '\\' {
			continue
		}
		i++
		if c := pattern[i]; c == 'p' || c == 'P' {
			n++
		}
	}
	return n
}

// sizeCap bounds every intermediate size (far above any cost limit, far
// below overflow).
const sizeCap = 1 << 40

func reSize(re *syntax.Regexp) int64 {
	var size int64
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCharClass:
		size = 1 + int64(len(re.Rune)/2) // its ranges, which the parser made
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + reSize(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + reSize(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			size = min(size+reSize(sub), sizeCap)
		}
		if re.Op == syntax.OpAlternate && len(re.Sub) > 1 {
			size += int64(len(re.Sub)) - 1
		}
	case syntax.OpRepeat:
		sub := reSize(re.Sub[0])
		switch {
		case re.Max == -1 && re.Min == 0:
			size = 2 + sub
		case re.Max == -1:
			size = 1 + int64(re.Min)*sub
		default:
			size = int64(re.Max)*sub + int64(re.Max-re.Min)
		}
	}
	return min(max(1, size), sizeCap)
}
