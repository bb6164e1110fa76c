// Command jwksverify verifies JWTs: it runs the verification service
// (serve), checks one token (verify), lists an issuer's keys (keys), prints
// a proxy's configuration (proxy-config) and prints its version (version).
//
// Exit status: 0 success (a valid token for verify, a sound configuration
// for check); 1 a rejected token, no usable key, or a runtime failure of
// serve; 2 a usage or configuration error; 3 could not decide (the keys
// could not be had: keys_unavailable).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/buildinfo"
	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/gctune"
)

// Exit statuses.
const (
	exitOK        = 0
	exitFailure   = 1 // rejected token, no usable key, runtime error of serve
	exitUsage     = 2 // usage or configuration error
	exitUndecided = 3 // could not decide: keys_unavailable
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	// After the first signal starts the drain, a second one ends the
	// process at once (the default action).
	context.AfterFunc(ctx, stop)
	gc := gctune.Start(0, os.LookupEnv) // nothing when GOGC is set
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	gc.Stop()
	stop()
	os.Exit(code)
}

// app carries what a command reads from its process: output streams and the
// environment. Only package main reads the environment.
type app struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	stdin          io.Reader
}

// run executes the command line args (without the program name) and returns
// the exit status. It returns when the command is done or, for serve, when
// ctx is cancelled and the service has shut down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv, stdin: os.Stdin}
	return a.run(ctx, args)
}

func (a *app) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return a.serve(ctx, rest)
	case "verify":
		return a.verify(ctx, rest)
	case "keys":
		return a.keys(ctx, rest)
	case "proxy-config":
		return a.proxyConfig(ctx, rest)
	case "check":
		return a.check(ctx, rest)
	case "revoke":
		return a.revoke(ctx, rest)
	case "version", "--version", "-version":
		return a.version(rest)
	case "help", "-h", "--help", "-help":
		return a.help(rest)
	}
	fmt.Fprintf(a.stderr, "jwksverify: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

const usage = `Usage: jwksverify <command> [flags]

Commands:
  serve     run the verification service (--config FILE, or --demo)
  verify    verify one token and print the result as JSON
  keys      fetch a JWKS and list its keys, with problems flagged
  proxy-config  print an nginx, Caddy, Traefik or Envoy configuration for a config
  check     validate a configuration file as serve would (--online: fetch the keys too)
  revoke    add, list or delete revocations through a running service's admin API
  version   print the version
  help      show help for a command: jwksverify help <command>

Exit status: 0 ok (valid token), 1 rejected token / no usable key / failure,
2 usage or configuration error, 3 could not decide (keys_unavailable: the
keys could not be fetched).
`

var commandUsage = map[string]string{
	"serve": `Usage: jwksverify serve --config FILE [--listen ADDR] [--grpc-listen ADDR] [--log-level LEVEL]
       jwksverify serve --demo [--listen ADDR] [--demo-issuer ADDR]

Runs the service until SIGINT or SIGTERM, then reports not ready
(shutdown_delay), drains in-flight requests (shutdown_timeout) and exits 0.
--demo runs an embedded demo issuer on
loopback and prints a ready-to-paste curl line with a fresh token. The
issuer is http://127.0.0.1:8081 (--demo-issuer moves it; it must be a
loopback address), the same on every start, so a configuration that names
it keeps working across restarts.

Environment: JWKSVERIFY_CONFIG, JWKSVERIFY_LISTEN, JWKSVERIFY_GRPC_LISTEN,
JWKSVERIFY_LOG_LEVEL (flags win over the environment, the environment over
the file), JWKSVERIFY_REDIS_URL (redis.url; its older name
JWKSVERIFY_DPOP_REDIS_URL, dpop.redis_url, still works),
JWKSVERIFY_ADMIN_URL and JWKSVERIFY_ADMIN_SECRET (jwksverify revoke),
JWKSVERIFY_STANDARD_CRYPTO=1 (crypto.standard_library on).
`,
	"verify": `Usage: jwksverify verify [--config FILE | --jwks URL|FILE | --discovery ISSUER |
                          --secret-file F | --pem F]
                         [--issuer I] [--audience A]... [--alg ALG]... [--leeway D]
                         [--now RFC3339|UNIX] [--explain]
                         [--dpop PROOF --htm METHOD --htu URL]
                         [--policy NAME] [--method M] [--host H] [--path P]
                         [--kind id_token [--nonce N] [--access-token T] [--code C]
                          [--max-age S] [--acr A]...] TOKEN|-

Verifies one token (- reads it from standard input; a pasted "Bearer "
prefix is removed, with a note). iss is checked when --issuer or --discovery
names the issuer (--issuer wins), aud only when --audience is given; exp is
required. --now judges the time claims at that instant. --explain prints every check before the result.
--dpop checks a DPoP proof presented with the token for the request --htm
--htu (RFC 9449), after the token; --explain shows each of its checks.
With --config, --policy NAME or the original request (--method, default GET;
--host; --path, default /) also decides the token by the file's policies, the
policy chosen as /v1/policy/NAME or /v1/authz choose it; --explain shows the
policy chosen and each of its requirements, and the result is the /v1/verify
answer with "allowed" and "policy".
--kind id_token verifies an OIDC ID token (client IDs from the file's
id_token.client_ids, or --audience), checking --nonce, --access-token
(at_hash), --code (c_hash), --max-age (auth_time) and --acr as /v1/verify
does.

Exit 0 and the result as JSON when valid (and allowed); exit 1 and
{"valid":false,"error":CLASS,"message":...} when not, or "error":"forbidden"
when a policy refuses a valid token; exit 3 with "error":"keys_unavailable"
when no keys could be had to decide (an outage: retry); exit 2 on usage
errors and on key sources no retry mends (a discovery document naming another
issuer, a 404). A rejection's hint (the accepted audiences, a configured
issuer the token's iss misses by a trailing '/') goes to standard error.
`,
	"keys": `Usage: jwksverify keys (--jwks URL|FILE | --discovery ISSUER) [--json]

Fetches and parses a key set and lists each key (kid, kty, alg, use, size,
RFC 7638 thumbprint) with problems flagged. Exit 1 when no key is usable,
3 when the keys could not be fetched (an outage), 2 when a file cannot be
read or is not a JWKS, or the source is wrong in a way no retry mends (a
discovery document naming another issuer, a 404).
`,
	"check": `Usage: jwksverify check --config FILE [--online] [--skip-secrets]

Validates a configuration as serve would, without serving: every key and
value serve refuses, the local files it needs (jwks_file read and its keys
checked, secret_file, ca_file, mint.keys_file, state_dir, the tls, grpc_tls
and admin_tls files), and with --online each remote issuer's
discovery document (its issuer must be the configured one exactly) and JWKS,
whose keys must be usable. --skip-secrets leaves out the introspection
clients' secrets (introspection.clients[].secret_env), for a pipeline that
does not hold them; the files above must still exist.

Exit 0 when serve would start with it, 2 (with one line per problem on
stderr) when not.
`,
	"proxy-config": `Usage: jwksverify proxy-config nginx|caddy|traefik|envoy --config FILE
                               [--listen ADDR] [--upstream ADDR]

Prints a proxy configuration that asks jwksverify (at the config's listen
address) about every request to the application at --upstream: each
claims_to_headers header cleared before the auth call and set from the
answer only, the original-request headers of the forward_auth.proxy preset
set over the client's, 401/403/503 passed on, timeouts longer than
jwksverify may take to answer. A config whose forward_auth.proxy names
another proxy is refused (exit 2); one without it gets a warning.
`,
	"revoke": `Usage: jwksverify revoke add --issuer ISSUER [--jti J | --sid S | --sub U | --client-id C]
                           [--issued-before RFC3339] [--admin URL] [--client ID] [TLS flags]
       jwksverify revoke list [--issuer ISSUER] [--admin URL] [--client ID] [TLS flags]
       jwksverify revoke delete ID [--admin URL] [--client ID] [TLS flags]
TLS flags, for an https --admin (admin_tls): [--ca-file CA.pem]
       [--cert-file CERT.pem --key-file KEY.pem] (a client certificate that
       admin_tls.client_ca_file verifies authenticates without a secret).

Calls the revocations admin API of a running service (admin_listen; --admin
or JWKSVERIFY_ADMIN_URL, e.g. http://127.0.0.1:9090). It authenticates as an
introspection client: --client ID with the secret in JWKSVERIFY_ADMIN_SECRET
(HTTP Basic), or the secret alone as a Bearer credential (never a flag);
without the secret or --cert-file it sends nothing (exit 2).
add without --jti, --sid, --sub or --client-id revokes every token of the
issuer issued before --issued-before (default now). The answer (the entry,
the list) is printed as JSON; an entry is acknowledged once the store holds
it.

Exit 0 when done, 1 when refused (400, 401, 404), 3 when the service or its
store could not answer (retry), 2 on usage errors.
`,
	"version": `Usage: jwksverify version

Prints the version (set at link time, else the module or VCS stamp, else the
release the source tree carries), the Go version and the VCS revision.
`,
}

func (a *app) help(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stdout, usage)
		return exitOK
	}
	u, ok := commandUsage[args[0]]
	if !ok {
		fmt.Fprintf(a.stderr, "jwksverify: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	fmt.Fprint(a.stdout, u)
	return exitOK
}

func (a *app) version(args []string) int {
	if len(args) != 0 {
		fmt.Fprint(a.stderr, commandUsage["version"])
		return exitUsage
	}
	bi := buildinfo.Read()
	fmt.Fprintf(a.stdout, "jwksverify %s %s (revision %s)\n", bi.Version, runtime.Version(), bi.Revision)
	return exitOK
}

// newFlagSet returns a flag set that reports its errors to stderr with the
// command's usage.
func (a *app) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("jwksverify "+name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprint(a.stderr, commandUsage[name])
		fmt.Fprintln(a.stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags and positional arguments in any order (flags may
// follow the token); "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		consumed := len(args) - fs.NArg()
		rest := fs.Args()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagExit maps a flag parse error to an exit status: -h is not an error.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// appendTo is a repeatable flag's function (flag.FlagSet.Func): each value
// is appended to *list.
func appendTo(list *[]string) func(string) error {
	return func(v string) error {
		*list = append(*list, v)
		return nil
	}
}

// newLogger builds the process logger: JSON or text on w, at level.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// plural is "1 key" or "n keys": n and the noun that fits it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
