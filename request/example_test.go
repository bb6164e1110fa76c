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
	o, err := request.FromParts("GET", "HTTPS", "api.example.com:443", "/orders/42?view=full")
	fmt.Println(o.Method, o.Scheme, o.Host, o.Port, o.Path, o.RawQuery, err)

	// What two parsers could read differently is refused, not cleaned.
	for _, target := range []string{"/public#/../admin", "/public/../admin", "/admin;jsessionid=1/secret"} {
		_, err = request.FromParts("GET", "https", "api.example.com", target)
		fmt.Println(target, errors.Is(err, request.ErrAmbiguousPath))
	}
	// Go's ServeMux reads "get" and "API.example.com." as sent, other
	// applications as GET and api.example.com.
	_, err = request.FromParts("get", "https", "api.example.com", "/")
	fmt.Println(errors.Is(err, request.ErrAmbiguousMethod))
	_, err = request.FromParts("GET", "https", "API.example.com.", "/")
	fmt.Println(errors.Is(err, request.ErrAmbiguousHost))
	// Output:
	// GET https api.example.com 443 /orders/42 view=full <nil>
	// /public#/../admin true
	// /public/../admin true
	// /admin;jsessionid=1/secret true
	// true
	// true
}
