// Package redact renders a URL for a log line, an error or a span without
// what may carry a credential: user info, the query and the fragment
// (`?api_key=…`, `https://user:pass@host/`). It is the one rule for every
// URL jwksverify shows: a JWKS or discovery URL, an introspection endpoint,
// a SET poll URL, and what `jwksverify check` prints.
package redact

import "net/url"

// URL renders u as its scheme, host and path.
func URL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// String renders the URL raw as [URL] does; a raw URL that does not parse
// is shown as "(unparsable URL)", never as its text.
func String(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return URL(u)
}
