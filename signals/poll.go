package signals

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/jwks"
)

// Poller defaults and bounds.
const (
	DefaultPollInterval  = 10 * time.Second
	DefaultPollMaxEvents = 100
	MinPollInterval      = time.Second
	MaxPollInterval      = time.Hour
	MaxPollMaxEvents     = 10_000
	// MaxPollBackoff bounds the wait after failed polls.
	MaxPollBackoff = 5 * time.Minute
	// DefaultPollTimeout bounds one poll request.
	DefaultPollTimeout = 30 * time.Second
	// pollBytesPerEvent is the response budget of one SET (a SET of the
	// largest token size, JSON-escaped, and its jti).
	pollBytesPerEvent = 64 << 10
	// maxPollHeaderBytes bounds a poll response's headers (net/http's
	// default is 10 MB).
	maxPollHeaderBytes = 64 << 10
)

// PollOptions configure a [Poller].
type PollOptions struct {
	// Issuer names the stream's issuer in logs.
	Issuer string
	// URL is the transmitter's RFC 8936 polling endpoint: https, or http
	// with InsecureAllowHTTP. Required.
	URL string
	// InsecureAllowHTTP accepts an http URL. It MUST NOT be used outside
	// tests and loopback set-ups: SETs and the bearer token travel in the
	// clear.
	InsecureAllowHTTP bool
	// BearerToken, if not empty, is sent as Authorization: Bearer. Empty
	// means no Authorization header.
	BearerToken string
	// Interval is the wait between polls that found nothing more. Zero
	// means [DefaultPollInterval]; [MinPollInterval, MaxPollInterval].
	Interval time.Duration
	// MaxEvents is maxEvents of each poll. Zero means
	// [DefaultPollMaxEvents]; at most [MaxPollMaxEvents].
	MaxEvents int
	// MaxResponseBytes bounds a poll's response body, enforced while it is
	// read. Zero means 64 KiB per event of MaxEvents.
	MaxResponseBytes int64
	// CAFile, if not empty, names PEM root certificates that the poller's
	// own client trusts instead of the system's (the issuer's ca_file: a
	// transmitter behind a private CA). Ignored when Client is set.
	CAFile string
	// Client makes the requests. Nil means a client of its own whose
	// requests time out after [DefaultPollTimeout], trusting CAFile, and
	// reading at most 64 KiB of response headers. Redirects are never
	// followed (the poller uses a copy of Client with its own
	// CheckRedirect).
	Client *http.Client
	// Receive applies one SET as if it had been pushed (a [Receiver]'s
	// Receive with the issuer and revoke.SourceSSFPoll): nil or
	// [ErrReplayed] acknowledges it, a refusal ([ErrInvalid]) reports it in
	// setErrs with its [Code], anything else leaves it for the next poll.
	// Required.
	Receive func(ctx context.Context, set string) error
	// Logger receives the poller's failures. Nil means slog.Default().
	Logger *slog.Logger
	// Metrics counts each poll by Issuer and result, and each SET the
	// poller refuses itself (listed under a name that is not its jti) as
	// an event "unknown" with result "invalid": the SETs it hands to
	// Receive are counted there. Nil means none.
	Metrics PollMetrics
}

// PollMetrics counts a [Poller]'s work. It must be safe for concurrent use.
type PollMetrics interface {
	Metrics
	// SignalPoll counts one poll of issuer's stream: result "success"
	// (the transmitter answered 200 with a readable body) or "failure"
	// (unreachable, another status, a body over the bound or malformed).
	// A poller that only fails receives no SET: the revocations its
	// transmitter holds wait there, and only this count shows it.
	SignalPoll(issuer, result string)
	// SignalPollStopped says that issuer's stream is no longer polled
	// (after its last Poller was closed): what its last poll did is no
	// longer news. Package signals does not call it; the Poller's owner
	// does, since another Poller of the same issuer may already run.
	SignalPollStopped(issuer string)
}

// PollStats are a Poller's counters.
type PollStats struct {
	// Polls counts the requests answered 200; Failures the others (and
	// responses that could not be read).
	Polls, Failures uint64
	// Acked, Refused and Deferred count SETs: acknowledged, reported in
	// setErrs, and left for a later poll (not stored).
	Acked, Refused, Deferred uint64
}

// Poller polls a transmitter for SETs (RFC 8936) until it is closed: every
// Interval, and at once while acknowledgements or errors are pending (a
// poll whose SETs could none be stored waits the Interval, whatever
// moreAvailable says: they come again; so does one that was handed back
// only the SETs it had just acknowledged or reported); after a failure it waits twice as long as
// the last time, up to [MaxPollBackoff]. Each request acknowledges the
// SETs the previous ones stored (ack) and reports those refused
// (setErrs), asks for at most MaxEvents and returnImmediately. It owns one
// goroutine, which [Poller.Close] stops and waits for.
type Poller struct {
	o      PollOptions
	client *http.Client
	owned  *jwks.Transport // the transport of a client of its own, nil with Options.Client
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	polls, failures, acked, refused, deferred atomic.Uint64
}

// CheckPollOptions reports whether [NewPoller] accepts o (Receive aside):
// an error wrapping [ErrInvalidOptions] that names the field if not.
func CheckPollOptions(o PollOptions) error {
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		return invalidOption("URL", "required")
	case err != nil || u.Host == "" || u.User != nil || u.Fragment != "":
		return invalidOption("URL", "not an absolute URL without user info or fragment")
	case u.Scheme != "https" && (u.Scheme != "http" || !o.InsecureAllowHTTP):
		return invalidOption("URL", "scheme %q: https is required", u.Scheme)
	case o.Interval != 0 && (o.Interval < MinPollInterval || o.Interval > MaxPollInterval):
		return invalidOption("Interval", "%s is out of range [%s, %s]", o.Interval, MinPollInterval, MaxPollInterval)
	case o.MaxEvents < 0 || o.MaxEvents > MaxPollMaxEvents:
		return invalidOption("MaxEvents", "%d is out of range [1, %d]", o.MaxEvents, MaxPollMaxEvents)
	case o.MaxResponseBytes < 0:
		return invalidOption("MaxResponseBytes", "negative")
	}
	return nil
}

// NewPoller checks o and starts polling.
func NewPoller(o PollOptions) (*Poller, error) {
	if err := CheckPollOptions(o); err != nil {
		return nil, err
	}
	if o.Receive == nil {
		return nil, invalidOption("Receive", "required")
	}
	o.Interval = cmp.Or(o.Interval, DefaultPollInterval)
	o.MaxEvents = cmp.Or(o.MaxEvents, DefaultPollMaxEvents)
	o.MaxResponseBytes = cmp.Or(o.MaxResponseBytes, int64(o.MaxEvents)*pollBytesPerEvent)
	p := &Poller{o: o, log: cmp.Or(o.Logger, slog.Default()), done: make(chan struct{})}
	if o.Client != nil {
		c := *o.Client // a copy: the redirect rule is the poller's, not the caller's client's
		p.client = &c
	} else {
		tr, err := jwks.NewTransport(o.CAFile, maxPollHeaderBytes)
		if err != nil {
			return nil, invalidOption("CAFile", "%w", err)
		}
		p.client, p.owned = &http.Client{Transport: tr, Timeout: DefaultPollTimeout}, tr
	}
	// A redirect is never followed: net/http would send the bearer token
	// and the acknowledgements again to any scheme, port or subdomain of
	// the host (an https endpoint redirecting to http:// sends them in the
	// clear). The polling endpoint is configured exactly; a redirect is a
	// failed poll.
	p.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.run(ctx)
	return p, nil
}

// Close stops polling and waits for the poll in flight to end (its
// context is cancelled: a SET being stored is not acknowledged, and will be
// delivered again). It is safe to call more than once.
func (p *Poller) Close() {
	p.once.Do(p.cancel)
	<-p.done
	if p.owned != nil {
		p.owned.CloseIdleConnections()
	}
}

// Stats returns the poller's counters. It is safe for concurrent use.
func (p *Poller) Stats() PollStats {
	return PollStats{Polls: p.polls.Load(), Failures: p.failures.Load(), Acked: p.acked.Load(),
		Refused: p.refused.Load(), Deferred: p.deferred.Load()}
}

// count counts one poll's result in the poller's Metrics.
func (p *Poller) count(result string) {
	if p.o.Metrics != nil {
		p.o.Metrics.SignalPoll(p.o.Issuer, result)
	}
}

// setErr is one entry of setErrs (RFC 8936 §2.4.2).
type setErr struct {
	Err         string `json:"err"`
	Description string `json:"description"`
}

// pollRequest is the body of a poll (RFC 8936 §2.4).
type pollRequest struct {
	Ack               []string          `json:"ack"`
	SetErrs           map[string]setErr `json:"setErrs,omitempty"`
	MaxEvents         int               `json:"maxEvents"`
	ReturnImmediately bool              `json:"returnImmediately"`
}

func (p *Poller) run(ctx context.Context) {
	defer close(p.done)
	ack, errs := []string{}, map[string]setErr{}
	backoff := time.Duration(0)
	for {
		// moreAvailable needs no rule of its own: an answer with SETs to
		// report is followed at once, and one without waits (below).
		progress, err := p.poll(ctx, &ack, errs)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.failures.Add(1)
			p.count("failure")
			backoff = min(max(2*backoff, p.o.Interval), max(MaxPollBackoff, p.o.Interval))
			wait = backoff
			p.log.Warn("SET poll failed", "issuer", p.o.Issuer, "retry_in", wait, "err", err)
		case progress && (len(ack) > 0 || len(errs) > 0):
			// This answer's SETs were stored or refused: report them at
			// once (and take what more the transmitter has).
			backoff = 0
		default:
			// Nothing to report: the answer was empty, or none of its SETs
			// could be stored (a revocation store down). Polling again at
			// once, moreAvailable or not, would be handed the same SETs
			// back while whatever deferred them still fails: a request,
			// a signature check and a store attempt per SET, back to back.
			// So for an answer that brought nothing new: only SETs the
			// poll had just acknowledged or reported, handed back (a
			// transmitter that drops neither): what it has to report goes
			// with the next poll, after the interval.
			backoff, wait = 0, p.o.Interval
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// poll makes one request that acknowledges *ack and reports errs, and
// applies the SETs of its answer. Once the transmitter answered 200, *ack
// and errs hold what the next poll must report: the SETs this answer
// brought. Whether the transmitter has more decides nothing: run follows
// an answer with something new to report at once, and waits after any
// other. progress is whether the answer brought something new: a SET
// stored, or one this request did not just acknowledge or report (a
// transmitter handing those back dropped neither, and would hand them
// back again at once).
func (p *Poller) poll(ctx context.Context, ack *[]string, errs map[string]setErr) (progress bool, err error) {
	body, err := json.Marshal(pollRequest{Ack: *ack, SetErrs: errs, MaxEvents: p.o.MaxEvents, ReturnImmediately: true})
	if err != nil {
		return false, err
	}
	reported := make(map[string]bool, len(*ack)+len(errs))
	for _, jti := range *ack {
		reported[jti] = true
	}
	for jti := range errs {
		reported[jti] = true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.o.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if p.o.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+p.o.BearerToken)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// *url.Error repeats the whole URL, its query too (which may carry
		// a credential): keep only its cause, after the URL redacted.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return false, fmt.Errorf("POST %s: %w", redact.String(p.o.URL), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.o.MaxResponseBytes+1))
	if err != nil {
		return false, fmt.Errorf("reading the response: %w", err)
	}
	if int64(len(data)) > p.o.MaxResponseBytes {
		return false, fmt.Errorf("the response is larger than %d bytes", p.o.MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		// The code only, as jwks and introspect: the reason phrase is the
		// transmitter's text, of any length, logged at every poll.
		return false, fmt.Errorf("the transmitter answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	sets, _, err := ParsePollResponse(data)
	if err != nil {
		return false, err
	}
	// The transmitter has the acknowledgements and errors it was sent.
	p.polls.Add(1)
	p.count("success")
	*ack = (*ack)[:0]
	clear(errs)
	jtis := make([]string, 0, len(sets))
	for jti := range sets {
		jtis = append(jtis, jti)
	}
	sort.Strings(jtis)
	for _, jti := range jtis {
		if ctx.Err() != nil {
			return progress, ctx.Err()
		}
		if got, ok := setJTI(sets[jti]); !ok || got != jti {
			// Acknowledged by its member name: a SET filed under another
			// jti would acknowledge one that nothing stored.
			errs[jti] = setErr{Err: "invalid_request", Description: "the SET's jti is not the name it is listed under"}
			p.refused.Add(1)
			if p.o.Metrics != nil {
				p.o.Metrics.SignalEvent(p.o.Issuer, "unknown", "invalid")
			}
			progress = progress || !reported[jti]
			continue
		}
		err := p.o.Receive(ctx, sets[jti])
		switch {
		case err == nil || errors.Is(err, ErrReplayed):
			*ack = append(*ack, jti)
			p.acked.Add(1)
			progress = progress || err == nil || !reported[jti]
		case errors.Is(err, ErrInvalid):
			errs[jti] = setErr{Err: Code(err), Description: err.Error()}
			p.refused.Add(1)
			progress = progress || !reported[jti]
		default:
			p.deferred.Add(1)
		}
	}
	return progress, nil
}

// setJTI returns the jti claim of the SET token, read without verifying
// it: Receive verifies these very bytes, and refuses the SET if they are
// not what the transmitter signed.
func setJTI(token string) (string, bool) {
	_, rest, ok1 := strings.Cut(token, ".")
	payload, _, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return "", false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return "", false
	}
	o, err := parseObject(b)
	if err != nil {
		return "", false
	}
	jti, ok, err := o.str("jti")
	return jti, ok && err == nil
}

// ParsePollResponse reads the body of a poll's answer (RFC 8936 §2.5): a
// JSON object whose sets member maps each jti to its SET (a string) and
// whose moreAvailable, when present, is a boolean. Duplicate member names
// at any depth are refused.
func ParsePollResponse(data []byte) (sets map[string]string, more bool, err error) {
	o, err := parseObject(data)
	if err == nil && jsonscan.LoneSurrogate(string(data)) {
		// Decoded to U+FFFD ("\ud800" and "\ufffd" one jti): a SET
		// would be acknowledged under a name the transmitter never sent.
		err = errors.New("a lone UTF-16 surrogate escape")
	}
	if err != nil {
		return nil, false, fmt.Errorf("poll response: %w", err)
	}
	raw, ok := o["sets"]
	if !ok {
		return nil, false, errors.New("poll response: sets is required")
	}
	if err := json.Unmarshal(raw, &sets); err != nil || sets == nil {
		return nil, false, errors.New("poll response: sets is not an object of strings")
	}
	if m, ok := o["moreAvailable"]; ok {
		if err := json.Unmarshal(m, &more); err != nil {
			return nil, false, errors.New("poll response: moreAvailable is not a boolean")
		}
	}
	return sets, more, nil
}
