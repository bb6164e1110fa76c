package config

import (
	"bytes"
	"fmt"
	"net/url"

	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/signals"
)

// fileBackchannelLogout is an issuer's backchannel_logout section.
type fileBackchannelLogout struct {
	Audiences []string `yaml:"audiences"`
	Revoke    string   `yaml:"revoke"`
}

// fileSSF is an issuer's ssf section (Shared Signals).
type fileSSF struct {
	Audiences []string     `yaml:"audiences"`
	Push      *fileSSFPush `yaml:"push"`
	Poll      *fileSSFPoll `yaml:"poll"`
}

type fileSSFPush struct {
	BearerTokenFile string `yaml:"bearer_token_file"`
}

type fileSSFPoll struct {
	URL             string    `yaml:"url"`
	BearerTokenFile string    `yaml:"bearer_token_file"`
	Interval        *span     `yaml:"interval"`
	MaxEvents       *positive `yaml:"max_events"`
}

// Signals is the plan of the revocation signals: the issuers that send
// back-channel logout tokens or SETs, and the transmitters to poll.
type Signals struct {
	// Issuers configure the signals.Receiver; it holds the push bearer
	// tokens (secrets).
	Issuers []signals.Issuer
	// Polls configure one signals.Poller each. Receive, Logger and Client
	// are nil: a command sets them. BearerToken is a secret.
	Polls []signals.PollOptions
}

// MaxBearerTokenBytes bounds a bearer_token_file.
const MaxBearerTokenBytes = 4096

// planSignals plans each issuer's backchannel_logout and ssf sections
// (nil Plan.Signals when no issuer has one), reading the bearer token
// files.
func (f *file) planSignals(p *Plan) error {
	var plan Signals
	for i, fi := range f.Issuers {
		path := fmt.Sprintf("issuers[%d]", i)
		is := signals.Issuer{Issuer: fi.Issuer}
		if fi.BackchannelLogout != nil || fi.SSF != nil {
			// A signal names one configured issuer exactly
			// (verify.VerifySigned): a template's or a trust domain's
			// tokens are all refused (wrong_issuer), and a polled SET is
			// reported to its transmitter as invalid, which drops it.
			section := path + ".backchannel_logout"
			if fi.BackchannelLogout == nil {
				section = path + ".ssf"
			}
			switch {
			case p.Issuers[i].Verify.TakesSignals(): // planIssuers planned f.Issuers in order
			case fi.SPIFFE != nil:
				return fmt.Errorf("%s: a SPIFFE trust domain takes no signals (a logout token or SET must name one issuer exactly)", section)
			default:
				return fmt.Errorf("%s: the issuer %q is a {tenantid} template, which takes no signals (a logout token or SET must name one issuer exactly); configure the tenant's issuer itself", section, fi.Issuer)
			}
		}
		if bl := fi.BackchannelLogout; bl != nil {
			mode, err := signals.ParseRevokeMode(bl.Revoke)
			if err != nil {
				return fmt.Errorf("%s.backchannel_logout.revoke: %w", path, err)
			}
			is.Logout = &signals.Logout{Audiences: bl.Audiences, Revoke: mode}
		}
		if s := fi.SSF; s != nil {
			is.SSF = &signals.SSF{Audiences: s.Audiences}
			if s.Push != nil {
				b, err := bearerToken(p, path+".ssf.push.bearer_token_file", s.Push.BearerTokenFile, true)
				if err != nil {
					return err
				}
				is.SSF.PushBearer = b
			}
			if s.Poll != nil && s.Poll.URL != "" {
				po, err := fi.planPoll(p, path+".ssf.poll", s.Poll)
				if err != nil {
					return err
				}
				plan.Polls = append(plan.Polls, po)
			} else if s.Poll != nil && (s.Poll.BearerTokenFile != "" || s.Poll.Interval != nil || s.Poll.MaxEvents != nil) {
				return fmt.Errorf("%s.ssf.poll.url: empty, and other poll keys are set; set url, or remove poll", path)
			}
		}
		if is.Logout != nil || is.SSF != nil {
			plan.Issuers = append(plan.Issuers, is)
		}
	}
	if len(plan.Issuers) == 0 {
		return nil
	}
	if err := signals.CheckIssuers(plan.Issuers); err != nil {
		keys := map[string]string{}
		for i, fi := range f.Issuers {
			for j, is := range plan.Issuers {
				if is.Issuer == fi.Issuer {
					from, to := fmt.Sprintf("Issuers[%d].", j), fmt.Sprintf("issuers[%d].", i)
					keys[from+"Issuer"] = to + "issuer"
					keys[from+"Logout.Audiences"] = to + "backchannel_logout.audiences"
					keys[from+"Logout.Revoke"] = to + "backchannel_logout.revoke"
					keys[from+"SSF.Audiences"] = to + "ssf.audiences"
					keys[from+"SSF.PushBearer"] = to + "ssf.push.bearer_token_file"
				}
			}
		}
		return optionError("issuers", err, keys)
	}
	if p.Revocation == nil {
		return fmt.Errorf("%s: backchannel_logout and ssf store what they revoke: configure the revocation section (revocation: {store: memory} with state_dir, or store: redis)", firstSignalIssuer(f))
	}
	p.Signals = &plan
	return nil
}

// planPoll plans an issuer's ssf.poll (at path) with a url, for p.
func (fi *fileIssuer) planPoll(p *Plan, path string, in *fileSSFPoll) (signals.PollOptions, error) {
	if err := jwks.CheckURL(in.URL, fi.AllowInsecureHTTP); err != nil {
		return signals.PollOptions{}, fmt.Errorf("%s.url: %w", path, err)
	}
	u, _ := url.Parse(in.URL)
	o := signals.PollOptions{
		Issuer: fi.Issuer, URL: in.URL, InsecureAllowHTTP: u.Scheme == "http", // jwks.CheckURL allowed it
		CAFile:   fi.CAFile, // the issuer's transmitter is trusted as its other endpoints are
		Interval: orDuration(in.Interval, 0), MaxEvents: int(deref(in.MaxEvents)),
	}
	if in.BearerTokenFile != "" {
		b, err := bearerToken(p, path+".bearer_token_file", in.BearerTokenFile, false)
		if err != nil {
			return o, err
		}
		o.BearerToken = b
	}
	if err := signals.CheckPollOptions(o); err != nil {
		return o, optionError(path, err, map[string]string{"URL": path + ".url", "Interval": path + ".interval", "MaxEvents": path + ".max_events"})
	}
	return o, nil
}

// bearerToken reads a bearer token file at path (field names it): its
// contents without surrounding white space (a trailing newline is not part
// of it), at most MaxBearerTokenBytes, non-empty (required: the key must be
// set). It records the file in p (Plan.Secrets): the token is read once.
func bearerToken(p *Plan, field, path string, required bool) (string, error) {
	if path == "" {
		if required {
			return "", fmt.Errorf("%s: required", field)
		}
		return "", nil
	}
	raw, err := readRegular(path, MaxBearerTokenBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	p.readOnce(path, raw)
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "", fmt.Errorf("%s: %s is empty", field, path)
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("%s: %s holds a byte a bearer token cannot (RFC 6750 §2.1: visible ASCII)", field, path)
		}
	}
	return string(b), nil
}

// firstSignalIssuer is the path of the first issuer with
// backchannel_logout or ssf.
func firstSignalIssuer(f *file) string {
	for i, fi := range f.Issuers {
		if fi.BackchannelLogout != nil || fi.SSF != nil {
			return fmt.Sprintf("issuers[%d]", i)
		}
	}
	return "issuers"
}
