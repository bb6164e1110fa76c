package celexpr

import (
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
)

// boundDouble decorates each double() call: a string longer than
// jsonscan.MaxFloatLiteral is an evaluation error (a deny) instead of what
// cel-go's string_to_double (strconv.ParseFloat) makes of it. ParseFloat
// counts at most 800 digits, so a claim string of "1" + 2000 zeros +
// "e-1997" (1000) read as a number near 0 and double(claims.risk) < 50.0
// allowed it, as exactDouble refuses for a claim that is a number.
func boundDouble() interpreter.InterpretableDecoratorV2 {
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok || call.Function() != overloads.TypeConvertDouble || len(call.Args()) != 1 {
			return i, nil
		}
		if _, isConst := call.Args()[0].(interpreter.InterpretableConst); isConst {
			return i, nil // the expression's own text, checked at load
		}
		return &boundedDouble{InterpretableCall: call}, nil
	}
}

// boundedDouble is a double() call whose string argument is bounded.
type boundedDouble struct {
	interpreter.InterpretableCall
}

// Exec implements interpreter.InterpretableV2: the argument is evaluated
// once and converted as cel-go's double overloads do (ConvertToType, the
// identity for a double), and the call charged as cel-go charges it.
func (b *boundedDouble) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	arg := b.Args()[0].Exec(frame)
	if types.IsUnknownOrError(arg) {
		return arg
	}
	var res ref.Val
	if s, ok := arg.(types.String); ok && len(s) > jsonscan.MaxFloatLiteral {
		res = types.NewErrWithNodeID(b.ID(), "string of %d bytes is too long to be read as a double (at most %d)", len(s), jsonscan.MaxFloatLiteral)
	} else {
		res = arg.ConvertToType(types.DoubleType)
		if e, ok := res.(*types.Err); ok && e.NodeID() == 0 {
			res = types.LabelErrNode(b.ID(), e)
		}
	}
	if costs := frame.CostTracker(); costs != nil {
		costs.EvalUnary(frame, b.ID(), b.InterpretableCall, arg, res)
	}
	return res
}

// Eval implements interpreter.Interpretable.
func (b *boundedDouble) Eval(vars interpreter.Activation) ref.Val {
	return interpreter.EvalActivation(vars, b.Exec)
}
