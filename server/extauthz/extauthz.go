// Package extauthz is the Envoy ext_authz gRPC front end
// (envoy.service.auth.v3.Authorization/Check) and the gRPC health service
// (grpc.health.v1.Health) of a [server.Server]. It decides with the
// server's one decision call ([server.Server.Decide]), so that gRPC and
// HTTP forward-auth share token sources, classes, challenges, claim
// headers, metrics and logs. It is a package of its own so that a Go
// service using only server.Middleware links no gRPC or Envoy code.
package extauthz

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jwksverify/jwksverify/internal/asciifold"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// The three outcomes map onto what Envoy's ext_authz filter does with them:
//   - allow: status OK and an OkHttpResponse that sets the claim headers
//     (overwriting what the client sent) and removes the configured claim
//     headers the token has no value for, and Authorization when
//     StripAuthorization is set;
//   - deny: status UNAUTHENTICATED and a DeniedHttpResponse: HTTP 401, the
//     RFC 6750 WWW-Authenticate challenge and the JSON body of forward-auth;
//     for a valid token a policy refuses, PERMISSION_DENIED and HTTP 403
//     with the insufficient_scope challenge;
//   - could not decide (keys unavailable): the call fails with the gRPC
//     status UNAVAILABLE and no CheckResponse. Envoy counts a failed call as
//     an ext_authz error, not a denial: failure_mode_allow decides whether
//     the request passes, and status_on_error (deploy/envoy/envoy.yaml: 503)
//     what the client gets. A CheckResponse whose status is UNAVAILABLE would
//     instead be read as a denial by Envoy (403 unless overridden), turning a
//     fault into a verdict.

const (
	// healthWatchInterval is how often a grpc.health.v1 Watch re-checks
	// readiness.
	healthWatchInterval = time.Second
	// authorizationService is the ext_authz service's name, as health
	// checkers ask for it (authv3.Authorization_ServiceDesc.ServiceName).
	authorizationService = "envoy.service.auth.v3.Authorization"
	// maxHealthWatches bounds the health Watch streams open at once. A
	// Watch lives as long as its client keeps it (a goroutine, a ticker and
	// grpc-go's stream state, about 8 KiB, waking every second), and costs
	// the client a few bytes of HTTP/2: unbounded, one client held memory
	// without limit (1000 streams a connection, any number of connections).
	// Envoy and Kubernetes probe with Check; the watchers of one server are
	// gRPC clients doing client-side health checking, one per connection.
	maxHealthWatches = 1024
)

// Register registers on g, over s, the Envoy ext_authz service
// (envoy.service.auth.v3.Authorization) and the gRPC health service
// (grpc.health.v1.Health). It is New(s).Register(g): for a server that is
// never replaced.
func Register(g *grpc.Server, s *server.Server) { New(s).Register(g) }

// Service is the ext_authz and health services over the current
// [server.Server], which [Service.Swap] replaces (a configuration reload):
// a call decides with the server current when it starts and finishes with
// it. Health answers SERVING for the overall server ("") and for
// envoy.service.auth.v3.Authorization while the current server is Ready and
// not draining, NOT_SERVING otherwise; it checks readiness on every call, so
// it is always current and needs no goroutine. It is safe for concurrent
// use.
type Service struct {
	cur atomic.Pointer[authzGRPC]
}

// New returns the services over s.
func New(s *server.Server) *Service {
	v := &Service{}
	v.Swap(s)
	return v
}

// Swap makes s the server that calls from now on decide with. Calls in
// progress finish with the server they started with.
func (v *Service) Swap(s *server.Server) { v.cur.Store(newAuthzGRPC(s)) }

// Server returns the current server.
func (v *Service) Server() *server.Server { return v.cur.Load().s }

// Register registers both services on g. Call it before g.Serve. The
// caller owns g (its options — bound the message size with
// grpc.MaxRecvMsgSize — and its shutdown). An answer many calls share is
// sent as its encoding, made once; behind a unary interceptor on g, each
// call gets its own copy of the answer, which the interceptor may edit,
// and what it returns is sent. g.GracefulStop waits for open
// health Watch streams; [server.Server.SetDraining] on the current server
// ends them (after sending NOT_SERVING), so call it before g.GracefulStop.
func (v *Service) Register(g grpc.ServiceRegistrar) {
	g.RegisterService(&authorizationDesc, authzService{v})
	healthpb.RegisterHealthServer(g, &healthGRPC{s: v.Server, interval: healthWatchInterval})
}

// authorizationDesc is authv3's service description of
// envoy.service.auth.v3.Authorization with Check's handler replaced by
// checkHandler.
var authorizationDesc = func() grpc.ServiceDesc {
	d := authv3.Authorization_ServiceDesc
	d.Methods = append([]grpc.MethodDesc(nil), d.Methods...)
	for i := range d.Methods {
		if d.Methods[i].MethodName == "Check" {
			d.Methods[i].Handler = checkHandler
		}
	}
	return d
}()

// checkHandler is authv3's Check handler but for what it sends: an answer
// that many calls share (a cached token's OK answer, a denial) goes out as
// its encoding, made once when the answer was built ([onWire]), instead of
// being encoded again for every call (protobuf walks the answer twice,
// sizing and writing it: about as long as deciding a cached token). Behind
// an interceptor, the call gets a copy of a shared answer, the interceptor
// may edit it or return another, and what it returns is sent: an answer
// many calls share is never handed to code that may write to it.
func checkHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(authv3.CheckRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	v := srv.(authzService).v
	if interceptor == nil {
		resp, wire, err := v.cur.Load().check(ctx, in)
		if err == nil && wire != nil {
			return wire, nil
		}
		return resp, err
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: authv3.Authorization_Check_FullMethodName}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		resp, wire, err := v.cur.Load().check(ctx, req.(*authv3.CheckRequest))
		if err == nil && wire != nil {
			// An interceptor may edit the answer it is handed and return
			// it: a shared answer is every call's, so it gets its own copy,
			// which is what is sent (the shared encoding would drop its
			// edit: a deny it wrote into the answer went out as the OK).
			return proto.CloneOf(resp), nil
		}
		return resp, err
	})
}

// onWire returns a response holding resp's encoding as unknown fields:
// encoded, it is resp's bytes, with nothing to walk. Read, it has no
// fields: it only goes to the wire. Nil if resp cannot be encoded.
func onWire(resp *authv3.CheckResponse) *authv3.CheckResponse {
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil
	}
	w := &authv3.CheckResponse{}
	w.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	return w
}

// authzService dispatches each Check to the current server's authzGRPC.
type authzService struct{ v *Service }

// Check implements authv3.AuthorizationServer.
func (a authzService) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	return a.v.cur.Load().Check(ctx, req)
}

// authzGRPC implements authv3.AuthorizationServer. It is safe for
// concurrent use.
type authzGRPC struct {
	authv3.UnimplementedAuthorizationServer
	s *server.Server
	// meta keeps the claims Structs of recent tokens for dynamic_metadata,
	// and their last OK answers.
	meta metaCache
	// denied keeps the denied answers, by what they are built from.
	deniedMu sync.RWMutex
	denied   map[deniedKey]deniedAnswer
}

func newAuthzGRPC(s *server.Server) *authzGRPC { return &authzGRPC{s: s} }

// Check decides one request that Envoy's ext_authz filter forwards: the
// headers of attributes.request.http (read through envoyHeaders: a client
// cannot add a header Envoy did not forward), the original request it
// describes (whatever the forward_auth.proxy preset says), the policy that
// context_extensions name (honoured, an unknown one denied, even when no
// policies are configured) or else the routes', and the client
// certificate Envoy saw (attributes.source.certificate, URL-escaped PEM,
// with include_peer_certificate), else the configured header. A request
// without HTTP attributes carries no token: it is denied, not failed. It
// blocks only as long as the verifier does.
func (a *authzGRPC) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	resp, _, err := a.check(ctx, req)
	return resp, err
}

// check is Check, with the answer's encoding ([onWire]) when the answer is
// one many calls share, else nil.
func (a *authzGRPC) check(ctx context.Context, req *authv3.CheckRequest) (resp, wire *authv3.CheckResponse, err error) {
	attrs := req.GetAttributes()
	hr := attrs.GetRequest().GetHttp()
	// The span continues Envoy's trace of this call (gRPC metadata), or
	// else the client's, from the forwarded request's headers.
	if a.s.Tracing() {
		var carrier propagation.TextMapCarrier = mdCarrier(metadataOf(ctx))
		if carrier.Get("traceparent") == "" {
			carrier = &envoyHeaders{hr: hr}
		}
		var span trace.Span
		ctx, span = a.s.StartSpan(ctx, carrier, authv3.Authorization_Check_FullMethodName)
		defer span.End()
	}
	c := server.Call{Endpoint: server.EndpointGRPC, Mint: true}
	if hr != nil {
		c.Headers, c.ClientCert = &envoyHeaders{hr: hr}, attrs.GetSource().GetCertificate()
		c.Original, c.OriginalErr = original(hr)
		c.Policy, c.Routed = attrs.GetContextExtensions()["policy"], true
		if len(hr.GetHeaders()) > 0 && hr.GetHeaderMap() != nil {
			// Envoy sends one form or the other (encode_raw_headers);
			// one that holds both could be read two ways: refused rather
			// than decided on one of them. A header_map present but
			// empty counts: it is the form read (envoyHeaders, original),
			// so the headers map beside it would go unread.
			c.ReadErr = errBothHeaderForms
		} else if !lowerCaseNames(hr.GetHeaders()) {
			c.ReadErr = errHeaderNameCase
		}
	}
	d := a.s.Decide(ctx, &c)
	return a.answer(d)
}

// respond turns a decision into Check's answer: OK, DENIED (401 or 403),
// or the gRPC status UNAVAILABLE when keys are unavailable.
func (a *authzGRPC) respond(d server.Decision) (*authv3.CheckResponse, error) {
	resp, _, err := a.answer(d)
	return resp, err
}

// answer is respond, with the answer's encoding when it is shared.
func (a *authzGRPC) answer(d server.Decision) (resp, wire *authv3.CheckResponse, err error) {
	switch {
	case d.Allowed():
		resp, wire = a.allow(d)
		return resp, wire, nil
	case d.Status == http.StatusServiceUnavailable:
		return nil, nil, status.Error(codes.Unavailable, d.Class)
	default:
		resp, wire = a.deny(d)
		return resp, wire, nil
	}
}

// original is the request Envoy asks about, from attributes.request.http:
// method, scheme, host (with its port) and path, the query from the path or
// Envoy's query field, and the method overrides in the query and headers.
func original(hr *authv3.AttributeContext_HttpRequest) (request.Original, error) {
	target := hr.GetPath()
	if q := hr.GetQuery(); q != "" && !strings.Contains(target, "?") {
		target += "?" + q
	}
	o, err := request.FromParts(hr.GetMethod(), hr.GetScheme(), hr.GetHost(), target)
	if err != nil {
		return o, err
	}
	if err := forwardedAsDecided(hr); err != nil {
		return request.Original{}, err
	}
	o.RawQuery = originalQuery(hr)
	// Both forms Envoy sends: with encode_raw_headers the headers map is
	// empty and header_map holds every header (a repeated one repeated).
	return o.WithHeaderOverrides(func(yield func(string, string) bool) {
		if hm := hr.GetHeaderMap(); hm != nil {
			for _, e := range hm.GetHeaders() {
				if request.IsOverrideHeader(e.GetKey()) && !yield(e.GetKey(), headerValue(e)) {
					return
				}
			}
			return
		}
		for name, v := range hr.GetHeaders() {
			if !yield(name, v) {
				return
			}
		}
	})
}

// errBothHeaderForms refuses a CheckRequest that carries both the headers
// map and header_map.
var errBothHeaderForms = fmt.Errorf("%w: the CheckRequest carries both headers and header_map", verify.ErrMalformed)

// errHeaderNameCase refuses a CheckRequest whose headers map has a name
// that is not lower case. Envoy lower-cases every name it sends there; the
// map is read by lower-case name, so an "Authorization" (a forged
// credential), an "X-HTTP-Method-Override" or a ":PATH" sent by another
// caller went unread while the upstream it forwards to reads it.
var errHeaderNameCase = fmt.Errorf("%w: a header name in the CheckRequest's headers map is not lower case", verify.ErrMalformed)

// lowerCaseNames reports whether no name in m has an upper-case ASCII
// letter (the headers map's names are looked up lower-cased).
func lowerCaseNames(m map[string]string) bool {
	for k := range m {
		for i := 0; i < len(k); i++ {
			if 'A' <= k[i] && k[i] <= 'Z' {
				return false
			}
		}
	}
	return true
}

// forwarded are the headers Envoy forwards beside the attributes it read
// from them, and "host", which an HTTP/2 client may send beside :authority
// (kept by an Envoy before 1.28, or with
// envoy.reloadable_features.http2_discard_host_header off).
var forwarded = [...]struct {
	key string
	err error
}{
	{":authority", request.ErrAmbiguousHost},
	{"host", request.ErrAmbiguousHost},
	{":path", request.ErrAmbiguousPath},
	{":method", request.ErrAmbiguousMethod},
}

// forwardedAsDecided reports an error when one of the [forwarded] headers
// does not spell, byte for byte, the attribute the request is decided on
// (host, path, method): the upstream could read another request than the
// one authorized. Envoy builds both from the same header map, so they
// agree; an absent header (not in allowed_headers) is not compared.
func forwardedAsDecided(hr *authv3.AttributeContext_HttpRequest) error {
	want := [len(forwarded)]string{hr.GetHost(), hr.GetHost(), hr.GetPath(), hr.GetMethod()}
	check := func(i int, v string) error {
		if v != want[i] {
			return fmt.Errorf("%w: header %s is not the request's %s", forwarded[i].err, forwarded[i].key, strings.TrimPrefix(forwarded[i].key, ":"))
		}
		return nil
	}
	if hm := hr.GetHeaderMap(); hm != nil {
		for _, e := range hm.GetHeaders() {
			k := e.GetKey()
			if len(k) == 0 || (k[0] != ':' && len(k) != len("host")) {
				continue // most headers: one comparison
			}
			for i := range forwarded {
				if asciifold.EqualFold(k, forwarded[i].key) {
					if err := check(i, headerValue(e)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	m := hr.GetHeaders()
	if len(m) == 0 {
		return nil
	}
	for i := range forwarded {
		if v, ok := m[forwarded[i].key]; ok {
			if err := check(i, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// headerValue is the value of a header_map entry: its raw_value when set
// (encode_raw_headers), else its value.
func headerValue(e *corev3.HeaderValue) string {
	if raw := e.GetRawValue(); len(raw) > 0 {
		return string(raw)
	}
	return e.GetValue()
}

// originalQuery is the query of the original request target: after the '?'
// of :path (fragment cut), else attributes.request.http.query.
func originalQuery(hr *authv3.AttributeContext_HttpRequest) string {
	if _, q, ok := strings.Cut(hr.GetPath(), "?"); ok {
		q, _, _ = strings.Cut(q, "#")
		return q
	}
	return hr.GetQuery()
}

// allow returns the OK response: each configured claim header set to the
// token's value (overwriting one the client sent), or removed when the
// token has none; the minted token in its header (replacing the caller's
// Authorization) when the policy mints; Authorization removed when
// StripAuthorization is set and nothing was minted into it. For a Result
// the metadata cache keeps (a token-cache hit), the answer built for it
// last is returned again when d asks for the same one: the same policy,
// claim headers, minted header and Authorization removal (gRPC only reads
// an answer it sends, so one may go to many calls).
func (a *authzGRPC) allow(d server.Decision) (resp, wire *authv3.CheckResponse) {
	if d.Result == nil {
		return buildAllow(d, nil), nil
	}
	e, raw := a.meta.entry(d.Result)
	if e == nil {
		return buildAllow(d, raw), nil
	}
	if ans := e.ok.Load(); ans != nil && ans.answers(&d) {
		return ans.resp, ans.wire
	}
	resp = buildAllow(d, raw)
	// The copy kept is shared from the next call on; this call's answer
	// stays its own (an interceptor may edit it: checkHandler).
	e.ok.Store(newOKAnswer(&d, proto.CloneOf(resp)))
	return resp, nil
}

// okAnswer is an OK answer and what it was built from.
type okAnswer struct {
	policy     string
	removeAuth bool
	headers    []string // name, value, name, value…: d.ClaimHeaders()
	minted     [2]string
	hasMinted  bool
	unminted   string
	resp       *authv3.CheckResponse
	wire       *authv3.CheckResponse // resp's encoding (onWire)
}

func newOKAnswer(d *server.Decision, resp *authv3.CheckResponse) *okAnswer {
	ans := &okAnswer{policy: d.Policy, removeAuth: d.RemoveAuthorization, resp: resp, wire: onWire(resp)}
	name, value, minted := d.MintedHeader()
	ans.minted, ans.hasMinted = [2]string{name, value}, minted
	ans.unminted, _ = d.UnmintedHeader()
	for name, value := range d.ClaimHeaders() {
		ans.headers = append(ans.headers, name, value)
	}
	return ans
}

// answers reports whether ans is the OK answer of d (whose Result it was
// built with).
func (ans *okAnswer) answers(d *server.Decision) bool {
	if ans.policy != d.Policy || ans.removeAuth != d.RemoveAuthorization {
		return false
	}
	if name, value, minted := d.MintedHeader(); minted != ans.hasMinted || [2]string{name, value} != ans.minted {
		return false
	}
	if name, _ := d.UnmintedHeader(); name != ans.unminted {
		return false
	}
	i := 0
	for name, value := range d.ClaimHeaders() {
		if i+1 >= len(ans.headers) || ans.headers[i] != name || ans.headers[i+1] != value {
			return false
		}
		i += 2
	}
	return i == len(ans.headers)
}

// buildAllow builds the OK response of d, with raw the encoding of its
// Result's metadata (metaCache.fields).
func buildAllow(d server.Decision, raw []byte) *authv3.CheckResponse {
	ok := &authv3.OkHttpResponse{}
	for name, value := range d.ClaimHeaders() {
		name = asciifold.ToLower(name)
		if value == "" {
			ok.HeadersToRemove = append(ok.HeadersToRemove, name)
			continue
		}
		ok.Headers = append(ok.Headers, &corev3.HeaderValueOption{
			Header: &corev3.HeaderValue{Key: name, Value: value},
			// Explicit: Envoys that read append_action default to appending,
			// which would keep a client's forged value next to ours.
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	if name, value, minted := d.MintedHeader(); minted {
		// The minted token replaces the caller's credential in its header.
		ok.Headers = append(ok.Headers, header(asciifold.ToLower(name), value))
	}
	if name, unminted := d.UnmintedHeader(); unminted {
		// Nothing minted: a client's own copy must not pass as ours.
		ok.HeadersToRemove = append(ok.HeadersToRemove, asciifold.ToLower(name))
	}
	if d.RemoveAuthorization {
		ok.HeadersToRemove = append(ok.HeadersToRemove, "authorization")
	}
	// A client's copy of an identity or mint header under a CGI twin
	// (x_auth_subject) is that header to a CGI, FastCGI or WSGI upstream.
	ok.HeadersToRemove = append(ok.HeadersToRemove, d.TwinsToRemove()...)
	return &authv3.CheckResponse{
		Status:          &rpcstatus.Status{Code: int32(codes.OK)},
		HttpResponse:    &authv3.CheckResponse_OkResponse{OkResponse: ok},
		DynamicMetadata: metadataStruct(d, raw),
	}
}

// MetadataNamespace is the dynamic_metadata namespace of an OK answer:
// {"jwksverify": {"issuer", "policy", "claims"}}, for Envoy's RBAC and
// routing (metadata matchers on filter "envoy.filters.http.ext_authz").
const MetadataNamespace = "jwksverify"

// deny returns the DENIED response of d, built once per status, class,
// challenge and body (there are a few dozen: the classes, and a 403's
// challenge per policy) and then shared, as forward-auth shares its
// answers' header values. Past maxDeniedAnswers distinct answers, the
// others are built for each call.
func (a *authzGRPC) deny(d server.Decision) (resp, wire *authv3.CheckResponse) {
	k := deniedKey{d.Status, d.Class, d.Challenge}
	a.deniedMu.RLock()
	ans, ok := a.denied[k]
	a.deniedMu.RUnlock()
	if ok && bytes.Equal(ans.body, d.Body) {
		return ans.resp, ans.wire
	}
	resp = buildDeny(d)
	a.deniedMu.Lock()
	defer a.deniedMu.Unlock()
	if a.denied == nil {
		a.denied = make(map[deniedKey]deniedAnswer)
	}
	if _, ok := a.denied[k]; !ok && len(a.denied) < maxDeniedAnswers {
		// A copy: this call's answer stays its own (see allow).
		kept := proto.CloneOf(resp)
		a.denied[k] = deniedAnswer{body: bytes.Clone(d.Body), resp: kept, wire: onWire(kept)}
	}
	return resp, nil
}

// maxDeniedAnswers bounds the denied answers an authzGRPC keeps.
const maxDeniedAnswers = 256

type deniedKey struct {
	status           int
	class, challenge string
}

type deniedAnswer struct {
	body []byte
	resp *authv3.CheckResponse
	wire *authv3.CheckResponse // resp's encoding (onWire)
}

// buildDeny builds the DENIED response: HTTP 401 (the rpc status
// UNAUTHENTICATED) or, for a valid token a policy refused, 403 (the rpc
// status PERMISSION_DENIED), with the forward-auth challenge and JSON body,
// the rpc status carrying the class word.
func buildDeny(d server.Decision) *authv3.CheckResponse {
	headers := []*corev3.HeaderValueOption{
		header("content-type", "application/json"),
		header("cache-control", "no-store"),
	}
	if d.Challenge != "" {
		headers = append(headers, header("www-authenticate", d.Challenge))
	}
	code, httpCode := codes.Unauthenticated, typev3.StatusCode_Unauthorized
	if d.Status == http.StatusForbidden {
		code, httpCode = codes.PermissionDenied, typev3.StatusCode_Forbidden
	}
	return &authv3.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(code), Message: d.Class},
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status:  &typev3.HttpStatus{Code: httpCode},
			Headers: headers,
			Body:    string(d.Body),
		}},
	}
}

func header(key, value string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: key, Value: value},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// healthGRPC implements grpc.health.v1.Health over [Server.Ready]. It is
// safe for concurrent use and holds no goroutine of its own.
type healthGRPC struct {
	healthpb.UnimplementedHealthServer
	s func() *server.Server // the current server
	// interval is how often Watch re-checks readiness.
	interval time.Duration
	// watches counts the open Watch streams (at most maxHealthWatches).
	watches atomic.Int64
}

// servingStatus returns the status of service, and false when the service
// is unknown.
func (h *healthGRPC) servingStatus(service string) (healthpb.HealthCheckResponse_ServingStatus, bool) {
	if service != "" && service != authorizationService {
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
	}
	s := h.s()
	if s.Draining() {
		return healthpb.HealthCheckResponse_NOT_SERVING, true
	}
	if ready, _ := s.Ready(); ready {
		return healthpb.HealthCheckResponse_SERVING, true
	}
	return healthpb.HealthCheckResponse_NOT_SERVING, true
}

// Check answers SERVING while every issuer has usable keys and the server is
// not draining, NOT_SERVING otherwise, and NOT_FOUND for a service other than
// "" and the ext_authz service. It does not block.
func (h *healthGRPC) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, known := h.servingStatus(req.GetService())
	if !known {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// List reports the status of "" and of the ext_authz service.
func (h *healthGRPC) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	st, _ := h.servingStatus("")
	return &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{
		"":                   {Status: st},
		authorizationService: {Status: st},
	}}, nil
}

// Watch sends the current status at once, then each change, re-checking
// every interval until the client goes away, the server stops, or the server
// drains: then it sends NOT_SERVING (unless already sent) and ends the call
// with UNAVAILABLE, so that grpc.Server.GracefulStop need not wait for it and
// the client looks for another server. An unknown service is reported as
// SERVICE_UNKNOWN (the call is kept open, as the protocol asks, until the
// server drains). Past maxHealthWatches open streams, a Watch ends at once
// with RESOURCE_EXHAUSTED.
func (h *healthGRPC) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	defer h.watches.Add(-1)
	if h.watches.Add(1) > maxHealthWatches {
		return status.Error(codes.ResourceExhausted, "too many health watches")
	}
	t := time.NewTicker(h.interval)
	defer t.Stop()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	send := func(st healthpb.HealthCheckResponse_ServingStatus) error {
		if st == last {
			return nil
		}
		last = st
		return stream.Send(&healthpb.HealthCheckResponse{Status: st})
	}
	for {
		st, _ := h.servingStatus(req.GetService())
		if err := send(st); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		case <-h.s().Drained(): // a server swapped in meanwhile is read at the next tick
			if st != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
				if err := send(healthpb.HealthCheckResponse_NOT_SERVING); err != nil {
					return err
				}
			}
			return status.Error(codes.Unavailable, "server is draining")
		case <-t.C:
		}
	}
}

func metadataOf(ctx context.Context) metadata.MD {
	md, _ := metadata.FromIncomingContext(ctx)
	return md
}

// mdCarrier reads a trace context from gRPC metadata (keys in lower case).
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }
func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// envoyHeaders reads the forwarded request's headers: as server.Headers
// (every value of a key), and as a read-only trace-context carrier. Envoy
// sends header keys in lower case; with encode_raw_headers, as header_map,
// where a repeated header stays repeated. One is made per Check: it
// remembers the values of the first few keys asked for, so that a key read
// again (Authorization by the scheme check and by the token source) costs
// neither a second scan of header_map nor an allocation.
type envoyHeaders struct {
	hr   *authv3.AttributeContext_HttpRequest
	memo [4]headerValues
	n    int
}

// headerValues are the values of one key, backed by one when single.
type headerValues struct {
	key  string
	vals []string
	one  [1]string
}

// Values returns the values of the header key (any case). The slice is
// shared by later calls with key: read it, never modify it.
func (h *envoyHeaders) Values(key string) []string {
	for i := range h.memo[:h.n] {
		if h.memo[i].key == key {
			return h.memo[i].vals
		}
	}
	slot := &headerValues{}
	if h.n < len(h.memo) {
		slot = &h.memo[h.n]
		h.n++
	}
	slot.key, slot.vals = key, h.lookup(key, &slot.one)
	return slot.vals
}

// lookup reads the values of key from the request; a single value is put
// in one.
func (h *envoyHeaders) lookup(key string, one *[1]string) []string {
	if hm := h.hr.GetHeaderMap(); hm != nil {
		var out []string
		for _, e := range hm.GetHeaders() {
			if asciifold.EqualFold(e.GetKey(), key) {
				if out == nil {
					one[0] = headerValue(e)
					out = one[:]
					continue
				}
				// one has room for one value: the second moves out to
				// a slice that then grows by doubling (cutting its
				// capacity made every value copy all before it).
				out = append(out, headerValue(e))
			}
		}
		return out
	}
	m := h.hr.GetHeaders()
	if len(m) == 0 {
		return nil
	}
	var buf [64]byte
	var v string
	var ok bool
	if len(key) <= len(buf) {
		// The lower-case key in a stack buffer: a map index by
		// string(bytes) does not allocate.
		for i := 0; i < len(key); i++ {
			c := key[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		v, ok = m[string(buf[:len(key)])]
	} else {
		v, ok = m[asciifold.ToLower(key)]
	}
	if !ok {
		return nil
	}
	one[0] = v
	return one[:]
}

// Get returns the first value of key, or "".
func (h *envoyHeaders) Get(key string) string {
	if v := h.Values(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (*envoyHeaders) Set(string, string) {}
func (*envoyHeaders) Keys() []string     { return nil }
