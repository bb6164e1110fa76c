package jwks

// CheckURL reports whether raw may be used as a JWKS URL or, with
// Discovery, as the issuer whose discovery document is fetched: an absolute
// https URL with a host and without user info (credentials in a URL end up in
// logs and are sent to every redirect target); plain http only for loopback
// hosts (localhost in any case, 127.0.0.0/8, ::1) unless allowInsecureHTTP.
// The error wraps [ErrInsecureURL] and shows the URL without user info,
// query or fragment. [New] and [Fetch] apply the same rule to the configured
// URL, to a discovered jwks_uri and to every redirect.
func CheckURL(raw string, allowInsecureHTTP bool) error {
	_, err := parseURL(raw, allowInsecureHTTP)
	return err
}
