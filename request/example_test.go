package request_test

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/request"
)

// FromParts reads the original request a proxy reports, normalized once so
// that a policy, a DPoP proof's htm/htu and the upstream application read
// the same method, host and path.
func ExampleFromParts() {
	o, err := request.FromParts("get", "HTTPS", "API.example.com.:443", "/orders/42?view=full")
	fmt.Println(o.Method, o.Scheme, o.Host, o.Path, o.RawQuery, err)

	// What two parsers could read differently is refused, not cleaned.
	for _, target := range []string{"/public#/../admin", "/public/../admin", "/admin;jsessionid=1/secret"} {
		_, err = request.FromParts("GET", "https", "api.example.com", target)
		fmt.Println(target, errors.Is(err, request.ErrAmbiguousPath))
	}
	// Output:
	// GET https api.example.com /orders/42 view=full <nil>
	// /public#/../admin true
	// /public/../admin true
	// /admin;jsessionid=1/secret true
}
