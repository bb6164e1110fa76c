package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/proxyconfig"
	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/request"
)

// proxyConfig prints the configuration of a proxy asking jwksverify, for
// the configuration file it is given (package proxyconfig).
func (a *app) proxyConfig(_ context.Context, args []string) int {
	fs := a.newFlagSet("proxy-config")
	path := fs.String("config", "", "configuration `file` (or JWKSVERIFY_CONFIG)")
	listen := fs.String("listen", proxyconfig.DefaultListen, "`address` the proxy listens on for clients")
	upstream := fs.String("upstream", proxyconfig.DefaultUpstream, "the application's `address`")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *path == "" {
		*path, _ = a.lookupEnv("JWKSVERIFY_CONFIG")
	}
	// A usage error says what is missing, as check's and serve's do, before
	// the usage.
	switch {
	case len(pos) != 1:
		fmt.Fprintf(a.stderr, "jwksverify proxy-config: name one proxy: %s\n\n%s", strings.Join(request.Proxies(), ", "), commandUsage["proxy-config"])
		return exitUsage
	case *path == "":
		fmt.Fprint(a.stderr, "jwksverify proxy-config: --config FILE (or JWKSVERIFY_CONFIG) is required\n\n", commandUsage["proxy-config"])
		return exitUsage
	}
	px, err := request.ParseProxy(pos[0])
	if err != nil || px == request.None {
		fmt.Fprintf(a.stderr, "jwksverify proxy-config: unknown proxy %q; supported: %s\n", pos[0], strings.Join(request.Proxies(), ", "))
		return exitUsage
	}
	plan, err := config.Load(*path, config.Overrides{NoServerSecrets: true}, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify proxy-config: %v\n", err)
		return exitUsage
	}
	in, err := proxyconfig.FromPlan(plan, px)
	if err != nil {
		if errors.Is(err, proxyconfig.ErrMismatch) {
			err = fmt.Errorf("%w: jwksverify would read headers %s does not set", err, px)
		}
		fmt.Fprintf(a.stderr, "jwksverify proxy-config: %s: %v\n", *path, err)
		return exitUsage
	}
	in.Listen, in.Upstream = *listen, *upstream
	if in.ConfigProxy == request.None {
		fmt.Fprintf(a.stderr, "jwksverify proxy-config: warning: %s does not set forward_auth.proxy; add forward_auth: {proxy: %s}\n", *path, px)
	}
	if err := proxyconfig.Write(a.stdout, in); err != nil {
		fmt.Fprintf(a.stderr, "jwksverify proxy-config: %v\n", err)
		return exitUsage
	}
	return exitOK
}
