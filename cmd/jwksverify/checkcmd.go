package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/service"
)

func (a *app) check(ctx context.Context, args []string) int {
	fs := a.newFlagSet("check")
	configPath := fs.String("config", "", "configuration `file` (also JWKSVERIFY_CONFIG)")
	online := fs.Bool("online", false, "also fetch each remote issuer's discovery document and JWKS, and check its keys")
	skipSecrets := fs.Bool("skip-secrets", false, "do not resolve the introspection clients' secrets (introspection.clients[].secret_env): for a pipeline that lacks them")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		fmt.Fprintf(a.stderr, "jwksverify check: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *configPath == "" {
		*configPath, _ = a.lookupEnv("JWKSVERIFY_CONFIG")
	}
	if *configPath == "" {
		fmt.Fprint(a.stderr, "jwksverify check: --config FILE (or JWKSVERIFY_CONFIG) is required\n\n", commandUsage["check"])
		return exitUsage
	}
	// The plan serve would build: the same loader, so that every key,
	// value and secret serve refuses is refused here.
	plan, err := config.Load(*configPath, config.Overrides{NoServerSecrets: *skipSecrets}, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify check: %v\n", err)
		return exitUsage
	}
	logger := newLogger(a.stderr, slog.LevelWarn, "text")
	problems := checkPlan(ctx, plan, *online, logger, func(format string, args ...any) {
		fmt.Fprintf(a.stdout, format+"\n", args...)
	})
	for _, p := range problems {
		fmt.Fprintf(a.stderr, "jwksverify check: %s: %v\n", *configPath, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(a.stdout, "%s: %s; serve would not work with it\n", *configPath, plural(len(problems), "problem", "problems"))
		return exitUsage
	}
	mode := "offline: remote issuers not fetched; --online fetches them"
	if *online {
		mode = "online: every issuer's keys fetched and usable"
	}
	fmt.Fprintf(a.stdout, "%s: OK (%s; %s)\n", *configPath, plural(len(plan.Issuers), "issuer", "issuers"), mode)
	return exitOK
}

// checkPlan returns what would keep plan from serving: what service.New
// would refuse (service.Check: every package's options, the local files
// it reads at start, state_dir), the local key files that are missing or
// unusable (jwks_file, secret_file), and, online, the remote issuers
// whose discovery document, JWKS or keys fail. report prints one line per
// issuer.
func checkPlan(ctx context.Context, plan *config.Plan, online bool, logger *slog.Logger, report func(string, ...any)) []error {
	var problems []error
	if err := service.Check(plan, service.Options{Logger: logger}); err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			problems = append(problems, j.Unwrap()...)
		} else {
			problems = append(problems, err)
		}
	}
	// The listeners' TLS files, loaded as serve loads them at start.
	for _, l := range []struct {
		key string
		tls config.TLS
	}{{"tls", plan.TLS}, {"grpc_tls", plan.GRPCTLS}, {"admin_tls", plan.AdminTLS}} {
		if _, err := newTLS(l.tls, nil, logger); err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", l.key, err))
		}
	}
	for i, is := range plan.Issuers {
		name := fmt.Sprintf("issuers[%d] (%s)", i, is.JWKS.Issuer)
		o := is.JWKS
		o.Logger, o.StateDir = logger, ""
		if _, err := jwks.TLSConfig(o.CAFile); jwks.CheckOptions(o) != nil || err != nil {
			continue // service.Check reported it
		}
		if what, err := checkKeys(ctx, is, o, online); err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", name, err))
		} else {
			report("%s: %s", name, what)
		}
	}
	return problems
}

// checkKeys reads an issuer's keys as serve would get them: a jwks_file
// always (a missing or unusable file is a configuration error), a remote
// source only online. Each key must fit an algorithm the issuer allows
// (listKeys' rules, as `jwksverify keys` shows them).
func checkKeys(ctx context.Context, is config.Issuer, o jwks.Options, online bool) (string, error) {
	src := "secret_file"
	switch {
	case o.File != "":
		src = "jwks_file " + o.File
	case o.Discovery:
		src = "discovery"
	case o.URL != "":
		src = "jwks_url " + redact.String(o.URL)
	}
	if !is.Local() && !online {
		return src + ": not fetched (offline)", nil
	}
	set, err := jwks.Fetch(ctx, o)
	if err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	rep := listKeys(src, set)
	if rep.Usable == 0 {
		return "", fmt.Errorf("%s: no usable signing key (%s, %d skipped; `jwksverify keys` lists them)", src, plural(len(rep.Keys), "key", "keys"), len(rep.Skipped))
	}
	return fmt.Sprintf("%s: %s, %d usable, %d skipped", src, plural(len(rep.Keys), "key", "keys"), rep.Usable, len(rep.Skipped)), nil
}
