package celexpr_test

import (
	"fmt"

	"github.com/jwksverify/jwksverify/policy/celexpr"
)

// An expression is compiled and type-checked once, when the policy set is
// built (policy.Options.Compiler); a mistake is found then, not at the
// first request. Evaluation needs a verified token (policy.ExampleSet).
func ExampleCompiler() {
	var c celexpr.Compiler // the zero value is ready
	expr, err := c.Compile(`request.method == "GET" && claims.role in ["reader", "admin"]`, 10_000)
	fmt.Println(err == nil, expr.ReadsRequest())

	_, err = c.Compile(`claims.role`, 10_000) // not a bool
	fmt.Println(err != nil)

	// An expression that does not read the request decides without one.
	expr, _ = c.Compile(`claims.sub.startsWith("svc-")`, 10_000)
	fmt.Println(expr.ReadsRequest())
	// Output:
	// true true
	// true
	// false
}
