package config_test

import (
	"errors"
	"fmt"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/jwks"
)

// A configuration document to a plan, and a refusal that names its key
// and keeps the library's error.
func ExampleParse() {
	noEnv := func(string) (string, bool) { return "", false }
	plan, err := config.Parse([]byte(`
issuers:
  - issuer: https://idp.example/
    jwks_url: https://idp.example/jwks
    audiences: [orders]
`), "", config.Overrides{}, noEnv)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.Listen, plan.Issuers[0].JWKS.URL, plan.Issuers[0].Verify.Audiences)

	_, err = config.Parse([]byte(`
issuers:
  - issuer: https://idp.example/
    jwks_url: https://idp.example/jwks
    refresh: {min_interval: 2h, max_interval: 1h}
`), "", config.Overrides{}, noEnv)
	fmt.Println(err)
	fmt.Println(errors.Is(err, jwks.ErrInvalidOptions))
	// Output:
	// 127.0.0.1:8080 https://idp.example/jwks [orders]
	// issuers[0].refresh.min_interval: 2h0m0s exceeds MaxInterval 1h0m0s
	// true
}
